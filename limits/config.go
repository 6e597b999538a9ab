package limits

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Layout is how the cgroup hierarchies of a host are arranged.
type Layout string

// The layouts this package knows.
const (
	// Unified: only cgroup v2, mounted at Root. Every controller lives in
	// the one hierarchy.
	Unified Layout = "unified"
	// Hybrid: the v1 controllers are mounted at Root/<controller> and a
	// cgroup v2 hierarchy without (our) controllers at Root/unified. The
	// v2 hierarchy is used for cgroup.kill and cgroup.events only.
	Hybrid Layout = "hybrid"
	// Legacy: only cgroup v1, at Root/<controller>. Kill uses the freezer.
	Legacy Layout = "legacy"
	// Unavailable: no cgroup filesystem at Root.
	Unavailable Layout = "unavailable"
)

// Defaults used where a Config field is left zero.
const (
	DefaultRoot           = "/sys/fs/cgroup"
	DefaultProcCgroup     = "/proc/self/cgroup"
	DefaultPrefix         = "benchd-"
	DefaultCPUPeriod      = 100 * time.Millisecond
	DefaultSampleInterval = 100 * time.Millisecond
)

// Config describes one group. Only the limits that are set are written;
// a zero limit means "no limit of our own" (the parent's still apply).
type Config struct {
	// Root is where the cgroup filesystems are mounted (default
	// /sys/fs/cgroup). Tests point it at a fake tree in a temporary
	// directory; they must then set Layout too.
	Root string

	// Layout forces a layout instead of detecting it. Empty means detect it
	// with containerd's cgroups.Mode(), which only looks at /sys/fs/cgroup,
	// so a Config with a non-default Root must set Layout. Forcing Legacy
	// on a hybrid host is supported: the v2 hierarchy is then not used and
	// Kill falls back to the v1 freezer.
	Layout Layout

	// ProcCgroup is the file that says which cgroups this process is in
	// (default /proc/self/cgroup).
	ProcCgroup string

	// Parent is the group, relative to each hierarchy's root, below which
	// the group is made ("/system.slice/benchd.service"). Empty means the
	// cgroup this process is in, hierarchy by hierarchy; on a unified host,
	// when that is a DefaultLeaf (see Delegate), its parent.
	Parent string

	// Intermediate is the name of the group of our own that is made when
	// the parent is a hierarchy's root, so that nothing is ever made at a
	// root. Default "benchd-<pid>". It is shared by every Group of this
	// process and removed when the last of them is closed.
	Intermediate string

	// Name is the group's directory name. Default
	// "benchd-<pid>-<sequence>". Names are [A-Za-z0-9._-]+.
	Name string

	// MemoryMax is the memory limit in bytes (v1 memory.limit_in_bytes and,
	// where swap is accounted, memory.memsw.limit_in_bytes; v2 memory.max
	// and memory.swap.max=0): swap is not a way around the limit.
	MemoryMax int64

	// PidsMax is the most tasks (processes and threads) the group may hold.
	PidsMax int64

	// CPUWeight is the group's share of contended CPU, 1..10000, 100 being
	// the default of every group (v2 cpu.weight; v1 cpu.shares =
	// weight*1024/100, so that 100 maps to v1's default 1024). On a
	// unified host whose cpu controller is not offered to the parent, a
	// weight alone (no CPUQuota) is dropped with a warning, not an error.
	CPUWeight uint64

	// CPUQuota is how much CPU time the group may use per CPUPeriod
	// (v2 cpu.max, v1 cpu.cfs_quota_us and cpu.cfs_period_us). 150ms per
	// 100ms period is one and a half CPUs.
	CPUQuota time.Duration

	// CPUPeriod is the period of CPUQuota, default 100ms.
	CPUPeriod time.Duration

	// SampleInterval is how often the sampler reads anon memory and the
	// VmHWM of every process of the group (default 100ms). Negative turns
	// the sampler off; Usage and Kill still take one sample each.
	SampleInterval time.Duration

	// Logger receives debug and warning records; nil discards them.
	Logger *slog.Logger
}

// needsCPU reports whether the cpu controller must be used.
func (c *Config) needsCPU() bool { return c.CPUWeight != 0 || c.CPUQuota != 0 }

// withDefaults returns c with its zero fields filled in and checks it.
// seq numbers the default names of this process's groups.
func (c Config) withDefaults(seq uint64) (Config, error) {
	if c.Root == "" {
		c.Root = DefaultRoot
	}
	if c.ProcCgroup == "" {
		c.ProcCgroup = DefaultProcCgroup
	}
	if c.Intermediate == "" {
		c.Intermediate = fmt.Sprintf("%s%d", DefaultPrefix, os.Getpid())
	}
	if c.Name == "" {
		c.Name = fmt.Sprintf("%s%d-%d", DefaultPrefix, os.Getpid(), seq)
	}
	if c.CPUPeriod == 0 {
		c.CPUPeriod = DefaultCPUPeriod
	}
	if c.SampleInterval == 0 {
		c.SampleInterval = DefaultSampleInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Root != DefaultRoot && c.Layout == "" {
		return c, fmt.Errorf("root %s needs an explicit layout: %w", c.Root, ErrInvalid)
	}
	switch c.Layout {
	case "", Unified, Hybrid, Legacy:
	default:
		return c, fmt.Errorf("layout %q: %w", c.Layout, ErrInvalid)
	}
	if err := checkName(c.Name); err != nil {
		return c, fmt.Errorf("group name: %w", err)
	}
	if err := checkName(c.Intermediate); err != nil {
		return c, fmt.Errorf("intermediate name: %w", err)
	}
	if c.Parent != "" && !strings.HasPrefix(c.Parent, "/") {
		return c, fmt.Errorf("parent %q is not absolute: %w", c.Parent, ErrInvalid)
	}
	if strings.Contains(c.Parent, "/../") || strings.HasSuffix(c.Parent, "/..") {
		return c, fmt.Errorf("parent %q climbs: %w", c.Parent, ErrInvalid)
	}
	switch {
	case c.MemoryMax < 0, c.PidsMax < 0, c.CPUQuota < 0, c.CPUPeriod < 0:
		return c, fmt.Errorf("negative limit: %w", ErrInvalid)
	case c.CPUWeight > 10000:
		return c, fmt.Errorf("cpu weight %d out of 1..10000: %w", c.CPUWeight, ErrInvalid)
	case c.CPUQuota != 0 && c.CPUQuota < time.Millisecond:
		return c, fmt.Errorf("cpu quota %v below 1ms: %w", c.CPUQuota, ErrInvalid)
	case c.CPUPeriod < time.Millisecond || c.CPUPeriod > time.Second:
		return c, fmt.Errorf("cpu period %v out of 1ms..1s: %w", c.CPUPeriod, ErrInvalid)
	}
	return c, nil
}

// checkName accepts a single, harmless path component.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 200 {
		return fmt.Errorf("%q: %w", name, ErrInvalid)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("%q has %q: %w", name, r, ErrInvalid)
		}
	}
	// Names of control files ("cgroup.procs", "memory.max") cannot be
	// groups; refuse anything that looks like one.
	if before, _, ok := strings.Cut(name, "."); ok && controlPrefixes[before] || controlPrefixes[name] {
		return fmt.Errorf("%q looks like a control file: %w", name, ErrInvalid)
	}
	return nil
}

// controlPrefixes are the names that control files start with (before the
// first dot), and v1's dotless control files.
var controlPrefixes = map[string]bool{
	"cgroup": true, "memory": true, "pids": true, "cpu": true, "cpuacct": true,
	"cpuset": true, "io": true, "blkio": true, "freezer": true, "hugetlb": true,
	"rdma": true, "misc": true, "devices": true, "net_cls": true, "net_prio": true,
	"tasks": true, "notify_on_release": true, "release_agent": true,
}

// cpuShares maps a v2 weight to v1 shares, linearly so that the defaults
// (weight 100, shares 1024) match, clamped to v1's range.
func cpuShares(weight uint64) uint64 {
	s := weight * 1024 / 100
	return min(max(s, 2), 262144)
}

// Usage is what a group used. Read it with Group.Usage; after Close it is
// the last reading, taken just before the directories were removed.
type Usage struct {
	// PeakBytes is the group's peak memory as the kernel charges it: anon
	// memory, page cache, and (v1) kernel memory. v1
	// memory.max_usage_in_bytes, v2 memory.peak. See the package doc.
	PeakBytes int64
	// CurrentBytes is the group's charge now (memory.usage_in_bytes,
	// memory.current).
	CurrentBytes int64
	// PeakAnonBytes is the largest anonymous memory of the group seen by
	// the sampler (v1 memory.stat total_rss, v2 anon): a lower bound.
	PeakAnonBytes int64
	// PeakAnonShmemBytes is the largest anonymous plus shared memory
	// (tmpfs and memfd files, shared anonymous mappings) seen in one
	// sampler reading (v1 total_rss + total_shmem, v2 anon + shmem): the
	// memory a process tree holds that is not page cache of files on
	// disk. A lower bound, like PeakAnonBytes.
	PeakAnonShmemBytes int64
	// PeakChargedBytes is the largest charge of the group less the page
	// cache of files on disk seen in one sampler reading (v2
	// memory.current - file + shmem, v1 usage_in_bytes - total_cache +
	// total_shmem): anonymous and shared memory, kernel memory, socket
	// and pipe buffers. A lower bound, like PeakAnonBytes.
	PeakChargedBytes int64
	// MaxRSSBytes is the largest VmHWM (peak resident set) of a single
	// process of the group seen by the sampler, and MaxRSSPid its pid (in
	// this process's pid namespace). A lower bound, see the package doc.
	MaxRSSBytes int64
	MaxRSSPid   int
	// OOMKills counts processes of the group killed by the OOM killer
	// (v1 memory.oom_control oom_kill, v2 memory.events oom_kill).
	OOMKills int64
	// MemoryLimitHits counts the times the group hit MemoryMax (v1
	// memory.failcnt, v2 memory.events max); reclaim of page cache also
	// counts, so a hit is not an OOM.
	MemoryLimitHits int64
	// PidsLimitHits counts forks refused by PidsMax (pids.events max).
	PidsLimitHits int64
	// Procs is how many processes are in the group now.
	Procs int
	// Samples is how many sampler passes PeakAnonBytes and MaxRSSBytes
	// rest on.
	Samples int
	// CPU is the CPU time (user and system) the group's tasks used: v2
	// cpu.stat usage_usec, which the kernel keeps whether or not the cpu
	// controller is enabled. 0 where the group has no v2 directory.
	CPU time.Duration
}
