package fsmon

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChmodNoFollowOldKernel: on a kernel without fchmodat2 (before
// Linux 6.6, where x/sys answers EOPNOTSUPP) the mode of a file or
// directory is still set, and a symlink's target is never changed.
func TestChmodNoFollowOldKernel(t *testing.T) {
	old := fchmodat
	fchmodat = func(int, string, uint32, int) error { return unix.EOPNOTSUPP }
	defer func() { fchmodat = old }()
	dir := t.TempDir()
	for _, p := range []string{"f", "d"} {
		if p == "d" {
			if err := os.Mkdir(filepath.Join(dir, p), 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("f", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	for _, name := range []string{"f", "d"} {
		if err := chmodNoFollow(dfd, name, 0o700); err != nil {
			t.Fatalf("chmod %s: %v", name, err)
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o700 {
			t.Errorf("%s: got mode %o, want 700", name, got)
		}
	}
	if err := chmodNoFollow(dfd, "l", 0o777); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("chmod of a symlink: got %v, want EOPNOTSUPP", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "f")); fi.Mode().Perm() != 0o700 {
		t.Errorf("the symlink's target changed to %o", fi.Mode().Perm())
	}
}
