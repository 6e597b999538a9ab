package fsmon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
)

// holdOpen opens n files of dir for writing, each with a byte in it,
// and closes them at the test's end.
func holdOpen(t testing.TB, dir string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := make([]*os.File, 0, n)
	t.Cleanup(func() {
		for _, f := range files {
			f.Close()
		}
	})
	for i := range n {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("h%05d", i)), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
		files = append(files, f)
		if _, err := f.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
	}
}

// sizeChecksPer returns the sizes of open files the budget checks
// asked during ops writes of a file (open with O_TRUNC, write, close),
// per write.
func sizeChecksPer(t testing.TB, v *View, p string, ops int) float64 {
	t.Helper()
	v.mu.Lock()
	before := v.sizeChecks
	v.mu.Unlock()
	for i := range ops {
		if err := os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return float64(v.sizeChecks-before) / float64(ops)
}

// TestBudgetCheckWorkFlat: each check of the blob budget (at an open
// for writing, a truncate) asks the size of at most sizeRefresh files
// open for writing, with one held open as with 5000: the work per
// request does not grow with the handles the agent holds, and what the
// held files hold is counted within held/sizeRefresh checks.
func TestBudgetCheckWorkFlat(t *testing.T) {
	for _, held := range []int{1, 5000} {
		t.Run(fmt.Sprint(held), func(t *testing.T) {
			v, mnt, w, _ := mountInternal(t, ModeContent, nil)
			defer w.Close()
			defer v.Unmount(t.Context())
			v.cfg.MaxOpenFiles = held + 100
			holdOpen(t, filepath.Join(mnt, "held"), held)
			per := sizeChecksPer(t, v, filepath.Join(mnt, "w.txt"), 200)
			// Two checks per write: the truncate's and the open's.
			if per > 2*sizeRefresh {
				t.Errorf("sizes asked per write with %d files held: got %.1f, want at most %d", held, per, 2*sizeRefresh)
			}
			if per == 0 {
				t.Errorf("sizes asked per write with %d files held: got 0, want the open files refreshed in turn", held)
			}
			// The held files' bytes, written behind the view, are
			// pending content all the same once every handle had its
			// turn: within held/sizeRefresh checks.
			var pending int64
			v.mu.Lock()
			for range (held + sizeRefresh - 1) / sizeRefresh {
				pending = v.pendingLocked(nil)
			}
			v.mu.Unlock()
			if pending < int64(held) {
				t.Errorf("pending content: got %d B, want at least %d (a byte per held file)", pending, held)
			}
		})
	}
}

// BenchmarkWriteManyHandles measures a write of a file (open with
// O_TRUNC, write, close) through the view with 5000 files held open for
// writing, against the same with one held, measured first in the same
// run, and reports the ratio:
//
//	CI=true go test -run '^$' -bench WriteManyHandles -benchtime 2000x ./fsmon/
func BenchmarkWriteManyHandles(b *testing.B) {
	testenv.Require(b, testenv.Root, testenv.FUSE)
	perWrite := func(held int) time.Duration {
		v, mnt, w, _ := mountInternal(b, ModeContent, nil)
		defer w.Close()
		defer v.Unmount(b.Context())
		v.cfg.MaxOpenFiles = held + 100
		holdOpen(b, filepath.Join(mnt, "held"), held)
		p := filepath.Join(mnt, "w.txt")
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := os.WriteFile(p, []byte("content"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start) / time.Duration(b.N)
	}
	one := perWrite(1)
	many := perWrite(5000)
	b.ReportMetric(float64(one.Nanoseconds()), "ns/write-1-held")
	b.ReportMetric(float64(many.Nanoseconds()), "ns/write-5000-held")
	b.ReportMetric(float64(many)/float64(one), "ratio")
}
