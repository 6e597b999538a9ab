//go:build unix

package graders

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultOutputCap is how much of stdout and of stderr a runner keeps
// when RunSpec.OutputCap is 0.
const DefaultOutputCap = 1 << 20

// ExecRunner runs grader commands directly with os/exec, for tools and
// tests; the daemon supplies a runner that confines them further (its
// own cgroup, a sandbox).
//
// Each command runs in its own process group; at its time limit the
// whole group is killed with SIGKILL, and so is anything left in the
// group after the command exits. Stdin is /dev/null. A nil Env runs the
// command with PATH=/usr/bin:/bin only. Stdout and stderr are each capped
// at OutputCap bytes (the head and the tail are kept, the middle is
// replaced by a marker line). MaxRSS is the command's largest resident
// set: its VmHWM, sampled every hwmInterval while it runs (a lower
// bound), or getrusage's ru_maxrss for a command that ended before the
// first sample (which includes this process's own resident set, as the
// child is vfork'ed). PeakMemory is 0: there is no cgroup. OOM is never
// set.
//
// Network: when the process runs as root and unshare(1) is installed,
// every command runs under "unshare --net", in a new network namespace
// that has only a loopback interface, which is down: a grader can never
// reach the network. Without root there is no isolation (set
// RequireNetIsolation to refuse to run instead).
//
// Memory: a non-zero MemoryLimit is applied as RLIMIT_AS through
// prlimit(1), a cap on address space rather than on resident memory.
type ExecRunner struct {
	// AllowNetwork runs commands in the host's network namespace.
	AllowNetwork bool
	// RequireNetIsolation makes Run fail (an infra error) when it cannot
	// close the network, instead of running the command anyway.
	RequireNetIsolation bool
}

var (
	toolsOnce    sync.Once
	unsharePath  string
	prlimitPath  string
	netIsolation bool
)

func findTools() {
	toolsOnce.Do(func() {
		unsharePath, _ = exec.LookPath("unshare")
		prlimitPath, _ = exec.LookPath("prlimit")
		netIsolation = os.Geteuid() == 0 && unsharePath != ""
	})
}

// NetIsolated reports whether Run closes the network for its commands.
func (e ExecRunner) NetIsolated() bool {
	findTools()
	return !e.AllowNetwork && netIsolation
}

// Run runs spec. A command that fails, times out or is killed is a
// RunResult; an error means it could not be run, or ctx ended.
func (e ExecRunner) Run(ctx context.Context, spec RunSpec) (RunResult, error) {
	if len(spec.Args) == 0 {
		return RunResult{}, errors.New("unable to run: no command")
	}
	findTools()
	if _, err := exec.LookPath(spec.Args[0]); err != nil {
		return RunResult{}, fmt.Errorf("unable to run: %w", err)
	}
	args := spec.Args
	if spec.MemoryLimit > 0 {
		if prlimitPath == "" {
			return RunResult{}, errors.New("unable to apply a memory limit: prlimit is not installed")
		}
		args = append([]string{prlimitPath, "--as=" + strconv.FormatInt(spec.MemoryLimit, 10), "--"}, args...)
	}
	if !e.AllowNetwork {
		if netIsolation {
			args = append([]string{unsharePath, "--net", "--"}, args...)
		} else if e.RequireNetIsolation {
			return RunResult{}, errors.New("unable to close the network: needs root and unshare")
		}
	}
	capN := spec.OutputCap
	if capN <= 0 {
		capN = DefaultOutputCap
	}
	stdout, stderr := &capBuffer{max: int(capN)}, &capBuffer{max: int(capN)}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	if cmd.Env == nil {
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Stdin = spec.Stdin // exec copies it through a pipe
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Output pipes held open by a straggler must not hold up Wait.
	cmd.WaitDelay = 2 * time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return RunResult{}, fmt.Errorf("unable to start %s: %w", spec.Args[0], err)
	}
	pgid := cmd.Process.Pid
	killGroup := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
	hwm := sampleHWM(pgid)

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timer <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timer = t.C
	}
	var res RunResult
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timer:
		res.TimedOut = true
		killGroup()
		waitErr = <-done
	case <-ctx.Done():
		killGroup()
		<-done
		hwm()
		return RunResult{}, fmt.Errorf("run of %s stopped: %w", spec.Args[0], ctx.Err())
	}
	killGroup() // stragglers left in the group
	sampled := hwm()
	res.Wall = time.Since(start)
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	st := cmd.ProcessState
	if st == nil {
		return RunResult{}, fmt.Errorf("unable to run %s: %w", spec.Args[0], waitErr)
	}
	res.ExitCode = st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = int(ws.Signal())
		res.ExitCode = -1
	}
	// The sampled high-water mark is the command's own; ru_maxrss of a
	// child started with vfork begins at the parent's (this process's)
	// resident set, so it is only the fallback for a command too short
	// to be sampled.
	if res.MaxRSS = sampled; res.MaxRSS == 0 {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = int64(ru.Maxrss) * 1024
		}
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("unable to run %s: %w", spec.Args[0], waitErr)
	}
	return res, nil
}

// capBuffer keeps the first and the last max/2 bytes written to it.
type capBuffer struct {
	max     int
	head    []byte
	tail    []byte // a ring of the last bytes once head is full
	dropped int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	n := len(p)
	half := c.max / 2
	if room := half - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	keep := c.max - half
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - keep; over > 0 {
		c.dropped += int64(over)
		c.tail = append(c.tail[:0:0], c.tail[over:]...)
	}
	return n, nil
}

// Bytes returns what was kept, with a marker where bytes were dropped.
func (c *capBuffer) Bytes() []byte {
	out := append([]byte{}, c.head...)
	if c.dropped > 0 {
		out = append(out, fmt.Sprintf("\n[... %d bytes dropped ...]\n", c.dropped)...)
	}
	return append(out, c.tail...)
}

// hwmInterval is how often ExecRunner samples a command's VmHWM.
const hwmInterval = 5 * time.Millisecond

// sampleHWM samples the VmHWM of process pid (the command: its wrappers
// exec it in the same process) until the returned function is called,
// which returns the largest seen, 0 if none.
func sampleHWM(pid int) func() int64 {
	stop := make(chan struct{})
	got := make(chan int64, 1)
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	go func() {
		var hi int64
		t := time.NewTicker(hwmInterval)
		defer t.Stop()
		for {
			if b, err := os.ReadFile(path); err == nil {
				hi = max(hi, statusKiB(b, "VmHWM:")*1024)
			}
			select {
			case <-stop:
				got <- hi
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 { close(stop); return <-got }
}

// statusKiB reads a "Key:   N kB" line of /proc/PID/status; 0 if absent.
func statusKiB(status []byte, key string) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
