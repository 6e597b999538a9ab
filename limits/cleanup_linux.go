package limits

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Cleanup removes what a crashed process left behind: every group whose
// name starts with prefix, below the parent that New would use (or below
// the intermediate groups there, when the parent is a hierarchy's root),
// in every hierarchy (memory, pids, cpu, freezer, v2). Their processes are
// killed first, as by Kill. Empty intermediate groups are removed too.
//
// With the default Config.Intermediate ("benchd-<pid>"), Cleanup looks in
// the intermediates of this process and of processes that no longer exist;
// those of live processes (another daemon, another test binary) are left
// alone. Below the parent itself it cannot tell whose a group is: the
// caller must make sure that no live process owns a group with that prefix
// (`benchd cleanup` runs before the daemon makes any group).
func Cleanup(ctx context.Context, cfg Config, prefix string) error {
	if err := checkName(prefix); err != nil {
		return fmt.Errorf("cleanup prefix: %w", err)
	}
	customInter := cfg.Intermediate != ""
	cfg, err := cfg.withDefaults(0)
	if err != nil {
		return err
	}
	layout := cfg.Layout
	if layout == "" {
		layout = Mode()
	}
	if layout == Unavailable {
		return fmt.Errorf("cleanup: %w", ErrUnavailable)
	}
	own, err := readProcCgroup(cfg.ProcCgroup)
	if err != nil {
		return err
	}
	bases, err := cleanupBases(cfg, layout, own, customInter)
	if err != nil {
		return err
	}
	victims, err := cleanupTargets(bases, prefix)
	if err != nil {
		return err
	}
	log := cfg.Logger.With("component", "limits")
	if len(victims) > 0 {
		log.Info("removing leftover groups", "count", len(victims), "prefix", prefix)
	}
	if err := killAll(ctx, log, victims); err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	if err := removeDirs(ctx, victims); err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	interMu.Lock()
	defer interMu.Unlock()
	for i := range bases {
		b := &bases[i]
		if b.inter == "" || interRefs[b.dir()] > 0 {
			continue
		}
		err := unix.Rmdir(b.dir())
		switch {
		case err == nil:
			log.Debug("removed intermediate group", "dir", b.dir())
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EBUSY):
			// gone already, or holds groups that are not ours to remove
		default:
			return fmt.Errorf("cleanup: remove %s: %w", b.dir(), err)
		}
	}
	return nil
}

// cleanupBases lists the directories below which Cleanup looks for
// groups: in every hierarchy the layout may have used, the parent or, at a
// root, the intermediate groups (inter set) that are ours to clean.
func cleanupBases(cfg Config, layout Layout, own ownCgroups, customInter bool) ([]hier, error) {
	var hs []hier
	switch layout {
	case Unified:
		hs = append(hs, hier{v2: true, mount: cfg.Root, parent: DelegatedParent(own.unified)})
	case Hybrid, Legacy:
		for _, c := range []string{"memory", "pids", "cpu", "freezer"} {
			if p, ok := own.v1[c]; ok {
				hs = append(hs, hier{ctrl: c, mount: filepath.Join(cfg.Root, c), parent: p})
			}
		}
		if layout == Hybrid && own.hasV2 {
			hs = append(hs, hier{v2: true, mount: filepath.Join(cfg.Root, "unified"), parent: own.unified})
		}
	default:
		return nil, fmt.Errorf("layout %q: %w", layout, ErrUnavailable)
	}
	var bases []hier
	for _, h := range hs {
		if fi, err := os.Stat(h.mount); err != nil || !fi.IsDir() {
			continue
		}
		if cfg.Parent != "" {
			h.parent = cfg.Parent
		}
		h.parent = path.Clean(h.parent)
		if h.parent != "/" {
			h.rel = h.parent
			bases = append(bases, h)
			continue
		}
		if customInter {
			h.inter = path.Join("/", cfg.Intermediate)
			h.rel = h.inter
			bases = append(bases, h)
			continue
		}
		ents, err := os.ReadDir(h.mount)
		if err != nil {
			return nil, fmt.Errorf("cleanup: list %s: %w", h.mount, err)
		}
		for _, e := range ents {
			if !e.IsDir() || !ownedIntermediate(e.Name()) {
				continue
			}
			b := h
			b.inter = "/" + e.Name()
			b.rel = b.inter
			bases = append(bases, b)
		}
	}
	return bases, nil
}

// ownedIntermediate reports whether name is a default intermediate group
// ("benchd-<pid>") of this process or of a process that no longer exists.
func ownedIntermediate(name string) bool {
	digits, ok := strings.CutPrefix(name, DefaultPrefix)
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != digits {
		return false
	}
	return pid == os.Getpid() || !pidAlive(pid)
}

// pidAlive reports whether a process with this pid exists.
func pidAlive(pid int) bool {
	return !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// cleanupTargets lists the groups below bases whose names start with
// prefix, with every group below them.
func cleanupTargets(bases []hier, prefix string) ([]hier, error) {
	var out []hier
	for _, b := range bases {
		ents, err := os.ReadDir(b.dir())
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cleanup: list %s: %w", b.dir(), err)
		}
		for _, e := range ents {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
				continue
			}
			top := path.Join(b.rel, e.Name())
			err := filepath.WalkDir(filepath.Join(b.mount, top), func(p string, d os.DirEntry, err error) error {
				if err != nil {
					if errors.Is(err, os.ErrNotExist) {
						return nil
					}
					return err
				}
				if !d.IsDir() {
					return nil
				}
				rel, err := filepath.Rel(b.mount, p)
				if err != nil {
					return err
				}
				v := hier{ctrl: b.ctrl, v2: b.v2, mount: b.mount, parent: b.rel, rel: "/" + filepath.ToSlash(rel)}
				out = append(out, v)
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("cleanup: walk %s: %w", top, err)
			}
		}
	}
	return out, nil
}
