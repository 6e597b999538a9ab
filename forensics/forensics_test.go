package forensics

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/modelgw"
)

// TestModelMessageFile holds the archive's names of the stored messages
// to the work directory's (modelgw.MessageName), which benchd copies.
func TestModelMessageFile(t *testing.T) {
	for _, resp := range []bool{false, true} {
		if got, want := ModelMessageFile(7, resp), ModelDir+modelgw.MessageName(7, resp); got != want {
			t.Errorf("ModelMessageFile(7, %v): got %q, want %q", resp, got, want)
		}
	}
}

// TestWriterLayout writes an archive with Writer and reads it back as
// Verify does: every entry where the layout says, with its content.
func TestWriterLayout(t *testing.T) {
	var buf bytes.Buffer
	mtime := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w := NewWriter(&buf, mtime)
	blob := []byte("print('hi')\n")
	sha := "0a" + string(bytes.Repeat([]byte("b"), 62))
	f := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(f, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	for _, err := range []error{
		w.PutJSON(AttemptFile, apitype.Attempt{ID: "a-1"}),
		w.Put(JournalFile, []byte("{}\n")),
		w.Put(StdoutFile, []byte("out")),
		w.PutStream(StderrFile, 3, func(w io.Writer) error { _, err := io.WriteString(w, "err"); return err }),
		w.PutBlob(sha, fh), // streamed: an *os.File
		w.PutBlob(sha[:63]+"c", bytes.NewReader(blob)), // read whole
		w.Close(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(t.TempDir(), "a.tar")
	if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root, n, err := unpack(archive, dir)
	if err != nil || n != 6 {
		t.Fatalf("unpack: got %d entries, %v; want 6", n, err)
	}
	for name, want := range map[string]string{
		AttemptFile:              "{\n  \"id\": \"a-1\",",
		JournalFile:              "{}\n",
		StdoutFile:               "out",
		StderrFile:               "err",
		BlobFile(sha):            string(blob),
		BlobFile(sha[:63] + "c"): string(blob),
	} {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.HasPrefix(got, []byte(want)) {
			t.Errorf("%s: got %q, want it to start with %q", name, got, want)
		}
	}
}

// TestPutStreamSize refuses a stream that gives more or fewer bytes than
// its entry's size: the archive is cut short, never wrong.
func TestPutStreamSize(t *testing.T) {
	for _, tt := range []struct {
		name    string
		content string
	}{{"more", "four"}, {"fewer", "tw"}} {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter(io.Discard, time.Time{})
			err := w.PutStream(JournalFile, 3, func(w io.Writer) error { _, err := io.WriteString(w, tt.content); return err })
			if err == nil {
				err = w.Close()
			}
			if err == nil {
				t.Errorf("a stream of %d bytes for an entry of 3: no error", len(tt.content))
			}
		})
	}
}
