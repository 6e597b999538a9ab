package limits

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/cgroups/v3"
)

// Mode reports the cgroup layout of this host, detected once with
// containerd's cgroups.Mode() (which looks at /sys/fs/cgroup).
func Mode() Layout {
	switch cgroups.Mode() {
	case cgroups.Unified:
		return Unified
	case cgroups.Hybrid:
		return Hybrid
	case cgroups.Legacy:
		return Legacy
	}
	return Unavailable
}

// hier is one hierarchy a group lives in: a v1 controller's, or the v2
// one. Paths named rel are relative to the hierarchy's root and start
// with "/", as in /proc/<pid>/cgroup.
type hier struct {
	ctrl   string // v1 controller ("memory", "pids", "cpu", "freezer"); "" for v2
	v2     bool
	mount  string // absolute directory of the hierarchy's root
	parent string // the parent group
	inter  string // our intermediate group between a root parent and the group; "" if none
	rel    string // the group
}

// label names the hierarchy in errors and logs.
func (h *hier) label() string {
	if h.v2 {
		return "unified"
	}
	return h.ctrl
}

func (h *hier) dir() string                { return filepath.Join(h.mount, h.rel) }
func (h *hier) file(name string) string    { return filepath.Join(h.mount, h.rel, name) }
func (h *hier) interDir() string           { return filepath.Join(h.mount, h.inter) }
func (h *hier) parentDir() string          { return filepath.Join(h.mount, h.parent) }
func (h *hier) member(own ownCgroups) bool { return within(h.ownPath(own), h.rel) }

// anonKey is the memory.stat key of the group's anonymous memory,
// descendants included.
func (h *hier) anonKey() string {
	if h.v2 {
		return "anon"
	}
	return "total_rss"
}

// shmemKey is the memory.stat key of the group's shared memory (tmpfs,
// memfd, shared anonymous mappings).
func (h *hier) shmemKey() string {
	if h.v2 {
		return "shmem"
	}
	return "total_shmem"
}

// ownPath is a process's path in this hierarchy, per /proc/<pid>/cgroup.
func (h *hier) ownPath(own ownCgroups) string {
	if h.v2 {
		return own.unified
	}
	return own.v1[h.ctrl]
}

// within reports whether cgroup path p is rel or below it.
func within(p, rel string) bool {
	return p == rel || len(p) > len(rel) && p[:len(rel)] == rel && p[len(rel)] == '/'
}

// plan decides the hierarchies, parents and paths of a group, without
// touching anything but to check that each hierarchy is mounted. The
// first hierarchy is the primary one: memory on v1, the only one on v2;
// on hybrid the last is the v2 hierarchy used to kill.
func plan(cfg Config, layout Layout, own ownCgroups) ([]hier, error) {
	var hs []hier
	switch layout {
	case Unified:
		if !own.hasV2 {
			return nil, fmt.Errorf("%s has no cgroup v2 entry: %w", cfg.ProcCgroup, ErrUnavailable)
		}
		hs = append(hs, hier{v2: true, mount: cfg.Root, parent: DelegatedParent(own.unified)})
	case Hybrid, Legacy:
		ctrls := []string{"memory", "pids"}
		if cfg.needsCPU() {
			ctrls = append(ctrls, "cpu")
		}
		if layout == Legacy {
			ctrls = append(ctrls, "freezer")
		}
		for _, c := range ctrls {
			p, ok := own.v1[c]
			if !ok {
				return nil, fmt.Errorf("%s in %s: %w", c, cfg.ProcCgroup, ErrNoController)
			}
			hs = append(hs, hier{ctrl: c, mount: filepath.Join(cfg.Root, c), parent: p})
		}
		if layout == Hybrid {
			if !own.hasV2 {
				return nil, fmt.Errorf("%s has no cgroup v2 entry on a hybrid host: %w", cfg.ProcCgroup, ErrUnavailable)
			}
			hs = append(hs, hier{v2: true, mount: filepath.Join(cfg.Root, "unified"), parent: own.unified})
		}
	default:
		return nil, fmt.Errorf("layout %q: %w", layout, ErrUnavailable)
	}
	for i := range hs {
		h := &hs[i]
		if fi, err := os.Stat(h.mount); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s hierarchy not mounted at %s: %w", h.label(), h.mount, ErrNoController)
		}
		if cfg.Parent != "" {
			h.parent = cfg.Parent
		}
		h.parent = path.Clean(h.parent)
		if h.parent == "/" {
			h.inter = path.Join("/", cfg.Intermediate)
			h.rel = path.Join(h.inter, cfg.Name)
		} else {
			h.rel = path.Join(h.parent, cfg.Name)
		}
	}
	return hs, nil
}

// v2Controllers are the controllers a unified group needs enabled.
func v2Controllers(cfg Config) []string {
	c := []string{"memory", "pids"}
	if cfg.needsCPU() {
		c = append(c, "cpu")
	}
	return c
}

// limitWrites are the files and values that set cfg's limits in
// hierarchy h, in the order they must be written. Optional writes (swap
// files that exist only where swap is accounted) are skipped when the file
// is missing.
type limitWrite struct {
	file     string
	value    string
	optional bool
}

func limitWrites(cfg Config, h *hier, layout Layout) []limitWrite {
	var w []limitWrite
	add := func(file, value string, optional bool) { w = append(w, limitWrite{file, value, optional}) }
	if h.v2 {
		if layout != Unified {
			return nil // hybrid's v2 hierarchy has no controllers of ours
		}
		if cfg.MemoryMax > 0 {
			add("memory.max", fmt.Sprint(cfg.MemoryMax), false)
			add("memory.swap.max", "0", true)
		}
		if cfg.PidsMax > 0 {
			add("pids.max", fmt.Sprint(cfg.PidsMax), false)
		}
		if cfg.CPUWeight > 0 {
			add("cpu.weight", fmt.Sprint(cfg.CPUWeight), false)
		}
		if cfg.CPUQuota > 0 {
			add("cpu.max", fmt.Sprintf("%d %d", cfg.CPUQuota.Microseconds(), cfg.CPUPeriod.Microseconds()), false)
		}
		return w
	}
	switch h.ctrl {
	case "memory":
		if cfg.MemoryMax > 0 {
			add("memory.limit_in_bytes", fmt.Sprint(cfg.MemoryMax), false)
			add("memory.memsw.limit_in_bytes", fmt.Sprint(cfg.MemoryMax), true)
		}
	case "pids":
		if cfg.PidsMax > 0 {
			add("pids.max", fmt.Sprint(cfg.PidsMax), false)
		}
	case "cpu":
		if cfg.CPUWeight > 0 {
			add("cpu.shares", fmt.Sprint(cpuShares(cfg.CPUWeight)), false)
		}
		if cfg.CPUQuota > 0 {
			add("cpu.cfs_period_us", fmt.Sprint(cfg.CPUPeriod.Microseconds()), false)
			add("cpu.cfs_quota_us", fmt.Sprint(cfg.CPUQuota.Microseconds()), false)
		}
	}
	return w
}

// missingControllers returns the controllers of want that the
// space-separated list have lacks.
func missingControllers(have string, want []string) []string {
	var missing []string
	fields := strings.Fields(have)
	for _, c := range want {
		if !slices.Contains(fields, c) {
			missing = append(missing, c)
		}
	}
	return missing
}
