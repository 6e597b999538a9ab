package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A file of written zeros (no holes in it) is stored as a sparse blob
// that reads back as the same bytes: a run of zeros costs the store
// what a hole costs.
func TestPutFileZerosStoredSparse(t *testing.T) {
	dir := t.TempDir()
	b := &Blobs{Dir: filepath.Join(dir, "blobs")}
	if err := os.Mkdir(b.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const size = 32 << 20
	content := make([]byte, size)
	copy(content[5<<20:], "not zero") // a block of data inside the zeros
	copy(content[size-3:], "end")     // data in the last, partial block
	src := filepath.Join(dir, "zeros")
	if err := os.WriteFile(src, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := allocatedBytes(t, src); got < size {
		t.Fatalf("the source has %d bytes allocated, want the %d written (the test needs a dense file)", got, size)
	}
	sha, n, err := b.PutFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if n != size || sha != HashBytes(content) {
		t.Fatalf("got %d bytes hashed %s, want %d hashed %s", n, sha, size, HashBytes(content))
	}
	p, _ := b.Path(sha)
	if got := allocatedBytes(t, p); got > 1<<20 {
		t.Errorf("the blob of 32 MiB of zeros has %d bytes allocated, want under 1 MiB", got)
	}
	back, err := b.ReadAll(sha)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, content) {
		t.Fatal("the blob does not read back as the file's bytes")
	}
	if err := b.Verify(sha); err != nil {
		t.Fatal(err)
	}
}

// allZero tells a block of zeros from one with any other byte in it.
func TestAllZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"empty", nil, true},
		{"zeros longer than the buffer", make([]byte, len(zeros)*2+17), true},
		{"a one at the end", append(make([]byte, len(zeros)+5), 1), false},
		{"a one at the start", append([]byte{1}, make([]byte, 9)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allZero(tc.p); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func allocatedBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}
