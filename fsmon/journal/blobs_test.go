package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBlobsPutAndOpen(t *testing.T) {
	b := &Blobs{Dir: t.TempDir()}
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, []byte("from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		content string
		put     func() (string, int64, error)
	}{
		{"Put", "hello\n", func() (string, int64, error) { return b.Put(strings.NewReader("hello\n")) }},
		{"Put empty", "", func() (string, int64, error) { return b.Put(strings.NewReader("")) }},
		{"PutBytes", "bytes\x00\xff", func() (string, int64, error) {
			sha, err := b.PutBytes([]byte("bytes\x00\xff"))
			return sha, 7, err
		}},
		{"PutFile", "from a file\n", func() (string, int64, error) { return b.PutFile(src) }},
		{"Put large", strings.Repeat("0123456789abcdef", 1<<16), func() (string, int64, error) {
			return b.Put(strings.NewReader(strings.Repeat("0123456789abcdef", 1<<16)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sha, size, err := tt.put()
			if err != nil {
				t.Fatal(err)
			}
			if want := HashBytes([]byte(tt.content)); sha != want {
				t.Errorf("sha: got %s, want %s", sha, want)
			}
			if size != int64(len(tt.content)) {
				t.Errorf("size: got %d, want %d", size, len(tt.content))
			}
			if !b.Has(sha) {
				t.Errorf("Has(%s): got false, want true", sha)
			}
			if err := b.Verify(sha); err != nil {
				t.Errorf("Verify: %v", err)
			}
			rc, err := b.Open(sha)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(got) != tt.content {
				t.Errorf("Open: got %d bytes (%v), want %d", len(got), err, len(tt.content))
			}
			if p := filepath.Join(b.Dir, sha[:2], sha); !fileExists(p) {
				t.Errorf("blob not at %s", p)
			}
		})
	}
	if left := tempFiles(t, b.Dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func fileExists(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

// tempFiles lists the files directly in dir that are not blob
// directories.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestBlobsExistingIsNotRewritten(t *testing.T) {
	b := &Blobs{Dir: t.TempDir()}
	sha, err := b.PutBytes([]byte("same"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := b.Path(sha)
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode().Perm() != 0o444 {
		t.Errorf("blob mode: got %v, want read-only 0444", before.Mode().Perm())
	}
	for name, put := range map[string]func() error{
		"Put":      func() error { _, _, err := b.Put(strings.NewReader("same")); return err },
		"PutBytes": func() error { _, err := b.PutBytes([]byte("same")); return err },
		"PutFile": func() error {
			src := filepath.Join(t.TempDir(), "same")
			os.WriteFile(src, []byte("same"), 0o644)
			_, _, err := b.PutFile(src)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := put(); err != nil {
				t.Fatal(err)
			}
			after, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(before, after) {
				t.Errorf("blob %s was replaced by another file", sha)
			}
		})
	}
	if left := tempFiles(t, b.Dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestBlobsBadNames(t *testing.T) {
	b := &Blobs{Dir: t.TempDir()}
	// A file outside the store that a crafted name could reach.
	outside := filepath.Join(filepath.Dir(b.Dir), "secret")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"", "abc", "../secret", "../../" + strings.Repeat("a", 58),
		strings.ToUpper(EmptySHA256), EmptySHA256 + "0", "g" + EmptySHA256[1:],
	} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			if b.Has(name) {
				t.Errorf("Has: got true, want false")
			}
			if _, err := b.Open(name); !errors.Is(err, ErrBadSHA) {
				t.Errorf("Open: got %v, want ErrBadSHA", err)
			}
			if err := b.Verify(name); !errors.Is(err, ErrBadSHA) {
				t.Errorf("Verify: got %v, want ErrBadSHA", err)
			}
		})
	}
}

func TestBlobsVerifyFailures(t *testing.T) {
	b := &Blobs{Dir: t.TempDir()}
	good, err := b.PutBytes([]byte("original content"))
	if err != nil {
		t.Fatal(err)
	}
	corrupt, err := b.PutBytes([]byte("to be changed"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := b.Path(corrupt)
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte("to be chAnged"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := HashBytes([]byte("never stored"))
	tests := []struct {
		name string
		sha  string
		want error
	}{
		{"intact", good, nil},
		{"one byte changed", corrupt, ErrBlobCorrupt},
		{"missing", missing, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.Verify(tt.sha)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Verify: got %v, want %v", err, tt.want)
			}
			_, err = b.ReadAll(tt.sha)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("ReadAll: got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestBlobsStoredBeforeWritesNothing: storing a small file whose
// content the store has already makes, renames and removes no file in
// it (each would cost a new inode, and a removed one slows the file
// system's next allocations): its directories stay unchanged.
func TestBlobsStoredBeforeWritesNothing(t *testing.T) {
	b := &Blobs{Dir: t.TempDir()}
	content := bytes.Repeat([]byte("content "), 1000)
	sha, err := b.PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, content, 0o644); err != nil {
		t.Fatal(err)
	}
	blob, _ := b.Path(sha)
	dirs := []string{b.Dir, filepath.Dir(blob)}
	var before []time.Time
	for _, d := range dirs {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, st.ModTime())
	}
	// Past the file system's timestamp granularity.
	time.Sleep(20 * time.Millisecond)
	if got, _, err := b.PutFile(src); err != nil || got != sha {
		t.Fatalf("PutFile: got %s, %v; want %s", got, err, sha)
	}
	for i, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.ModTime().Equal(before[i]) {
			t.Errorf("%s changed: a file was made or removed in it", d)
		}
	}
}

func TestBlobsConcurrentPut(t *testing.T) {
	b := &Blobs{Dir: t.TempDir()}
	const goroutines, distinct = 8, 20
	var wg sync.WaitGroup
	shas := make([][]string, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < distinct; i++ {
				// Every goroutine stores the same contents, racing.
				content := bytes.Repeat([]byte{byte(i)}, 1000*(i+1))
				var sha string
				var err error
				if g%2 == 0 {
					sha, _, err = b.Put(bytes.NewReader(content))
				} else {
					sha, err = b.PutBytes(content)
				}
				if err != nil {
					t.Error(err)
					return
				}
				shas[g] = append(shas[g], sha)
			}
		}()
	}
	wg.Wait()
	for i := 0; i < distinct; i++ {
		want := HashBytes(bytes.Repeat([]byte{byte(i)}, 1000*(i+1)))
		for g := 0; g < goroutines; g++ {
			if len(shas[g]) != distinct || shas[g][i] != want {
				t.Fatalf("goroutine %d content %d: got %v, want %s", g, i, shas[g], want)
			}
		}
		if err := b.Verify(want); err != nil {
			t.Errorf("content %d: %v", i, err)
		}
	}
	if left := tempFiles(t, b.Dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
