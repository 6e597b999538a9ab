package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// allocated is the number of bytes the file at p has on disk.
func allocated(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestSparseBlobs: a sparse file (a 64 MiB hole, then data, then a hole
// to the end) is stored as a sparse blob with its true hash, replays as
// a sparse file, and hashes the same in a scan.
func TestSparseBlobs(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "sparse.bin")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	const hole = 64 << 20
	if _, err := f.WriteAt([]byte("data after a hole"), hole); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 * hole); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if allocated(t, src) > 1<<20 {
		t.Skipf("the file system of %s does not keep holes", dir)
	}
	// The true hash, of every byte.
	h := sha256.New()
	writeZeros(h, hole)
	h.Write([]byte("data after a hole"))
	writeZeros(h, hole-int64(len("data after a hole")))
	want := hex.EncodeToString(h.Sum(nil))

	blobs := &Blobs{Dir: filepath.Join(dir, "blobs")}
	os.Mkdir(blobs.Dir, 0o755)
	sha, size, err := blobs.PutFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if sha != want || size != 2*hole {
		t.Fatalf("PutFile: got %s size %d, want %s size %d", sha, size, want, int64(2*hole))
	}
	bp, _ := blobs.Path(sha)
	if got := allocated(t, bp); got > 1<<20 {
		t.Errorf("the blob of a sparse file has %d bytes allocated, want its holes kept", got)
	}
	if err := blobs.Verify(sha); err != nil {
		t.Errorf("Verify of the sparse blob: %v", err)
	}
	if got, err := HashFile(src); err != nil || got != want {
		t.Errorf("HashFile: got %s, %v; want %s", got, err, want)
	}

	// Replay: a tree of that one file.
	tree := Tree{"sparse.bin": {Path: "sparse.bin", Type: "file", Mode: 0o644, Size: 2 * hole, SHA256: sha}}
	manifest, err := blobs.PutBytes(tree.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{{Seq: 1, Op: OpMount, Result: "ok", SHA256: manifest, Prev: GenesisHash}}
	recs[0].Hash = recs[0].ComputeHash()
	dst := filepath.Join(dir, "replay")
	if err := Replay(recs, blobs, 1, dst); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dst, "sparse.bin")
	if got := allocated(t, out); got > 1<<20 {
		t.Errorf("the replayed sparse file has %d bytes allocated, want its holes kept", got)
	}
	if got, err := HashFile(out); err != nil || got != want {
		t.Errorf("replayed content: got %s, %v; want %s", got, err, want)
	}
}
