package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// Sentinel error classes. Errors returned by this package wrap one of them
// (test with errors.Is) and carry the detail in their message.
var (
	// ErrInvalid means the Config cannot describe a safe sandbox: a
	// missing command, uid 0, a relative path, a bind that would expose a
	// masked path.
	ErrInvalid = errors.New("invalid sandbox config")
	// ErrSetup means the sandbox could not be built: a mount, the
	// privilege drop, the system call filter or the agent's execve
	// failed. It is an
	// infrastructure error, never the agent's fault.
	ErrSetup = errors.New("sandbox set-up failed")
	// ErrUnsupported is returned on systems without Linux namespaces.
	ErrUnsupported = errors.New("sandbox: not supported on this system")
)

// DefaultOutputCap is the per-stream cap used when Config.OutputCap is 0.
const DefaultOutputCap = 8 << 20

// DefaultHome is the agent's $HOME inside the sandbox when Config.Home is
// empty.
const DefaultHome = "/home/agent"

// DefaultTmpfsMax is the size cap of each of the sandbox's private
// tmpfs mounts (/tmp, $HOME, /dev/shm) when Config.TmpfsMax is 0.
const DefaultTmpfsMax = 1 << 30

// WorkspacePath is where Config.Workspace appears inside the sandbox.
const WorkspacePath = "/workspace"

// Bind makes a host path visible inside the sandbox.
type Bind struct {
	Source   string // host path (file or directory); symlinks are resolved
	Target   string // absolute path inside the sandbox
	Writable bool   // read-only unless set; nosuid and nodev always
}

// File is content written into the sandbox and bound read-only at Path,
// over whatever the host has there (for /etc/hosts, /etc/resolv.conf).
type File struct {
	Path string // absolute path inside the sandbox
	Data []byte
	Mode os.FileMode // permission bits; 0 means 0444
}

// Config describes one sandboxed process tree. The zero value of every
// optional field is a safe default.
type Config struct {
	// Args is the command line of the agent. Args[0] is looked up in the
	// PATH of Env inside the sandbox when it has no slash.
	Args []string
	// Env is the agent's whole environment. HOME and PATH are added when
	// missing; nothing of benchd's environment is passed on.
	Env []string
	// Dir is the agent's working directory inside the sandbox; the
	// default is WorkspacePath when Workspace is set, $HOME otherwise.
	Dir string
	// Stdin is the agent's standard input; nil means /dev/null.
	Stdin *os.File

	// Workspace is a host directory (in practice the fsmon FUSE view)
	// bound read-write, nosuid and nodev, at WorkspacePath. Empty means
	// no workspace.
	Workspace string
	// Home is the agent's $HOME, a private tmpfs owned by UID; default
	// DefaultHome. It may not lie in /proc, /dev, /etc, /workspace or an
	// allow-listed host tree (/usr, /bin, /lib*, /sbin); its parents are
	// directories of the sandbox's root, nothing of the host's.
	Home string
	// TmpfsMax caps the size in bytes of each of the private tmpfs
	// mounts the agent may write, /tmp, $HOME and /dev/shm (the tmpfs
	// size= option): past it a write fails with ENOSPC. Their pages are
	// charged to the writer's memory cgroup as well, and freed with the
	// sandbox's mount namespace. 0 means DefaultTmpfsMax.
	TmpfsMax int64
	// Hostname is the sandbox's host name; default "sandbox".
	Hostname string
	// Mask lists host paths the agent must not read by any path:
	// benchd's state directory, the task store, hidden tests, goldens.
	// Each must exist. A directory is covered by an empty read-only
	// tmpfs, a file by an empty read-only file, wherever the mount tree
	// of the sandbox shows its content (see the package doc).
	Mask []string
	// Binds are extra host paths made visible in the sandbox, beyond the
	// allow-listed root (see the package doc): what a task or an agent
	// preset needs. Result.Binds reports them as made.
	Binds []Bind
	// Files are written into the sandbox, read-only.
	Files []File

	// UID and GID are the agent's credentials; both must be non-zero.
	// The agent has no supplementary groups and no capabilities.
	UID, GID int

	// Join, when set, is called with the host pid of the sandbox's init
	// while it is still gated: it has not run any agent code and will
	// not until Join returns nil. It is where the caller moves the
	// process into its cgroups (v1 has no CLONE_INTO_CGROUP).
	Join func(pid int) error
	// UseCgroupFD starts the init directly in the cgroup v2 directory
	// open as CgroupFD (CLONE_INTO_CGROUP).
	UseCgroupFD bool
	CgroupFD    int
	// NetnsPath (an nsfs path such as /run/netns/x or /proc/PID/ns/net)
	// or, when that is empty and NetnsFD > 0, the open namespace NetnsFD
	// is the network namespace of the sandbox. When both are unset the
	// sandbox gets a new network namespace with only lo, brought up.
	NetnsPath string
	NetnsFD   int

	// Timeout is the wall-clock limit, counted from the moment the agent
	// starts; 0 means none. At the limit the whole tree is killed (Kill).
	Timeout time.Duration
	// Kill kills every process of the sandbox and returns once they are
	// gone; the caller passes its cgroup's kill. When nil, the sandbox's
	// init is sent SIGKILL, which takes its pid namespace down with it.
	Kill func(ctx context.Context) error
	// OOMKilled reports, after the tree has ended, whether the OOM killer
	// killed any of its processes (from the cgroup's counters).
	OOMKilled func() bool

	// StdoutPath and StderrPath are files (created or truncated, mode
	// 0640) that receive the agent's output; empty means the output is
	// counted and discarded. They may be the same file: both streams are
	// then appended to it as they come, each with its own cap.
	StdoutPath, StderrPath string
	// OutputCap caps each of the two files; default DefaultOutputCap.
	// Output past the cap is read and counted but not stored; the file
	// ends with a trailer line saying so.
	OutputCap int64

	// Logger receives debug records; nil means none.
	Logger *slog.Logger
}

// Output describes one captured stream.
type Output struct {
	Bytes     int64 // bytes the tree wrote, stored or not
	Truncated bool  // Bytes exceeded the cap; the file holds the cap and a trailer
}

// Result is how a sandboxed tree ended.
type Result struct {
	// ExitCode is the agent's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal is the signal that ended the agent, or 0.
	Signal syscall.Signal
	// Wall is the time from the agent's start to the end of the tree.
	Wall time.Duration
	// DeadlineHit reports that the tree was still running at Timeout and
	// was killed by benchd. It is false when the agent had already ended
	// (for instance by the OOM killer) before the kill was sent.
	DeadlineHit bool
	// OOM reports that the OOM killer killed a process of the tree
	// (Config.OOMKilled, queried after the end).
	OOM bool
	// Stdout and Stderr describe the captured output.
	Stdout, Stderr Output
	// MaxRSS is the largest peak resident set, in bytes, of a single
	// process the init reaped (getrusage RUSAGE_CHILDREN of the init,
	// which covers the agent and every descendant that was waited for).
	// It is a true peak, however short the process lived; 0 when the
	// init was killed before it could report (deadline, cancellation).
	MaxRSS int64
	// Binds are Config.Binds as they were made, sources resolved (the
	// host paths the agent was shown besides the allow-listed root), for
	// the caller's record.
	Binds []Bind
}
