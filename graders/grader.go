// Package graders scores a finished workspace against a task's hidden
// tests and goldens, and composes the verdict.
package graders

import (
	"context"
	"time"

	"benchd.dev/fsmon/journal"
	"benchd.dev/tasks"
)

// Reason is one reason in a verdict: a stable code and a human sentence.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Verdict is a grader's result.
type Verdict struct {
	Reward  int      `json:"reward"` // 0 or 1
	Pass    bool     `json:"pass"`
	Reasons []Reason `json:"reasons"` // never nil in JSON
}

// Input is what a grader is given.
type Input struct {
	Task *tasks.Task
	// Workspace is the finished workspace directory. Graders never
	// change it; they copy what they run into a scratch directory.
	Workspace string
	// Changeset is the attempt's changeset from its journal. Nil means
	// unknown: the grader derives it by comparing Workspace with the
	// bundle's starting workspace.
	Changeset journal.Changeset
	// Agent facts, where known (nil/zero when grading a bare directory).
	AgentExit    *int
	TimedOut     bool
	Network      []string // destinations the agent tried, gateways excluded
	FinalMessage string   // the agent's final message, if it has one
}

// Runner runs one command for a grader. The daemon supplies a runner
// that confines the command (closed network, its own cgroup, a time
// limit); ExecRunner runs it directly.
type Runner interface {
	Run(ctx context.Context, spec RunSpec) (RunResult, error)
}

// RunSpec is one command to run. Dir is a scratch directory the grader
// made; the runner makes it available at the same path, read-write.
type RunSpec struct {
	Args        []string
	Dir         string
	Env         []string
	Timeout     time.Duration
	MemoryLimit int64 // bytes, 0 = none
	OutputCap   int64 // bytes kept of stdout and of stderr, 0 = default
}

// RunResult is what happened. An error from Run is an infra error; a
// command that failed, timed out or was OOM-killed is a RunResult.
type RunResult struct {
	ExitCode   int // -1 when killed by a signal
	Signal     int
	TimedOut   bool
	OOM        bool
	Wall       time.Duration
	PeakMemory int64 // cgroup peak where the runner has one, else 0
	MaxRSS     int64 // largest single-process RSS in bytes
	Stdout     []byte
	Stderr     []byte
}
