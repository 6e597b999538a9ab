// Package graders scores a finished workspace against a task's hidden
// tests and goldens, and composes the verdict.
//
// Grade is the entry point. It runs the grader kind the task names
// ([bench.grader] kind) and applies the shared rules of every task: the
// agent exited 0, did not time out, changed only the files the task's
// policy allows, used no network on a closed task, and imported only the
// standard library. The verdict passes when the kind gives reward 1 and
// every shared rule holds; otherwise it lists every rule that failed, as
// Reasons with stable codes. An error from Grade is an infra error, never
// an agent failure.
//
// # Kinds
//
// Each kind lives in its own file and registers itself from init() with
// register(kind, fn):
//
//	pytest     pytest.go    public and hidden tests must all pass
//	dual-run   dualrun.go   the agent's tests must pass on a correct
//	                        implementation and fail on the planted one
//	workload   workload.go  a correctness and resource workload
//	exact      exact.go     an exact answer against a golden
//	refusal    refusal.go   a refusal report instead of an implementation
//
// Kinds share the helpers of scratch.go (scratch directories, workspace
// copies, running pytest and Python through the Runner). Kinds never
// change the workspace; they grade copies.
//
// # Reason codes
//
// Shared rules: agent_exit_nonzero, timeout, wrong_files, network_used,
// non_stdlib_import, no_reward, grader_oom (a grader command, which runs
// the agent's code, was OOM-killed: the daemon's runner gives every
// command the task's [environment] memory_mb). pytest: tests_failed, grader_timeout, and
// any code a task maps failed tests to (RT-03's bin_calls_text).
// dual-run: tests_fail_reference, bug_not_caught, tests_detect_file,
// tests_read_impl, tests_import_oracle, grader_timeout. The other kinds
// document theirs in their files.
//
// Tree rules, checked before any kind runs (tree.go): unsafe_link,
// special_file, tree_limits.
//
// # What a verdict shows, and to whom
//
// Reason.Code and Reason.Message are public: the daemon stores them with
// the attempt, and the API (GET /v1/attempts/ID), benchctl show, list,
// the board, scorecards and export archives show them to whoever runs
// the agent. A message carries codes, counts, the names of public tests
// and the grader's own words only: never the name, id, source or output
// of a hidden test, a diff, nor a golden or anything the golden file
// holds. A run's output is never quoted into a message, since the agent's
// code writes it (it could print a forged failure id carrying whatever
// it read). Grade checks every message last (withholdHidden) and replaces
// one that still names a file of the bundle's tests/, a hidden test
// function or class, or a six-digit run from those files.
//
// Verdict.Detail is operator-only: the failed ids, the tail of the
// output, the golden and what the miss looks like. The daemon never
// stores or serves it (apitype.Verdict has no such field); it goes to the
// daemon's debug log, and benchd grade (a local tool of the operator)
// prints it with --json.
//
// # Trusted inputs
//
// The bundle (task.toml, tests/, solution/) and the Input's agent facts
// come from the daemon. Everything in Workspace, and everything a grader
// command prints, is the agent's: kinds parse it to score, but it never
// reaches a message verbatim.
//
// # Runners
//
// Every command a grader runs goes through a Runner. ExecRunner runs it
// directly (a process group, a time limit, a closed network namespace
// when root); the daemon supplies a runner that also confines it in its
// own cgroup and sandbox.
package graders

import (
	"context"
	"time"

	"benchd.dev/fsmon/journal"
	"benchd.dev/tasks"
)

// Reason is one reason in a verdict: a stable code and a human sentence.
// Both are public: a message never names hidden test material.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Verdict is a grader's result.
type Verdict struct {
	Reward  int      `json:"reward"` // 0 or 1
	Pass    bool     `json:"pass"`
	Reasons []Reason `json:"reasons"` // never nil in JSON; empty when Pass
	// Detail is the tail of the grader's output (test failures, hidden
	// ones included), for the operator reading a disputed grade; never
	// used to decide it, never shown to the agent's owner (see the
	// package doc).
	Detail string `json:"detail,omitempty"`
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
	// ScratchRoot is where graders make their scratch directories; ""
	// means the system's temporary directory. The Runner must make
	// directories below it available to the commands it runs.
	ScratchRoot string
	// TreeReasons are the reasons CopyWorkspace gave when the caller
	// made Workspace as a copy of the agent's tree; Grade fails the
	// verdict with them.
	TreeReasons []Reason
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
