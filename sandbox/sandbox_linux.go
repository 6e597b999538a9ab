package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"benchd.dev/internal/undo"
)

// Sandbox is a started process tree. Wait must be called once.
type Sandbox struct {
	cfg     Config
	binds   []Bind // as made: sources resolved
	log     *slog.Logger
	proc    *os.Process
	started time.Time // when the agent started

	exited   chan struct{} // closed once the init is reaped
	exitedAt time.Time
	state    *os.ProcessState
	waitErr  error

	reports    chan report   // the init's reports, in order
	reportDone chan struct{} // closed when the report pipe is drained
	captures   sync.WaitGroup
	stdout     Output
	stderr     Output
	captureErr error // first capture error; written before captures.Done

	mu sync.Mutex
	// final is the init's report of the agent's end, and when it came.
	final   *report
	finalAt time.Time
	waited  bool
}

// Run starts a sandbox and waits for it.
func Run(ctx context.Context, cfg Config) (Result, error) {
	s, err := Start(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	return s.Wait(ctx)
}

// Start builds the sandbox and starts the agent in it. It returns once
// the agent runs, or with an error (ErrInvalid, ErrSetup) and nothing
// left behind. Cancelling ctx during Start aborts it.
func Start(ctx context.Context, cfg Config) (_ *Sandbox, retErr error) {
	wc, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limit := cfg.OutputCap
	if limit <= 0 {
		limit = DefaultOutputCap
	}

	// Every undo step runs in reverse order when Start fails; closing
	// and killing what a failed start made has no error to report.
	var undos undo.Stack
	defer func() {
		if retErr != nil {
			undos.Run()
		}
	}()
	closeLater := func(fs ...*os.File) {
		undos.Push("close", func() error {
			for _, f := range fs {
				f.Close()
			}
			return nil
		})
	}

	outFiles := make([]*os.File, 2)
	for i, p := range []string{cfg.StdoutPath, cfg.StderrPath} {
		if p == "" {
			continue
		}
		// O_APPEND: the two streams may share one file.
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o640)
		if err != nil {
			return nil, fmt.Errorf("%w: open output file: %w", ErrSetup, err)
		}
		outFiles[i] = f
		closeLater(f)
	}
	stdin := cfg.Stdin
	if stdin == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("%w: open %s: %w", ErrSetup, os.DevNull, err)
		}
		defer f.Close()
		stdin = f
	}
	var pipes [8]*os.File // gate r,w; report r,w; stdout r,w; stderr r,w
	for i := 0; i < len(pipes); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("%w: pipe: %w", ErrSetup, err)
		}
		pipes[i], pipes[i+1] = r, w
		closeLater(r, w)
	}
	gateR, gateW, repR, repW := pipes[0], pipes[1], pipes[2], pipes[3]
	outR, outW, errR, errW := pipes[4], pipes[5], pipes[6], pipes[7]

	netfd := -1
	switch {
	case cfg.NetnsPath != "":
		f, err := os.Open(cfg.NetnsPath)
		if err != nil {
			return nil, fmt.Errorf("%w: open network namespace: %w", ErrInvalid, err)
		}
		defer f.Close()
		netfd = int(f.Fd())
	case cfg.NetnsFD > 0:
		netfd = cfg.NetnsFD
	}

	flags := uintptr(unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if wc.NewNet {
		flags |= unix.CLONE_NEWNET
	}
	attr := &os.ProcAttr{
		Dir: "/",
		// The init's own environment (the agent's is sent through the
		// gate): one P is all it needs, and spares a loaded host the
		// Go runtime's idle spinning threads.
		Env:   []string{"GOMAXPROCS=1"},
		Files: []*os.File{stdin, outW, errW, gateR, repW},
		Sys: &syscall.SysProcAttr{
			Cloneflags:  flags,
			Pdeathsig:   syscall.SIGKILL,
			Setpgid:     true,
			UseCgroupFD: cfg.UseCgroupFD,
			CgroupFD:    cfg.CgroupFD,
		},
	}
	proc, err := startProcess([]string{initArg0}, attr, netfd)
	if err != nil {
		return nil, fmt.Errorf("%w: start init: %w", ErrSetup, err)
	}
	// The child holds its own copies now.
	for _, f := range []*os.File{gateR, repW, outW, errW} {
		f.Close()
	}

	s := &Sandbox{
		cfg:        cfg,
		binds:      wc.Binds,
		log:        log.With("component", "sandbox", "pid", proc.Pid),
		proc:       proc,
		exited:     make(chan struct{}),
		reports:    make(chan report, 2),
		reportDone: make(chan struct{}),
	}
	go func() {
		s.state, s.waitErr = proc.Wait()
		s.exitedAt = time.Now()
		close(s.exited)
	}()
	undos.Push("kill the init", func() error {
		proc.Kill()
		<-s.exited
		s.captures.Wait()
		return nil
	})
	s.startCapture(&s.stdout, outFiles[0], outR, limit)
	s.startCapture(&s.stderr, outFiles[1], errR, limit)
	go s.readReports(repR)

	if cfg.Join != nil {
		if err := cfg.Join(proc.Pid); err != nil {
			return nil, fmt.Errorf("%w: join: %w", ErrSetup, err)
		}
	}
	// Opening the gate: the init reads its config until EOF.
	if err := json.NewEncoder(gateW).Encode(&wc); err != nil {
		return nil, fmt.Errorf("%w: send config to init: %w", ErrSetup, err)
	}
	gateW.Close()

	select {
	case r, ok := <-s.reports:
		switch {
		case !ok:
			<-s.exited
			return nil, fmt.Errorf("%w: init ended before starting the agent: %v", ErrSetup, s.state)
		case r.Error != "":
			return nil, fmt.Errorf("%w: %s", ErrSetup, r.Error)
		case r.Agent == 0:
			return nil, fmt.Errorf("%w: unexpected report from init: %+v", ErrSetup, r)
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("sandbox start: %w", ctx.Err())
	}
	s.started = time.Now()
	s.log.Debug("agent started", "args", cfg.Args)
	return s, nil
}

// Pid returns the host pid of the sandbox's init (pid 1 inside).
func (s *Sandbox) Pid() int { return s.proc.Pid }

// Signal sends sig to the init, which passes SIGHUP, SIGINT, SIGQUIT,
// SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH and SIGCONT on to the agent.
// SIGKILL kills the whole sandbox.
func (s *Sandbox) Signal(sig os.Signal) error {
	if err := s.proc.Signal(sig); err != nil {
		return fmt.Errorf("signal sandbox: %w", err)
	}
	return nil
}

// Wait waits for the tree to end, kills it at the deadline or when ctx is
// cancelled, and returns how it ended. Once Wait returns, no process of
// the sandbox is left and its capture files are complete. On cancellation
// the Result is still filled in and the error wraps ctx.Err().
func (s *Sandbox) Wait(ctx context.Context) (Result, error) {
	s.mu.Lock()
	if s.waited {
		s.mu.Unlock()
		return Result{}, errors.New("sandbox: Wait called twice")
	}
	s.waited = true
	s.mu.Unlock()

	var deadline <-chan time.Time
	if s.cfg.Timeout > 0 {
		t := time.NewTimer(time.Until(s.started.Add(s.cfg.Timeout)))
		defer t.Stop()
		deadline = t.C
	}
	var errs []error
	killed, cancelled := false, false
	select {
	case <-s.exited:
	case <-deadline:
		// An agent that already ended (the init is on its way out) was
		// not stopped by the deadline.
		s.mu.Lock()
		ended := s.final != nil
		s.mu.Unlock()
		if !ended {
			killed = true
			s.log.Debug("deadline reached, killing", "timeout", s.cfg.Timeout)
			if err := s.kill(); err != nil {
				errs = append(errs, err)
			}
		}
		<-s.exited
	case <-ctx.Done():
		cancelled = true
		if err := s.kill(); err != nil {
			errs = append(errs, err)
		}
		<-s.exited
		errs = append(errs, fmt.Errorf("sandbox wait: %w", ctx.Err()))
	}
	<-s.reportDone
	s.captures.Wait()
	if s.captureErr != nil {
		errs = append(errs, s.captureErr)
	}
	if s.waitErr != nil {
		errs = append(errs, fmt.Errorf("wait for init: %w", s.waitErr))
	}

	res := Result{
		Wall:        s.exitedAt.Sub(s.started),
		DeadlineHit: killed,
		Stdout:      s.stdout,
		Stderr:      s.stderr,
		Binds:       s.binds,
	}
	s.mu.Lock()
	final := s.final
	s.mu.Unlock()
	switch {
	case final != nil && final.Signal != 0:
		res.ExitCode, res.Signal = -1, syscall.Signal(final.Signal)
	case final != nil:
		res.ExitCode = final.Exit
	case s.state != nil:
		// The init itself was killed (deadline, cancellation, OOM): its
		// status is the tree's.
		ws := s.state.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.ExitCode, res.Signal = -1, ws.Signal()
		} else {
			res.ExitCode = ws.ExitStatus()
		}
		if !killed && !cancelled && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
			// Not killed by anyone (a SIGKILL is the OOM killer's or
			// the caller's): the init failed.
			errs = append(errs, fmt.Errorf("%w: the sandbox's init ended (%v) without the agent's status", ErrSetup, s.state))
		}
	}
	if final != nil {
		res.MaxRSS = final.MaxRSS
	}
	if s.cfg.OOMKilled != nil {
		res.OOM = s.cfg.OOMKilled()
	}
	return res, errors.Join(errs...)
}

// kill ends every process of the sandbox: through Config.Kill, then, in
// any case, SIGKILL to the init, which empties its pid namespace.
func (s *Sandbox) kill() error {
	var err error
	if s.cfg.Kill != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if kerr := s.cfg.Kill(ctx); kerr != nil {
			err = fmt.Errorf("kill sandbox: %w", kerr)
			s.log.Warn("kill failed, falling back to SIGKILL of init", "err", kerr)
		}
	}
	if kerr := s.proc.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) {
		err = errors.Join(err, fmt.Errorf("kill sandbox init: %w", kerr))
	}
	return err
}

func (s *Sandbox) startCapture(out *Output, f *os.File, r *os.File, limit int64) {
	s.captures.Add(1)
	go func() {
		defer s.captures.Done()
		defer r.Close()
		var w io.Writer
		if f != nil {
			defer f.Close()
			w = f
		}
		o, err := capture(w, r, limit)
		*out = o
		if err != nil {
			s.mu.Lock()
			if s.captureErr == nil {
				s.captureErr = fmt.Errorf("capture output: %w", err)
			}
			s.mu.Unlock()
		}
	}()
}

// readReports passes the init's reports on; the final one is kept aside.
func (s *Sandbox) readReports(r *os.File) {
	defer close(s.reportDone)
	defer close(s.reports)
	defer r.Close()
	dec := json.NewDecoder(r)
	for {
		var rep report
		if err := dec.Decode(&rep); err != nil {
			return
		}
		if rep.Done {
			s.mu.Lock()
			s.final, s.finalAt = &rep, time.Now()
			s.mu.Unlock()
			continue
		}
		select {
		case s.reports <- rep:
		default: // nobody listens any more
		}
	}
}

// prepare checks cfg and resolves it, on the host side, into what the
// init needs.
func prepare(cfg Config) (wireConfig, error) {
	invalid := func(format string, a ...any) (wireConfig, error) {
		return wireConfig{}, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	if len(cfg.Args) == 0 || cfg.Args[0] == "" {
		return invalid("no command")
	}
	if cfg.UID <= 0 || cfg.GID <= 0 {
		return invalid("uid %d, gid %d: both must be non-zero", cfg.UID, cfg.GID)
	}
	wc := wireConfig{
		Args:     cfg.Args,
		UID:      cfg.UID,
		GID:      cfg.GID,
		Hostname: cfg.Hostname,
		Home:     cfg.Home,
		TmpfsMax: cfg.TmpfsMax,
		Dir:      cfg.Dir,
		NewNet:   cfg.NetnsPath == "" && cfg.NetnsFD <= 0,
	}
	if wc.Hostname == "" {
		wc.Hostname = "sandbox"
	}
	if len(wc.Hostname) > 64 {
		return invalid("hostname %q is longer than 64 bytes", wc.Hostname)
	}
	switch {
	case wc.TmpfsMax < 0:
		return invalid("tmpfs cap %d is negative", wc.TmpfsMax)
	case wc.TmpfsMax == 0:
		wc.TmpfsMax = DefaultTmpfsMax
	}
	if wc.Home == "" {
		wc.Home = DefaultHome
	}
	if !insidePath(wc.Home) {
		return invalid("home %q must be an absolute, clean path below /", wc.Home)
	}
	reserved := []string{"/proc", "/dev", "/etc", WorkspacePath}
	for _, name := range hostRoot {
		reserved = append(reserved, "/"+name)
	}
	for _, r := range reserved {
		if within(wc.Home, r) {
			return invalid("home %q lies in %s", wc.Home, r)
		}
	}
	if wc.Dir == "" {
		wc.Dir = wc.Home
		if cfg.Workspace != "" {
			wc.Dir = WorkspacePath
		}
	}
	if !filepath.IsAbs(wc.Dir) {
		return invalid("working directory %q is not absolute", wc.Dir)
	}
	wc.Env = append([]string(nil), cfg.Env...)
	if !hasEnv(wc.Env, "HOME") {
		wc.Env = append(wc.Env, "HOME="+wc.Home)
	}
	if !hasEnv(wc.Env, "PATH") {
		wc.Env = append(wc.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}

	// The host's mount table says where masked content lives; without
	// masks there is nothing to look up.
	var mounts []mount
	if len(cfg.Mask) > 0 {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return wireConfig{}, fmt.Errorf("read host mounts: %w", err)
		}
		mounts, err = parseMountinfo(f)
		f.Close()
		if err != nil {
			return wireConfig{}, fmt.Errorf("read host mounts: %w", err)
		}
	}

	for _, m := range cfg.Mask {
		if !filepath.IsAbs(m) {
			return invalid("mask %q is not absolute", m)
		}
		p, err := filepath.EvalSymlinks(m)
		if err != nil {
			return invalid("mask %q: %v", m, err)
		}
		if p == "/" {
			return invalid("mask %q is the root", m)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return invalid("mask %q: %v", m, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
			return invalid("mask %q: the file has %d names; the others would show it", m, st.Nlink)
		}
		id, ok := identify(mounts, p)
		if !ok {
			return invalid("mask %q: no mount holds it", m)
		}
		wc.Masks = append(wc.Masks, wireMask{Path: p, ID: id})
	}
	// A bind whose source shows masked content would undo the mask.
	checkSource := func(what, src string) (string, error) {
		p, err := filepath.EvalSymlinks(src)
		if err != nil {
			return "", fmt.Errorf("%w: %s %q: %v", ErrInvalid, what, src, err)
		}
		if len(wc.Masks) == 0 {
			return p, nil
		}
		id, ok := identify(mounts, p)
		if !ok {
			return "", fmt.Errorf("%w: %s %q: no mount holds it", ErrInvalid, what, src)
		}
		for _, m := range wc.Masks {
			if m.ID.Dev == id.Dev && within(id.Root, m.ID.Root) {
				return "", fmt.Errorf("%w: %s %q shows masked %q", ErrInvalid, what, src, m.Path)
			}
		}
		return p, nil
	}
	if cfg.Workspace != "" {
		p, err := checkSource("workspace", cfg.Workspace)
		if err != nil {
			return wireConfig{}, err
		}
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			return invalid("workspace %q is not a directory", cfg.Workspace)
		}
		wc.Workspace = p
	}
	for _, b := range cfg.Binds {
		if !insidePath(b.Target) || within(b.Target, "/proc") {
			return invalid("bind target %q must be an absolute, clean path below / and outside /proc", b.Target)
		}
		p, err := checkSource("bind source", b.Source)
		if err != nil {
			return wireConfig{}, err
		}
		b.Source = p
		wc.Binds = append(wc.Binds, b)
	}
	for _, fl := range cfg.Files {
		if !insidePath(fl.Path) || within(fl.Path, "/proc") {
			return invalid("file %q must be an absolute, clean path below / and outside /proc", fl.Path)
		}
		if fl.Mode == 0 {
			fl.Mode = 0o444
		}
		wc.Files = append(wc.Files, fl)
	}
	return wc, nil
}

func insidePath(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && p != "/"
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}

// The launcher: every init is started from one locked OS thread that
// never exits. Pdeathsig fires when the thread that started a child ends,
// not the process, and Go ends threads whose goroutine exits while locked
// (code joining namespaces does that on purpose), so children started
// from an arbitrary thread could be killed at random. The same thread
// joins the sandbox's network namespace for the fork and returns to the
// process's own right after, so the init is born in it.

type launch struct {
	argv  []string
	attr  *os.ProcAttr
	netfd int
	done  chan launched
}

type launched struct {
	proc *os.Process
	err  error
}

var (
	launcherOnce sync.Once
	launches     chan launch
)

func startProcess(argv []string, attr *os.ProcAttr, netfd int) (*os.Process, error) {
	launcherOnce.Do(func() {
		launches = make(chan launch)
		go launcher(launches)
	})
	l := launch{argv: argv, attr: attr, netfd: netfd, done: make(chan launched, 1)}
	launches <- l
	r := <-l.done
	return r.proc, r.err
}

func launcher(reqs chan launch) {
	runtime.LockOSThread() // never unlocked: this thread lives as long as the process
	home, homeErr := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if homeErr == nil {
		// Start from the process's namespace even if this thread was
		// left elsewhere by someone else's code.
		homeErr = unix.Setns(home, unix.CLONE_NEWNET)
	}
	for l := range reqs {
		if l.netfd >= 0 {
			if homeErr != nil {
				l.done <- launched{err: fmt.Errorf("launcher network namespace: %w", homeErr)}
				continue
			}
			if err := unix.Setns(l.netfd, unix.CLONE_NEWNET); err != nil {
				l.done <- launched{err: fmt.Errorf("join network namespace: %w", err)}
				continue
			}
		}
		p, err := os.StartProcess("/proc/self/exe", l.argv, l.attr)
		if l.netfd >= 0 {
			if rerr := unix.Setns(home, unix.CLONE_NEWNET); rerr != nil {
				// Stuck in a foreign namespace. The thread must not
				// exit (its children would get their Pdeathsig):
				// park it and hand over to a new launcher.
				go launcher(reqs)
				l.done <- launched{p, err}
				select {}
			}
		}
		l.done <- launched{p, err}
	}
}
