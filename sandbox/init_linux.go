package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Init runs the sandbox's init when this process is one, and never
// returns then; in any other process it returns at once. Every binary
// that starts sandboxes (benchd's main, a test's TestMain) must call it
// first thing: Start re-executes the running binary as the init.
func Init() {
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	os.Exit(runInit())
}

// forwarded are the signals the init passes on to the agent.
var forwarded = []os.Signal{
	unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT,
}

func runInit() int {
	unix.CloseOnExec(gateFD)
	unix.CloseOnExec(reportFD)
	gate := os.NewFile(gateFD, "gate")
	rep := os.NewFile(reportFD, "report")
	if gate == nil || rep == nil {
		fmt.Fprintln(os.Stderr, "benchd sandbox init: started without its pipes")
		return 125
	}
	// The gate: nothing happens until the parent has joined us to our
	// cgroups and sent the config.
	data, err := io.ReadAll(gate)
	gate.Close()
	if err != nil || len(data) == 0 {
		return 125 // the parent gave up
	}
	enc := json.NewEncoder(rep)
	fail := func(err error) int {
		enc.Encode(report{Error: err.Error()})
		return 125
	}
	var wc wireConfig
	if err := json.Unmarshal(data, &wc); err != nil {
		return fail(fmt.Errorf("decode config: %w", err))
	}
	// No one, not even a process of the same uid, may ptrace the init
	// or open its /proc files.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("set not dumpable: %w", err))
	}
	if err := buildRoot(&wc); err != nil {
		return fail(err)
	}
	if err := unix.Sethostname([]byte(wc.Hostname)); err != nil {
		return fail(fmt.Errorf("set hostname: %w", err))
	}
	if wc.NewNet {
		if err := loopbackUp(); err != nil {
			return fail(err)
		}
	}
	// No core files: they would land in the workspace, as the agent's
	// changes, and a crash dump of the agent is not benchd's to keep.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fail(fmt.Errorf("disable core files: %w", err))
	}
	// SIGCHLD wakes the reaper. Nothing below may need a new OS
	// thread: the init shares the agent's pids limit, and a fork bomb
	// that fills it would make the Go runtime fail to start one and
	// crash. So no goroutine blocks in a system call: children are
	// reaped with WNOHANG when SIGCHLD (or, as a safety net, a tick)
	// says so.
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, append([]os.Signal{unix.SIGCHLD}, forwarded...)...)
	// The runtime still starts threads of its own accord (waking the
	// signal goroutine hands its P off): keep a few idle ones ready.
	reserveThreads(4)

	agent, err := startAgent(&wc)
	if err != nil {
		return fail(err)
	}
	if err := enc.Encode(report{Agent: agent}); err != nil {
		return 125
	}

	// Reap every process; the agent's end ends the init, and with it
	// the pid namespace: the kernel kills what is left.
	tick := time.NewTicker(time.Second)
	for {
		select {
		case sig := <-sigs:
			if sig != unix.SIGCHLD {
				unix.Kill(agent, sig.(syscall.Signal))
				continue
			}
		case <-tick.C:
		}
		ws, ok := reap(agent)
		if !ok {
			continue
		}
		r := report{Done: true}
		var ru unix.Rusage
		if unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) == nil {
			r.MaxRSS = ru.Maxrss * 1024
		}
		code := ws.ExitStatus()
		if ws.Signaled() {
			r.Signal = int(ws.Signal())
			code = 128 + r.Signal
		} else {
			r.Exit = code
		}
		enc.Encode(r)
		return code
	}
}

// reserveThreads makes the Go runtime start n more OS threads now, while
// it still can, and keep them idle for later: a thread a locked goroutine
// used goes back to the runtime's idle list when the goroutine unlocks
// it and ends, and idle threads are never destroyed.
func reserveThreads(n int) {
	var locked, release, done sync.WaitGroup
	locked.Add(n)
	release.Add(1)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			locked.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	release.Done()
	done.Wait()
}

// reap collects every child that has ended, without blocking, and
// reports whether the agent was one of them, with its status.
func reap(agent int) (unix.WaitStatus, bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return 0, false
		}
		if pid == agent {
			return ws, true
		}
	}
}

// startAgent drops privileges on a locked thread and starts the agent
// from it, so that the agent inherits exactly that thread's credentials.
// The thread stays locked (its goroutine never unlocks it) so the Go
// runtime never reuses it with the dropped credentials.
func startAgent(wc *wireConfig) (int, error) {
	type started struct {
		pid int
		err error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		if err := dropPrivileges(wc.UID, wc.GID); err != nil {
			ch <- started{err: err}
			return // the thread exits with its goroutine
		}
		path, err := lookPath(wc.Args[0], wc.Env)
		if err != nil {
			ch <- started{err: err}
			return
		}
		// Last, after no_new_privs: from here on this thread, and the
		// agent forked from it, make only the calls the filter allows.
		if err := installFilter(); err != nil {
			ch <- started{err: err}
			return
		}
		pid, err := syscall.ForkExec(path, wc.Args, &syscall.ProcAttr{
			Dir:   wc.Dir,
			Env:   wc.Env,
			Files: []uintptr{0, 1, 2},
			Sys:   &syscall.SysProcAttr{Setsid: true},
		})
		if err != nil {
			err = fmt.Errorf("start agent %q: %w", wc.Args[0], err)
		}
		ch <- started{pid, err}
		// Park: the thread carries the agent's credentials and must
		// not run anything else.
		select {}
	}()
	r := <-ch
	return r.pid, r.err
}

// dropPrivileges gives the calling thread the agent's identity: no
// capability in any set (bounding, inheritable, ambient; permitted and
// effective go with the uid change), no_new_privs, no supplementary
// group, then gid and uid, in that order (a uid change first would take
// the right to change groups with it). Only raw per-thread system calls
// are used: Go's syscall.Setresuid would change every thread.
func dropPrivileges(uid, gid int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if err == unix.EINVAL {
				break // past the last capability the kernel knows
			}
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
		return fmt.Errorf("setresgid: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
		return fmt.Errorf("setresuid: %w", e)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	// A new anonymous session keyring: the one inherited from benchd
	// would let the agent use benchd's keys as their possessor.
	if _, _, e := unix.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 && e != unix.ENOSYS {
		return fmt.Errorf("new session keyring: %w", e)
	}
	return nil
}

// lookPath finds file in the PATH of env, inside the sandbox.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathEnv := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("start agent: %q not found in PATH %q", file, pathEnv)
}

// loopbackUp brings lo up in the init's new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}
