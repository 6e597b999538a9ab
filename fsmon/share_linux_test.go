package fsmon

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestMaxOpenFilesFor: the views that run at once, each holding its
// whole share, leave the process at least a quarter of its descriptors,
// and more views never get more each.
func TestMaxOpenFilesFor(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	prev := MaxOpenFilesFor(0)
	if prev != MaxOpenFilesFor(1) {
		t.Errorf("MaxOpenFilesFor(0) = %d, want the one-view share %d", prev, MaxOpenFilesFor(1))
	}
	for _, n := range []int{1, 2, 4, 16, 64} {
		share := MaxOpenFilesFor(n)
		if share > prev {
			t.Errorf("%d views get %d each, more than fewer views got (%d)", n, share, prev)
		}
		prev = share
		if share == 256 {
			continue // the floor: a tiny limit cannot be split further
		}
		if total := uint64(share) * uint64(n); total > rl.Cur/4*3 {
			t.Errorf("%d views of %d descriptors hold %d of %d: more than three quarters", n, share, total, rl.Cur)
		}
	}
	if DefaultMaxOpenFiles() != MaxOpenFilesFor(SharedViews) {
		t.Errorf("DefaultMaxOpenFiles() = %d, want MaxOpenFilesFor(%d) = %d", DefaultMaxOpenFiles(), SharedViews, MaxOpenFilesFor(SharedViews))
	}
}
