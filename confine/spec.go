package confine

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"

	"benchd.dev/limits"
	"benchd.dev/netns"
	"benchd.dev/sandbox"
)

// NamePrefix starts the name of every cgroup and network namespace made
// by this package, followed by the owner's pid and a dash, so that
// Cleanup can find what a crashed process left.
const NamePrefix = "benchd-c-"

// DefaultPidsMax is the tasks limit of a job whose Spec.PidsMax is 0.
const DefaultPidsMax = 1024

// DefaultHostname is the host name of a job whose Spec.Hostname is empty.
const DefaultHostname = "sandbox"

// ErrInvalid means the Spec cannot describe a job. Errors of the
// facilities (limits, netns, sandbox) are wrapped as they come.
var ErrInvalid = errors.New("invalid confinement spec")

// Spec is one confined command.
type Spec struct {
	// Args is the command line; Args[0] is looked up in Env's PATH inside
	// the sandbox when it has no slash.
	Args []string
	// Env is the whole environment (HOME and PATH are added if missing).
	Env []string
	// Dir is the working directory inside the sandbox; default
	// /workspace with a Workspace, else $HOME.
	Dir string
	// Workspace is a host directory bound read-write at /workspace.
	Workspace string
	// Binds are other host paths made visible, beyond the sandbox's
	// allow-listed root (see package sandbox); Files are written in.
	Binds []sandbox.Bind
	Files []sandbox.File
	// Mask lists host paths that must not be readable by any path.
	Mask []string
	// UID and GID are the command's credentials, both non-zero.
	UID, GID int
	// Hostname is the sandbox's host name (and the namespace resolves it
	// to loopback); default DefaultHostname.
	Hostname string

	// Timeout is the wall-clock limit from the command's start; 0 means
	// none. At the limit the whole cgroup is killed.
	Timeout time.Duration
	// MemoryMax is the cgroup's memory limit in bytes; 0 means none of
	// our own. PidsMax limits tasks; 0 means DefaultPidsMax.
	MemoryMax int64
	PidsMax   int64
	// CPUWeight is the group's share of contended CPU (limits.Config);
	// 0 leaves the default. CPUQuota is how much CPU time the group may
	// use per 100 ms (limits.Config.CPUQuota: 150ms is one and a half
	// CPUs); 0 means no quota.
	CPUWeight uint64
	CPUQuota  time.Duration

	// Network is netns.Closed (the zero value) or netns.Open. Gateways are
	// reachable in either mode.
	Network  netns.Mode
	Gateways []netns.Gateway

	// Stdin is the command's standard input (sandbox.Config.Stdin); nil
	// means /dev/null.
	Stdin *os.File
	// StdoutPath and StderrPath receive the output, each capped at
	// OutputCap bytes (default sandbox.DefaultOutputCap).
	StdoutPath, StderrPath string
	OutputCap              int64

	// Name is a label of [A-Za-z0-9_.-] for the job's cgroup and
	// namespace, which are named NamePrefix<pid>-<Name> (at most 64
	// characters), pid being this process's: Cleanup tells a crashed
	// owner's leftovers by it. Empty: a random label.
	Name string
	// CgroupParent is the cgroup below which the job's is made (see
	// limits.Config.Parent); empty means this process's own.
	CgroupParent string
	// NetnsRunDir holds the namespace's bind mount and state file; empty
	// means netns.DefaultRunDir.
	NetnsRunDir string

	// Logger gets debug and warning records; nil discards them.
	Logger *slog.Logger
}

// Result is how a job ended and what it used.
type Result struct {
	// ExitCode is the command's exit status, -1 when a signal ended it;
	// Signal is that signal, or 0.
	ExitCode int
	Signal   syscall.Signal
	// TimedOut: the tree was still running at Spec.Timeout and was killed.
	TimedOut bool
	// OOM: the OOM killer killed a process of the tree.
	OOM bool
	// Wall runs from the command's start to the end of its tree.
	Wall time.Duration
	// PeakMemory is the cgroup's peak charge (page cache included);
	// MaxRSS the largest peak resident set of a single process. See the
	// package doc.
	PeakMemory int64
	MaxRSS     int64
	// PeakAnonShmem is the largest anonymous plus shared memory of the
	// group (limits.Usage.PeakAnonShmemBytes): memory held that is not
	// page cache of files on disk.
	PeakAnonShmem int64
	// Cgroup is the group's last usage reading, taken before removal.
	Cgroup limits.Usage
	// Network is the namespace's final report.
	Network netns.Report
	// Stdout and Stderr describe the captured output.
	Stdout, Stderr sandbox.Output
	// Binds are Spec.Binds as the sandbox made them (sources resolved).
	Binds []sandbox.Bind
}

// CleanupConfig says where to look for what a crashed process left.
type CleanupConfig struct {
	CgroupParent string // as Spec.CgroupParent
	NetnsRunDir  string // as Spec.NetnsRunDir
	Logger       *slog.Logger
}
