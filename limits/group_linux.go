package limits

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"benchd.dev/internal/undo"
)

var (
	// seq numbers the default names of this process's groups.
	seq atomic.Uint64

	// interMu guards interRefs: how many open Groups of this process use
	// each intermediate directory (by absolute path). The last Close
	// removes it; New and Close hold interMu while making and removing
	// intermediates so that they never race each other.
	interMu   sync.Mutex
	interRefs = map[string]int{}
)

// Group is one cgroup (one directory in each hierarchy it needs) made by
// New. Its methods are safe for concurrent use.
type Group struct {
	cfg    Config
	layout Layout
	hs     []hier // hs[0] is the primary (memory) hierarchy
	log    *slog.Logger

	stopSampler context.CancelFunc
	samplerDone chan struct{}

	smu     sync.Mutex
	samples sampled

	mu     sync.Mutex
	fd     int // v2 directory fd for CLONE_INTO_CGROUP, -1 if none
	closed bool
	final  Usage
}

// sampled is what the sampler has seen so far.
type sampled struct {
	anon      int64
	anonShmem int64 // anon plus shmem (tmpfs, memfd, shared anonymous) in one reading
	charged   int64 // the charge less the page cache of files on disk, in one reading
	current   int64
	rss       int64
	rssPid    int
	n         int
}

// New makes a group below the parent (see Config) in every hierarchy the
// layout needs, writes its limits, and starts the sampler. On error
// nothing it made is left behind.
func New(ctx context.Context, cfg Config) (_ *Group, retErr error) {
	cfg, err := cfg.withDefaults(seq.Add(1))
	if err != nil {
		return nil, err
	}
	layout := cfg.Layout
	if layout == "" {
		layout = Mode()
	}
	if layout == Unavailable {
		return nil, fmt.Errorf("no cgroup hierarchy at %s: %w", DefaultRoot, ErrUnavailable)
	}
	own, err := readProcCgroup(cfg.ProcCgroup)
	if err != nil {
		return nil, err
	}
	hs, err := plan(cfg, layout, own)
	if err != nil {
		return nil, err
	}
	if layout == Unified && cfg.CPUWeight != 0 && cfg.CPUQuota == 0 && !cpuOffered(&hs[0]) {
		// A weight is a share among siblings, not a limit: where the
		// host does not offer the cpu controller here (systemd enables
		// it at the root only when a unit asks), the group goes without.
		cfg.Logger.Warn("cpu controller not offered: the group's cpu weight is not set",
			"component", "limits", "parent", hs[0].parent, "cpu_weight", cfg.CPUWeight)
		cfg.CPUWeight = 0
	}
	g := &Group{
		cfg:    cfg,
		layout: layout,
		log:    cfg.Logger.With("component", "limits", "group", cfg.Name),
		fd:     -1,
	}
	// undos unwinds what was made so far, in reverse order.
	var undos undo.Stack
	defer func() {
		if retErr != nil {
			undos.Run()
		}
	}()

	if err := g.makeDirs(ctx, hs, &undos); err != nil {
		return nil, err
	}
	g.hs = hs

	for i := range hs {
		h := &hs[i]
		for _, w := range limitWrites(cfg, h, layout) {
			p := h.file(w.file)
			if w.optional {
				if _, err := os.Stat(p); err != nil {
					continue
				}
			}
			if err := writeFile(p, w.value); err != nil {
				return nil, fmt.Errorf("set %s limit: %w", h.label(), err)
			}
		}
	}
	if layout == Unified {
		fd, err := unix.Open(hs[0].dir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open group directory: %w", err)
		}
		g.fd = fd
	}

	sctx, cancel := context.WithCancel(context.Background())
	g.stopSampler = cancel
	g.samplerDone = make(chan struct{})
	go g.runSampler(sctx)

	g.log.Debug("made group", "layout", layout, "path", g.Path(),
		"memory_max", cfg.MemoryMax, "pids_max", cfg.PidsMax,
		"cpu_weight", cfg.CPUWeight, "cpu_quota", cfg.CPUQuota)
	return g, nil
}

// makeDirs makes the intermediate groups (shared) and the group's
// directories, and enables v2 controllers on the way. Each step it takes
// registers its undo.
func (g *Group) makeDirs(ctx context.Context, hs []hier, undos *undo.Stack) error {
	interMu.Lock()
	defer interMu.Unlock()
	for i := range hs {
		h := &hs[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		if h.inter != "" {
			made, err := mkdirShared(h.interDir())
			if err != nil {
				return fmt.Errorf("make intermediate %s group %s: %w", h.label(), h.inter, err)
			}
			if made {
				g.log.Debug("made intermediate group", "hierarchy", h.label(), "path", h.inter)
			}
			dir := h.interDir()
			interRefs[dir]++
			// releaseInter takes interMu: undo runs after makeDirs returns.
			undos.Push("release "+dir, func() error { releaseInter(dir, g.log); return nil })
		}
		if h.v2 && g.layout == Unified {
			if err := enableControllers(h, v2Controllers(g.cfg)); err != nil {
				return err
			}
		}
		if err := os.Mkdir(h.dir(), 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("make %s group %s: %w", h.label(), h.rel, ErrExists)
			}
			return fmt.Errorf("make %s group: %w", h.label(), err)
		}
		dir := h.dir()
		undos.Push("remove "+dir, func() error { return unix.Rmdir(dir) })
	}
	return nil
}

// cpuOffered reports whether the cpu controller can be enabled for the
// group of v2 hierarchy h: offered to its parent (cgroup.controllers) or,
// below an intermediate group at the root, enabled at the root.
func cpuOffered(h *hier) bool {
	file := filepath.Join(h.parentDir(), "cgroup.controllers")
	if h.inter != "" {
		file = filepath.Join(h.parentDir(), "cgroup.subtree_control")
	}
	b, err := os.ReadFile(file)
	return err == nil && len(missingControllers(string(b), []string{"cpu"})) == 0
}

// mkdirShared makes dir unless it exists, and says whether it made it.
func mkdirShared(dir string) (bool, error) {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// releaseInter drops one reference to an intermediate directory and
// removes it when this process no longer uses it. It fails quietly when the
// directory still has children (a leftover, or a group of another process
// that was configured with the same intermediate name).
func releaseInter(dir string, log *slog.Logger) {
	interMu.Lock()
	defer interMu.Unlock()
	interRefs[dir]--
	if interRefs[dir] > 0 {
		return
	}
	delete(interRefs, dir)
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		log.Warn("intermediate group left in place", "dir", dir, "err", err)
	}
}

// enableControllers makes sure the v2 controllers want are enabled for the
// children of the group's parent (our intermediate group, or the parent).
// It never changes a hierarchy's root: there they must be enabled already.
func enableControllers(h *hier, want []string) error {
	if h.inter != "" {
		root, err := os.ReadFile(h.parentDir() + "/cgroup.subtree_control")
		if err != nil {
			return fmt.Errorf("read root subtree_control: %w", err)
		}
		if m := missingControllers(string(root), want); len(m) > 0 {
			return fmt.Errorf("controllers %v not enabled at the v2 root: %w", m, ErrNoController)
		}
		// The root's subtree_control is what the intermediate's
		// cgroup.controllers lists: no need to read it again.
		_, err = enableIn(h.interDir(), want, false)
		return err
	}
	_, err := enableIn(h.parentDir(), want, true)
	return err
}

// enableIn enables the missing controllers of want in dir's
// cgroup.subtree_control, checking first (if checkAvail) that its
// cgroup.controllers offers them, and returns those it enabled.
func enableIn(dir string, want []string, checkAvail bool) ([]string, error) {
	have, err := os.ReadFile(dir + "/cgroup.subtree_control")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read subtree_control: %w", err)
	}
	missing := missingControllers(string(have), want)
	if len(missing) == 0 {
		return nil, nil
	}
	if checkAvail {
		avail, err := os.ReadFile(dir + "/cgroup.controllers")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read controllers: %w", err)
		}
		if m := missingControllers(string(avail), missing); len(m) > 0 {
			return nil, fmt.Errorf("controllers %v not available in %s: %w", m, dir, ErrNoController)
		}
	}
	if err := writeFile(dir+"/cgroup.subtree_control", subtreeChange("+", missing)); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("enable %v in %s: %w", missing, dir, ErrParentBusy)
		}
		return nil, fmt.Errorf("enable controllers: %w", err)
	}
	return missing, nil
}

// writeFile writes value to a control file (creating it in a fake tree).
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, werr)
	}
	return cerr
}

// Add moves process pid into the group, in every hierarchy: each v1
// controller's cgroup.procs and, on hybrid hosts, the v2 group's. A
// launcher calls it while the child is held at a gate (see the package
// doc), before the child runs any code of its own.
func (g *Group) Add(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("add pid %d: %w", pid, ErrInvalid)
	}
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return fmt.Errorf("add pid %d: %w", pid, ErrClosed)
	}
	for i := range g.hs {
		h := &g.hs[i]
		if err := writeFile(h.file("cgroup.procs"), strconv.Itoa(pid)); err != nil {
			if errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("add pid %d to %s group: %w", pid, h.label(), ErrNoProcess)
			}
			return fmt.Errorf("add pid %d to %s group: %w", pid, h.label(), err)
		}
	}
	return nil
}

// FD returns an open directory fd of the group for
// SysProcAttr.UseCgroupFD (CLONE_INTO_CGROUP), and true, on unified hosts.
// On hybrid and legacy hosts it returns false: the memory controller is in
// v1, which CLONE_INTO_CGROUP cannot reach, so the launcher must gate the
// child and call Add. The fd belongs to the Group and is closed by Close.
func (g *Group) FD() (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fd, g.fd >= 0
}

// Path returns the group's path relative to its hierarchy's root, in the
// primary hierarchy (memory on v1, the only one on v2): what
// /proc/<pid>/cgroup says for a process inside it.
func (g *Group) Path() string { return g.hs[0].rel }

// Paths returns the group's directory in every hierarchy, keyed by
// controller ("memory", "pids", "cpu", "freezer") or "unified".
func (g *Group) Paths() map[string]string {
	m := make(map[string]string, len(g.hs))
	for i := range g.hs {
		m[g.hs[i].label()] = g.hs[i].dir()
	}
	return m
}

// Layout returns the layout the group was made for.
func (g *Group) Layout() Layout { return g.layout }

// Usage reads what the group has used so far, taking one sample of its
// processes first. After Close it returns the reading Close took.
func (g *Group) Usage() (Usage, error) {
	g.mu.Lock()
	if g.closed {
		defer g.mu.Unlock()
		return g.final, nil
	}
	g.mu.Unlock()
	g.sample()
	return g.readUsage()
}

// readUsage reads the kernel's counters and merges the sampler's maxima.
func (g *Group) readUsage() (Usage, error) {
	var u Usage
	mem := &g.hs[0]
	var errs []error
	keep := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", what, err))
		}
	}
	var err error
	if mem.v2 {
		u.CurrentBytes, err = readInt(mem.file("memory.current"))
		keep("memory.current", err)
		u.PeakBytes, err = readInt(mem.file("memory.peak"))
		if errors.Is(err, fs.ErrNotExist) {
			u.PeakBytes, err = -1, nil // before Linux 5.19: use the sampled maximum below
		}
		keep("memory.peak", err)
		ev, err := readKeyed(mem.file("memory.events"))
		keep("memory.events", err)
		u.OOMKills, u.MemoryLimitHits = ev["oom_kill"], ev["max"]
	} else {
		u.CurrentBytes, err = readInt(mem.file("memory.usage_in_bytes"))
		keep("memory.usage_in_bytes", err)
		u.PeakBytes, err = readInt(mem.file("memory.max_usage_in_bytes"))
		keep("memory.max_usage_in_bytes", err)
		oc, err := readKeyed(mem.file("memory.oom_control"))
		keep("memory.oom_control", err)
		u.OOMKills = oc["oom_kill"]
		u.MemoryLimitHits, err = readInt(mem.file("memory.failcnt"))
		keep("memory.failcnt", err)
	}
	for i := range g.hs {
		h := &g.hs[i]
		if h.ctrl == "pids" || h.v2 && g.layout == Unified {
			ev, err := readKeyed(h.file("pids.events"))
			keep("pids.events", err)
			u.PidsLimitHits = ev["max"]
		}
	}
	pids, err := readPids(mem.file("cgroup.procs"))
	keep("cgroup.procs", err)
	u.Procs = len(pids)
	u.CPU = g.cpuUsed()

	g.smu.Lock()
	s := g.samples
	g.smu.Unlock()
	u.PeakAnonBytes, u.MaxRSSBytes, u.MaxRSSPid, u.Samples = s.anon, s.rss, s.rssPid, s.n
	u.PeakAnonShmemBytes = s.anonShmem
	u.PeakChargedBytes = s.charged
	if u.PeakBytes < 0 {
		u.PeakBytes = max(s.current, u.CurrentBytes)
	}
	return u, errors.Join(errs...)
}

// cpuUsed reads usage_usec of cpu.stat in the group's first v2
// directory; 0 when it has none or the file cannot be read (a group of a
// pure v1 layout).
func (g *Group) cpuUsed() time.Duration {
	for i := range g.hs {
		if !g.hs[i].v2 {
			continue
		}
		st, err := readKeyed(g.hs[i].file("cpu.stat"))
		if err != nil {
			return 0
		}
		return time.Duration(st["usage_usec"]) * time.Microsecond
	}
	return 0
}

// runSampler samples every SampleInterval until ctx ends.
func (g *Group) runSampler(ctx context.Context) {
	defer close(g.samplerDone)
	if g.cfg.SampleInterval < 0 {
		return
	}
	t := time.NewTicker(g.cfg.SampleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.sample()
		}
	}
}

// sample reads the group's anonymous memory and the VmHWM of each of its
// processes, and keeps the maxima. Errors are ignored: processes come and
// go, and a missed sample only lowers a lower bound.
func (g *Group) sample() {
	mem := &g.hs[0]
	var s sampled
	if st, err := readKeyed(mem.file("memory.stat")); err == nil {
		s.anon = st[mem.anonKey()]
		s.anonShmem = s.anon + st[mem.shmemKey()]
		// The charge less the page cache of files on disk: anon, shmem,
		// kernel memory, socket and pipe buffers. v2's file and v1's
		// total_cache include shmem.
		cur, cache := int64(0), st["total_cache"]
		if mem.v2 {
			cur, _ = readInt(mem.file("memory.current"))
			cache = st["file"]
		} else {
			cur, _ = readInt(mem.file("memory.usage_in_bytes"))
		}
		s.charged = max(cur-cache+st[mem.shmemKey()], s.anonShmem)
	}
	if mem.v2 {
		s.current, _ = readInt(mem.file("memory.current"))
	}
	pids, _ := readPids(mem.file("cgroup.procs"))
	for _, pid := range pids {
		m, ok := procMemoryIn(pid, mem)
		if ok && m.HWM > s.rss {
			s.rss, s.rssPid = m.HWM, pid
		}
	}
	g.smu.Lock()
	defer g.smu.Unlock()
	g.samples.n++
	g.samples.anon = max(g.samples.anon, s.anon)
	g.samples.anonShmem = max(g.samples.anonShmem, s.anonShmem)
	g.samples.charged = max(g.samples.charged, s.charged)
	g.samples.current = max(g.samples.current, s.current)
	if s.rss > g.samples.rss {
		g.samples.rss, g.samples.rssPid = s.rss, s.rssPid
	}
}

// procMemoryIn reads the memory of process pid if it is (still) in the
// group of h. It opens /proc/<pid> once and reads both files through that
// directory fd, so a pid reused by another process between the read of
// cgroup.procs and now is seen as not in the group.
func procMemoryIn(pid int, h *hier) (procMemory, bool) {
	dfd, err := unix.Open("/proc/"+strconv.Itoa(pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procMemory{}, false
	}
	defer unix.Close(dfd)
	cg, err := readAt(dfd, "cgroup")
	if err != nil {
		return procMemory{}, false
	}
	own, err := parseProcCgroup(cg)
	if err != nil || !h.member(own) {
		return procMemory{}, false
	}
	st, err := readAt(dfd, "status")
	if err != nil {
		return procMemory{}, false
	}
	m, err := parseStatus(st)
	return m, err == nil
}

// readAt reads file name of directory dfd.
func readAt(dfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return io.ReadAll(f)
}

// Kill kills every process of the group, including those that left their
// session or parent (setsid, double fork), and returns once the group is
// empty. It takes a last sample first, so short-lived peaks of the
// processes alive at the end are not lost. How it kills depends on the
// layout: cgroup.kill of the v2 group (unified, hybrid), the v1 freezer
// (legacy: freeze, SIGKILL every process, thaw), or, failing both,
// SIGKILL to every listed process until none is left. A process killed by
// Kill is not counted in Usage.OOMKills.
func (g *Group) Kill(ctx context.Context) error {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return fmt.Errorf("kill: %w", ErrClosed)
	}
	g.sample()
	return killAll(ctx, g.log, g.hs)
}

// Close kills the group's processes, waits until it is empty, takes the
// final Usage reading, and removes every directory New made (the
// intermediate group too, when no other Group of this process uses it).
// If the group cannot be emptied before ctx ends, Close returns
// ErrNotEmpty and leaves the directories for a later Close or Cleanup.
// Closing twice is a no-op.
func (g *Group) Close(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.sample()
	if err := killAll(ctx, g.log, g.hs); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	g.stopSampler()
	<-g.samplerDone
	final, uerr := g.readUsage()
	if err := removeDirs(ctx, g.hs); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	g.final = final
	g.closed = true
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	for i := range g.hs {
		if g.hs[i].inter != "" {
			releaseInter(g.hs[i].interDir(), g.log)
		}
	}
	g.log.Debug("removed group", "path", g.Path(), "peak_bytes", final.PeakBytes,
		"max_rss_bytes", final.MaxRSSBytes, "oom_kills", final.OOMKills)
	if uerr != nil {
		return fmt.Errorf("close: final usage: %w", uerr)
	}
	return nil
}

// closeFD closes a raw fd.
func closeFD(fd int) error { return unix.Close(fd) }

// subtreeChange is what to write to cgroup.subtree_control to enable
// (sign "+") or disable ("-") the controllers cs.
func subtreeChange(sign string, cs []string) string {
	words := make([]string, len(cs))
	for i, c := range cs {
		words[i] = sign + c
	}
	return strings.Join(words, " ")
}
