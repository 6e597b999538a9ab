package limits

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// signalGrace is how long killAll trusts cgroup.kill or the freezer
// before it also signals the processes still listed, one by one.
const signalGrace = 2 * time.Second

// killAll kills every process in the groups hs and waits until all are
// empty or ctx ends.
func killAll(ctx context.Context, log *slog.Logger, hs []hier) error {
	if isEmpty(hs) {
		return nil
	}
	start := time.Now()
	trusted := false
	method := "signal"
	for i := range hs {
		h := &hs[i]
		if !h.v2 {
			continue
		}
		if _, err := os.Stat(h.file("cgroup.kill")); err != nil {
			continue // before Linux 5.14, or a vanished group
		}
		err := writeFile(h.file("cgroup.kill"), "1")
		switch {
		case err == nil:
			trusted, method = true, "cgroup.kill"
		case errors.Is(err, fs.ErrNotExist):
			// the group vanished meanwhile
		default:
			log.Warn("cgroup.kill failed", "dir", h.dir(), "err", err)
		}
	}
	if !trusted {
		for i := range hs {
			h := &hs[i]
			if h.ctrl != "freezer" {
				continue
			}
			if err := freezeKill(ctx, h); err != nil {
				log.Warn("freezer kill failed", "dir", h.dir(), "err", err)
				continue
			}
			trusted, method = true, "freezer"
		}
	}
	if !trusted {
		signalAll(hs)
	}
	delay := 200 * time.Microsecond
	for !isEmpty(hs) {
		if time.Since(start) > signalGrace {
			signalAll(hs)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("kill: %d processes left: %w (%w)", countProcs(hs), ErrNotEmpty, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Millisecond)
	}
	log.Debug("group emptied", "method", method, "took", time.Since(start))
	return nil
}

// freezeWait bounds how long freezeKill waits for a group to freeze; a
// group that stays FREEZING (a task the freezer cannot stop yet) is
// thawed and its processes are signalled one by one instead.
const freezeWait = 500 * time.Millisecond

// freezeKill freezes a v1 freezer group, sends SIGKILL to each of its
// processes while none can fork, and thaws it so the signals are taken.
func freezeKill(ctx context.Context, h *hier) error {
	ctx, cancel := context.WithTimeout(ctx, freezeWait)
	defer cancel()
	state := h.file("freezer.state")
	if err := writeFile(state, "FROZEN"); err != nil {
		return err
	}
	// Thawing is best effort: a group left frozen keeps its processes,
	// which killAll's wait then reports.
	defer func() { _ = writeFile(state, "THAWED") }()
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		b, err := os.ReadFile(state)
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(b)) == "FROZEN" {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("freeze %s: %w", h.dir(), ctx.Err())
		case <-time.After(delay):
		}
	}
	pids, err := readPids(h.file("cgroup.procs"))
	if err != nil {
		return err
	}
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	return nil
}

// signalAll sends SIGKILL to every process listed in any of the groups.
func signalAll(hs []hier) {
	for i := range hs {
		pids, _ := readPids(hs[i].file("cgroup.procs"))
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// isEmpty reports whether no process is left in any of the groups: a v2
// group's cgroup.events says "populated 0" (descendants included), a v1
// group's cgroup.procs is empty. A vanished group is empty.
func isEmpty(hs []hier) bool {
	for i := range hs {
		h := &hs[i]
		if h.v2 {
			ev, err := readKeyed(h.file("cgroup.events"))
			if err == nil {
				if ev["populated"] != 0 {
					return false
				}
				continue
			}
		}
		pids, err := readPids(h.file("cgroup.procs"))
		if err == nil && len(pids) > 0 {
			return false
		}
	}
	return true
}

// countProcs counts the processes listed in the groups, for errors.
func countProcs(hs []hier) int {
	n := 0
	for i := range hs {
		pids, _ := readPids(hs[i].file("cgroup.procs"))
		n += len(pids)
	}
	return n
}

// removeDirs removes the groups' directories, deepest first. The kernel
// may refuse (EBUSY) for a moment after the last process left; removeDirs
// retries until ctx ends. A directory already gone is fine.
func removeDirs(ctx context.Context, hs []hier) error {
	dirs := make([]string, 0, len(hs))
	for i := range hs {
		dirs = append(dirs, hs[i].dir())
	}
	slices.SortStableFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	var errs []error
	for _, d := range dirs {
		for delay := 100 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
			err := unix.Rmdir(d)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) {
				errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
				break
			}
			select {
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("remove %s: %w (%w)", d, ErrNotEmpty, ctx.Err()))
			case <-time.After(delay):
				continue
			}
			break
		}
	}
	return errors.Join(errs...)
}
