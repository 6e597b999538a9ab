package fsmon

import (
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"benchd.dev/fsmon/journal"
)

// TestStorePathFollowsNoLink: the content a truncate by path records is
// read through no link, at any component: a directory or a file of the
// tree swapped for a link to outside it is refused, not read.
func TestStorePathFollowsNoLink(t *testing.T) {
	backing, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("not the agent's"), 0o600)
	os.Mkdir(filepath.Join(backing, "src"), 0o755)
	os.WriteFile(filepath.Join(backing, "src", "f.py"), []byte("x = 1\n"), 0o644)
	os.Symlink(outside, filepath.Join(backing, "linkdir"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(backing, "src", "link.py"))
	syscall.Mkfifo(filepath.Join(backing, "src", "fifo"), 0o644)
	root, err := unix.Open(backing, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(root) })
	v := &View{backingReal: backing, rootFd: root, blobs: &journal.Blobs{Dir: t.TempDir()}, log: slog.New(slog.DiscardHandler)}

	sum, size, errno := v.storePath("src/f.py")
	if errno != 0 || sum != journal.HashBytes([]byte("x = 1\n")) || size != 6 {
		t.Errorf("src/f.py: got %s, %d, %v; want its content stored", sum, size, errno)
	}
	for _, rel := range []string{"linkdir/secret", "src/link.py", "src/fifo", "src/missing.py"} {
		if sum, _, errno := v.storePath(rel); errno == 0 {
			t.Errorf("%s: stored %s, want a refusal", rel, sum)
		}
	}
}
