package confine

import (
	"benchd.dev/internal/undo"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"benchd.dev/limits"
	"benchd.dev/netns"
	"benchd.dev/sandbox"
)

// teardownTimeout bounds each undo step, which runs even when the
// caller's context has ended.
const teardownTimeout = 30 * time.Second

var labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ownerPrefix starts the names of the jobs of process pid.
func ownerPrefix(pid int) string { return NamePrefix + strconv.Itoa(pid) + "-" }

// Job is a started confined command. Wait must be called once.
type Job struct {
	spec  Spec
	log   *slog.Logger
	group *limits.Group
	ns    *netns.Namespace
	sb    *sandbox.Sandbox
	undo  undo.Stack
	// ownBinds is how many of the sandbox's binds are the job's own
	// (cgroupBinds), ahead of Spec.Binds.
	ownBinds int

	waitOnce sync.Once
}

// Run starts a job and waits for it.
func Run(ctx context.Context, spec Spec) (Result, error) {
	j, err := Start(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	return j.Wait(ctx)
}

// Start sets up the cgroup, the namespace and the sandbox, and starts
// the command. On error every step already taken is undone.
func Start(ctx context.Context, spec Spec) (_ *Job, retErr error) {
	if len(spec.Args) == 0 || spec.Args[0] == "" {
		return nil, fmt.Errorf("%w: no command", ErrInvalid)
	}
	label := spec.Name
	if label == "" {
		var b [6]byte
		rand.Read(b[:])
		label = hex.EncodeToString(b[:])
	}
	spec.Name = ownerPrefix(os.Getpid()) + label
	if !labelRE.MatchString(label) || len(spec.Name) > 64 {
		return nil, fmt.Errorf("%w: name %q: want [A-Za-z0-9_.-], at most 64 with the prefix", ErrInvalid, spec.Name)
	}
	if spec.Hostname == "" {
		spec.Hostname = DefaultHostname
	}
	if spec.PidsMax == 0 {
		spec.PidsMax = DefaultPidsMax
	}
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Job{spec: spec, log: spec.Logger.With("component", "confine", "job", spec.Name)}
	defer func() {
		if retErr != nil {
			if err := j.undo.Run(); err != nil {
				j.log.Warn("undoing a failed start", "err", err)
			}
		}
	}()

	g, err := limits.New(ctx, limits.Config{
		Parent:    spec.CgroupParent,
		Name:      spec.Name,
		MemoryMax: spec.MemoryMax,
		PidsMax:   spec.PidsMax,
		CPUWeight: spec.CPUWeight,
		CPUQuota:  spec.CPUQuota,
		Logger:    spec.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("unable to make the cgroup: %w", err)
	}
	j.group = g
	j.undo.Push("remove cgroup", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
		defer cancel()
		return g.Close(ctx)
	})

	// An open namespace reaches the internet, never the machines on
	// the host's own links, whatever their addresses.
	var near []netip.Prefix
	if spec.Network == netns.Open {
		if near, err = netns.HostSubnets(); err != nil {
			return nil, err
		}
	}
	n, err := netns.New(ctx, netns.Config{
		Mode:          spec.Network,
		Gateways:      spec.Gateways,
		Name:          spec.Name,
		RunDir:        spec.NetnsRunDir,
		Hostname:      spec.Hostname,
		Neighbourhood: near,
		Logger:        spec.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("unable to make the network namespace: %w", err)
	}
	j.ns = n
	j.undo.Push("close network namespace", n.Close)

	own := cgroupBinds(g)
	j.ownBinds = len(own)
	binds := append(own, spec.Binds...)
	files := append([]sandbox.File{
		{Path: "/etc/hosts", Data: n.Hosts()},
		{Path: "/etc/resolv.conf", Data: n.ResolvConf()},
	}, spec.Files...)
	cfg := sandbox.Config{
		Args:       spec.Args,
		Env:        spec.Env,
		Dir:        spec.Dir,
		Workspace:  spec.Workspace,
		Hostname:   spec.Hostname,
		Mask:       spec.Mask,
		Binds:      binds,
		Files:      files,
		UID:        spec.UID,
		GID:        spec.GID,
		Join:       g.Add,
		NetnsPath:  n.Path(),
		Timeout:    spec.Timeout,
		Kill:       g.Kill,
		OOMKilled:  func() bool { u, err := g.Usage(); return err == nil && u.OOMKills > 0 },
		Stdin:      spec.Stdin,
		StdoutPath: spec.StdoutPath,
		StderrPath: spec.StderrPath,
		OutputCap:  spec.OutputCap,
		Logger:     spec.Logger,
	}
	if fd, ok := g.FD(); ok {
		cfg.UseCgroupFD, cfg.CgroupFD = true, fd
	}
	sb, err := sandbox.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("unable to start the sandbox: %w", err)
	}
	j.sb = sb
	return j, nil
}

// cgroupBinds shows the job's own memory cgroup directory, read-only, at
// its host path: the sandbox's root has no /sys, and node (libuv's
// uv_get_constrained_memory, from which it sizes V8's heap) reads the
// limit there, at the path /proc/self/cgroup names. Nothing else of
// /sys is shown.
func cgroupBinds(g *limits.Group) []sandbox.Bind {
	var bs []sandbox.Bind
	paths := g.Paths()
	for _, h := range []string{"unified", "memory"} {
		if p, ok := paths[h]; ok {
			bs = append(bs, sandbox.Bind{Source: p, Target: p})
		}
	}
	return bs
}

// Name returns the job's name (its cgroup's and namespace's).
func (j *Job) Name() string { return j.spec.Name }

// Usage reads what the job's cgroup has used so far.
func (j *Job) Usage() (limits.Usage, error) { return j.group.Usage() }

// Network returns a snapshot of the namespace's report so far.
func (j *Job) Network() netns.Report { return j.ns.Report() }

// Wait waits for the command's tree to end (killing it at the deadline,
// or when ctx ends), then removes the cgroup and the namespace. The
// Result is filled in even when an error is returned; an error wrapping
// ctx.Err() means the job was cancelled.
func (j *Job) Wait(ctx context.Context) (Result, error) {
	var res Result
	var errs []error
	called := false
	j.waitOnce.Do(func() {
		called = true
		sr, err := j.sb.Wait(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		res = Result{
			ExitCode: sr.ExitCode,
			Signal:   sr.Signal,
			TimedOut: sr.DeadlineHit,
			OOM:      sr.OOM,
			Wall:     sr.Wall,
			MaxRSS:   sr.MaxRSS,
			Stdout:   sr.Stdout,
			Stderr:   sr.Stderr,
		}
		if len(sr.Binds) >= j.ownBinds {
			res.Binds = sr.Binds[j.ownBinds:] // the caller's, not the cgroup's
		}
		if err := j.undo.Run(); err != nil {
			errs = append(errs, fmt.Errorf("unable to tear down: %w", err))
		}
		// Both readings are final once closed.
		u, err := j.group.Usage()
		if err != nil {
			errs = append(errs, err)
		}
		res.Cgroup = u
		res.PeakMemory = u.PeakBytes
		res.PeakAnonShmem = u.PeakAnonShmemBytes
		res.MaxRSS = max(res.MaxRSS, u.MaxRSSBytes)
		if u.OOMKills > 0 {
			res.OOM = true
		}
		res.Network = j.ns.Report()
	})
	if !called {
		return Result{}, errors.New("confine: Wait called twice")
	}
	return res, errors.Join(errs...)
}

// Cleanup kills and removes every cgroup and network namespace that a
// process which no longer runs left: groups named NamePrefix<pid>- of a
// dead pid below cfg.CgroupParent (or this process's own cgroups, and
// their intermediates), and the namespaces of cfg.NetnsRunDir whose owner
// is gone. Jobs of live processes, this one included, are left alone, so
// it is safe while other processes run jobs beside ours. (A dead owner's
// pid that was reused by an unrelated process hides its leftovers until
// that process ends.)
func Cleanup(ctx context.Context, cfg CleanupConfig) error {
	var errs []error
	owners, err := deadOwners(cfg.CgroupParent)
	if err != nil {
		errs = append(errs, err)
	}
	for _, pid := range owners {
		err := limits.Cleanup(ctx, limits.Config{Parent: cfg.CgroupParent, Logger: cfg.Logger}, ownerPrefix(pid))
		if err != nil && !errors.Is(err, limits.ErrUnavailable) {
			errs = append(errs, fmt.Errorf("unable to remove leftover cgroups of pid %d: %w", pid, err))
		}
	}
	if err := netns.Cleanup(cfg.NetnsRunDir); err != nil {
		errs = append(errs, fmt.Errorf("unable to remove leftover network namespaces: %w", err))
	}
	return errors.Join(errs...)
}

// deadOwners lists the pids named by job groups (NamePrefix<pid>-...)
// below parent, or below this process's cgroups and their intermediate
// groups (limits' "benchd-<pid>"), whose process no longer exists.
func deadOwners(parent string) ([]int, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("unable to read own cgroups: %w", err)
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var mount string
		switch f[1] {
		case "memory", "pids", "cpu", "freezer":
			mount = filepath.Join(limits.DefaultRoot, f[1])
		case "":
			mount = limits.DefaultRoot
			if limits.Mode() == limits.Hybrid {
				mount = filepath.Join(limits.DefaultRoot, "unified")
			}
		default:
			continue
		}
		p := f[2]
		if f[1] == "" && limits.Mode() == limits.Unified {
			p = limits.DelegatedParent(p)
		}
		if parent != "" {
			p = parent
		}
		base := filepath.Join(mount, p)
		dirs = append(dirs, base)
		inters, _ := filepath.Glob(filepath.Join(base, limits.DefaultPrefix+"[0-9]*"))
		dirs = append(dirs, inters...)
	}
	seen := map[int]bool{}
	var out []int
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			rest, ok := strings.CutPrefix(e.Name(), NamePrefix)
			if !e.IsDir() || !ok {
				continue
			}
			digits, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(digits)
			if err != nil || pid <= 0 || seen[pid] || pid == os.Getpid() {
				continue
			}
			seen[pid] = true
			if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				out = append(out, pid)
			}
		}
	}
	return out, nil
}
