package runs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"benchd.dev/internal/testenv"
	"golang.org/x/sys/unix"
)

// newWorkDir makes an attempt directory with a disk image and a final
// tree in its backing directory.
func newWorkDir(t *testing.T) AttemptDir {
	t.Helper()
	d := AttemptDir(t.TempDir())
	if err := os.MkdirAll(filepath.Join(d.Backing(), "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{d.DiskImage(), filepath.Join(d.Backing(), "src", "a.py"), d.Journal()} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestDropFinalTree(t *testing.T) {
	d := newWorkDir(t)
	if err := d.DropFinalTree(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d.DiskImage(), d.Backing()} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: got %v, want it gone", p, err)
		}
	}
	if _, err := os.Stat(d.Journal()); err != nil {
		t.Errorf("the journal: got %v, want it kept", err)
	}
	if err := d.DropFinalTree(); err != nil {
		t.Errorf("a second drop: got %v, want nothing to do", err)
	}
}

// TestDropFinalTreeMounted: a backing directory with a file system
// still mounted on it (a read of the disk going on) is left whole, and
// so is the image.
func TestDropFinalTreeMounted(t *testing.T) {
	testenv.Require(t, testenv.Root)
	d := newWorkDir(t)
	if err := unix.Mount("tmpfs", d.Backing(), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs on the backing directory: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(d.Backing(), unix.MNT_DETACH) })
	inside := filepath.Join(d.Backing(), "tree.py")
	if err := os.WriteFile(inside, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.DropFinalTree(); err == nil {
		t.Fatal("got no error with the backing directory mounted, want one")
	}
	for _, p := range []string{d.DiskImage(), inside} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: got %v, want it kept", p, err)
		}
	}
}
