package fsmon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestSharedReadFiles: a small file's read-only opens share one backing
// descriptor, which still reads the file after it was unlinked; no more
// than the view's bound of them stay open with no handle using them,
// and none after unmount.
func TestSharedReadFiles(t *testing.T) {
	v, mnt, w, _ := mountInternal(t, ModeContent, func(backing string) {
		for i := range 6 {
			os.WriteFile(filepath.Join(backing, fmt.Sprintf("f%d", i)), []byte(fmt.Sprintf("content %d\n", i)), 0o644)
		}
	})
	defer w.Close()
	v.shared.mu.Lock()
	v.shared.max = 2
	v.shared.mu.Unlock()
	open := func() int {
		v.shared.mu.Lock()
		defer v.shared.mu.Unlock()
		return len(v.shared.nodes)
	}

	a, err := os.Open(filepath.Join(mnt, "f0"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.Open(filepath.Join(mnt, "f0"))
	if err != nil {
		t.Fatal(err)
	}
	if got := open(); got != 1 {
		t.Errorf("two handles of one file: %d shared descriptors, want 1", got)
	}
	if err := os.Remove(filepath.Join(mnt, "f0")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	a.Close()
	if n, err := b.ReadAt(buf, 0); string(buf[:n]) != "content 0\n" {
		t.Errorf("read after unlink: got %q (%v)", buf[:n], err)
	}
	b.Close()
	for i := 1; i < 6; i++ {
		if got, err := os.ReadFile(filepath.Join(mnt, fmt.Sprintf("f%d", i))); err != nil || string(got) != fmt.Sprintf("content %d\n", i) {
			t.Errorf("f%d: got %q (%v)", i, got, err)
		}
	}
	// The kernel sends the RELEASEs after close returns; the bound is
	// kept as each one ends. Unmount waits for none of them: it closes
	// what is left.
	if err := v.Unmount(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := open(); got != 0 {
		t.Errorf("after unmount: %d shared descriptors open, want 0", got)
	}
}
