package journal

import (
	"path"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLongPaths: a tree whose relative paths are PATH_MAX-1 bytes long
// is snapshotted, observed at recovery and replayed, though the
// directory's own path in front of them passes PATH_MAX.
func TestLongPaths(t *testing.T) {
	dir := t.TempDir()
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)
	var p string
	for i := range 15 {
		p = path.Join(p, strings.Repeat(string(rune('a'+i)), 255))
		if err := unix.Mkdirat(root, p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := p + "/" + strings.Repeat("f", 255)
	link := p + "/" + strings.Repeat("l", 255)
	if len(file) != 4095 {
		t.Fatalf("test path: got %d bytes, want 4095", len(file))
	}
	write := func(content string) {
		t.Helper()
		fd, err := unix.Openat(root, file, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if _, err := unix.Write(fd, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	write("deep\n")
	if err := unix.Symlinkat("target", root, link); err != nil {
		t.Fatal(err)
	}

	blobs := &Blobs{Dir: t.TempDir()}
	tree, err := SnapshotTree(dir, blobs)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if e := tree[file]; e.Type != "file" || e.SHA256 != HashBytes([]byte("deep\n")) || e.Mode != 0o640 {
		t.Errorf("snapshot of the file: got %+v, want a file of mode 0640 holding %q", e, "deep\n")
	}
	if e := tree[link]; e.Type != "symlink" || e.Target != "target" {
		t.Errorf("snapshot of the link: got %+v, want a symlink to target", e)
	}
	if got := len(tree); got != 17 {
		t.Errorf("snapshot: got %d entries, want 17", got)
	}

	write("changed\n")
	observed, err := observe(tree, dir, blobs)
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	if len(observed) != 1 || observed[0].Path != file || observed[0].SHA256 != HashBytes([]byte("changed\n")) {
		t.Errorf("observe: got %+v, want one release of the changed file", observed)
	}

	dst := t.TempDir()
	recs := []Record{{Seq: 1, Op: OpMount, Result: "ok", SHA256: tree.ManifestHash()}}
	if err := Replay(recs, blobs, 1, dst); err != nil {
		t.Fatalf("replay: %v", err)
	}
	replayed, err := ScanTree(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(replayed, tree) {
		t.Errorf("replayed tree differs from the snapshot: got %d entries, want %d", len(replayed), len(tree))
	}
}
