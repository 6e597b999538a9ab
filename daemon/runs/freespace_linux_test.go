package runs

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"golang.org/x/sys/unix"
)

// freeSpace is a statfs that reports free bytes (in 4 KiB blocks).
func freeSpace(free int64) func(string, *unix.Statfs_t) error {
	return func(_ string, st *unix.Statfs_t) error {
		*st = unix.Statfs_t{Bsize: 4096, Bavail: uint64(free / 4096)}
		return nil
	}
}

func TestCheckFreeSpace(t *testing.T) {
	const disk = 1 << 30
	for _, tc := range []struct {
		name    string
		free    int64
		reserve int64
		full    bool
	}{
		{"plenty", 100 << 30, 0, false},
		{"the disk and the default reserve exactly", disk + DefaultReserveBytes, 0, false},
		{"a block short of the default reserve", disk + DefaultReserveBytes - 4096, 0, true},
		{"room for the disk, not the reserve", disk, 0, true},
		{"nothing free", 0, 0, true},
		{"a reserve of its own", disk + 64<<20, 64 << 20, false},
		{"check off", 0, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{cfg: Config{StateDir: t.TempDir(), ReserveBytes: tc.reserve, statfs: freeSpace(tc.free)}}
			err := e.checkFreeSpace(disk)
			if got := errors.Is(err, ErrDiskFull); got != tc.full {
				t.Errorf("got %v, want full %v", err, tc.full)
			}
		})
	}
	t.Run("statfs fails", func(t *testing.T) {
		e := &Engine{cfg: Config{StateDir: t.TempDir(), statfs: func(string, *unix.Statfs_t) error { return unix.EIO }}}
		if err := e.checkFreeSpace(disk); err == nil {
			t.Error("got no error from an unreadable file system, want one")
		}
	})
}

// TestDiskNearlyFull: on a nearly full disk an attempt ends with
// ErrDiskFull before its agent starts: no run phase, no work directory,
// and the agent's marker never written.
func TestDiskNearlyFull(t *testing.T) {
	e := newEngineWith(t, Config{statfs: freeSpace(512 << 20)})
	task := findTask(t, "rt-01")
	marker := t.TempDir() + "/ran"
	var mu sync.Mutex
	var phases []string
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := e.Run(ctx, Spec{AttemptID: "full1", Task: task, Agent: `sh -c 'touch ` + marker + `'`}, func(ev apitype.Event) {
		mu.Lock()
		defer mu.Unlock()
		phases = append(phases, ev.Phase)
	})
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("got %v, want ErrDiskFull", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range phases {
		if p == apitype.PhaseRun || p == apitype.PhaseMount {
			t.Errorf("phases %v: want the attempt refused before its view and agent", phases)
		}
	}
	if _, err := os.Stat(e.AttemptDir("full1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work directory of the refused attempt: got %v, want none", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agent's marker: got %v, want none (the agent must not start)", err)
	}
}
