package journal

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// tamperJournal is the journal the tampering tests start from:
//
//	1 mount
//	2 create src/new.py      3 open  4 write  5 release (new content)
//	6 unlink tests/test_counter.py, denied
//	7 open src/counter.py    8 write  9 release (v2)
//	10 rename README.md -> docs.md
//	11 unmount
func tamperJournal(t *testing.T) *workspace {
	t.Helper()
	ws := newWorkspace(t, map[string]string{
		"src/counter.py":        "v1\n",
		"tests/test_counter.py": "assert True\n",
		"README.md":             "readme\n",
	})
	ws.create("src/new.py", 0o644)
	ws.write("src/new.py", "new content\n")
	ws.denied(OpUnlink, "tests/test_counter.py")
	ws.write("src/counter.py", "v2\n")
	ws.rename("README.md", "docs.md")
	ws.unmount()
	if n := len(ws.recs); n != 11 {
		t.Fatalf("the journal has %d records, want 11", n)
	}
	return ws
}

// encodeLine is r's journal line, with r.Hash as it is.
func encodeLine(r Record) string {
	b := r.appendCanonical(nil)
	return string(b[:len(b)-2]) + r.Hash + "\"}\n"
}

func TestVerifyFileDetectsTampering(t *testing.T) {
	ws := tamperJournal(t)
	if err := VerifyFile(ws.path); err != nil {
		t.Fatalf("the intact journal: %v", err)
	}
	lines := ws.lines()
	join := func(ls []string) string {
		if len(ls) == 0 {
			return ""
		}
		return strings.Join(ls, "\n") + "\n"
	}
	// edited returns the journal with line n (1-based) replaced by f's.
	edited := func(n int, f func(string) string) func(t *testing.T, _ *Blobs) string {
		return func(t *testing.T, _ *Blobs) string {
			ls := append([]string{}, lines...)
			ls[n-1] = f(ls[n-1])
			return join(ls)
		}
	}
	replace := func(n int, old, new string) func(t *testing.T, _ *Blobs) string {
		return edited(n, func(l string) string {
			if !strings.Contains(l, old) {
				t.Fatalf("line %d has no %q: %s", n, old, l)
			}
			return strings.Replace(l, old, new, 1)
		})
	}
	lines2 := func(f func([]string) []string) func(t *testing.T, _ *Blobs) string {
		return func(t *testing.T, _ *Blobs) string { return join(f(append([]string{}, lines...))) }
	}
	// blobChanged changes one byte of blob sha in the case's copy of the
	// store and returns the unchanged journal.
	blobChanged := func(sha string) func(t *testing.T, blobs *Blobs) string {
		return func(t *testing.T, blobs *Blobs) string {
			p, err := blobs.Path(sha)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x20
			os.Chmod(p, 0o644)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return join(lines)
		}
	}
	blobRemoved := func(sha string) func(t *testing.T, blobs *Blobs) string {
		return func(t *testing.T, blobs *Blobs) string {
			p, _ := blobs.Path(sha)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			return join(lines)
		}
	}
	tests := []struct {
		name    string
		journal func(t *testing.T, blobs *Blobs) string
		seq     uint64
		line    int
		reason  string
	}{
		{name: "path edited", journal: replace(2, `"path":"src/new.py"`, `"path":"src/evil.py"`), seq: 2, line: 2, reason: "hash does not match its content"},
		{name: "decision edited", journal: replace(6, `"decision":"denied"`, `"decision":"ignored"`), seq: 6, line: 6, reason: "hash does not match its content"},
		{name: "result edited", journal: replace(6, `"result":"EACCES"`, `"result":"ENOENT"`), seq: 6, line: 6, reason: "hash does not match its content"},
		{name: "wall time edited", journal: replace(8, `"wall":"2026-11-29T18:00:00.012Z"`, `"wall":"2026-11-29T18:00:00.013Z"`), seq: 8, line: 8, reason: "hash does not match its content"},
		{name: "content hash edited", journal: edited(9, func(l string) string {
			r, err := parseLine([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			return strings.Replace(l, r.SHA256, HashBytes([]byte("v1\n")), 1)
		}), seq: 9, line: 9, reason: "hash does not match its content"},
		{name: "edited with its hash recomputed", journal: edited(2, func(l string) string {
			r, err := parseLine([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			r.Path = "src/evil.py"
			r.Hash = r.ComputeHash()
			return strings.TrimSuffix(encodeLine(r), "\n")
		}), seq: 3, line: 3, reason: "prev does not match the hash of record 2"},
		{name: "genesis prev edited", journal: replace(1, GenesisHash, strings.Repeat("1", 64)), seq: 1, line: 1, reason: "prev is not the genesis hash"},
		{name: "reordered", journal: lines2(func(ls []string) []string {
			ls[6], ls[7] = ls[7], ls[6]
			return ls
		}), seq: 8, line: 7, reason: "seq is 8, want 7"},
		{name: "deleted in the middle", journal: lines2(func(ls []string) []string {
			return append(ls[:4], ls[5:]...)
		}), seq: 6, line: 5, reason: "seq is 6, want 5"},
		{name: "duplicated", journal: lines2(func(ls []string) []string {
			return append(ls[:4], append([]string{ls[3]}, ls[4:]...)...)
		}), seq: 4, line: 5, reason: "seq is 4, want 5"},
		{name: "cut at the end", journal: lines2(func(ls []string) []string { return ls[:10] }),
			seq: 11, line: 11, reason: "missing: the journal ends after record 10 without an unmount record"},
		{name: "cut after the mount", journal: lines2(func(ls []string) []string { return ls[:1] }),
			seq: 2, line: 2, reason: "missing"},
		{name: "empty", journal: lines2(func(ls []string) []string { return nil }), seq: 1, line: 1, reason: "missing: the journal is empty"},
		{name: "cut inside the last line", journal: func(t *testing.T, _ *Blobs) string {
			return join(lines[:10]) + lines[10][:50]
		}, seq: 11, line: 11, reason: "does not parse"},
		{name: "line not canonical", journal: replace(4, `"op":"write"`, `"op": "write"`), seq: 4, line: 4, reason: "does not parse: not in canonical form"},
		{name: "written content blob changed", journal: blobChanged(HashBytes([]byte("new content\n"))),
			seq: 5, line: 5, reason: "blob content does not match its hash"},
		{name: "initial file blob changed", journal: blobChanged(HashBytes([]byte("assert True\n"))),
			seq: 1, line: 1, reason: "mount manifest file tests/test_counter.py"},
		{name: "written content blob missing", journal: blobRemoved(HashBytes([]byte("v2\n"))),
			seq: 9, line: 9, reason: "is missing"},
		{name: "final manifest blob changed", journal: func(t *testing.T, blobs *Blobs) string {
			return blobChanged(ws.recs[10].SHA256)(t, blobs)
		}, seq: 11, line: 11, reason: "blob content does not match its hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			blobs := &Blobs{Dir: BlobsDir(path)}
			copyDir(t, ws.w.Blobs().Dir, blobs.Dir)
			if err := os.WriteFile(path, []byte(tt.journal(t, blobs)), 0o644); err != nil {
				t.Fatal(err)
			}
			err := VerifyFile(path)
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *VerifyError", err)
			}
			if ve.Seq != tt.seq || ve.Line != tt.line || !strings.Contains(ve.Reason, tt.reason) {
				t.Errorf("got %q, want record %d (line %d) mentioning %q", err, tt.seq, tt.line, tt.reason)
			}
		})
	}
}

// copyDir copies the regular files and directories below src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o444)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVerifyWithoutBlobs checks that blobs == nil skips the blob checks
// that find a damaged blob otherwise.
func TestVerifyWithoutBlobs(t *testing.T) {
	ws := tamperJournal(t)
	p, _ := ws.w.Blobs().Path(HashBytes([]byte("new content\n")))
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(ws.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(recs, nil); err != nil {
		t.Errorf("without blobs: got %v, want nil", err)
	}
	var ve *VerifyError
	if err := Verify(recs, ws.w.Blobs()); !errors.As(err, &ve) || ve.Seq != 5 {
		t.Errorf("with blobs: got %v, want record 5 named", err)
	}
}

func TestVerifyRecordRules(t *testing.T) {
	mount := Record{Op: OpMount, Result: "ok", SHA256: EmptySHA256}
	unmount := Record{Op: OpUnmount, Result: "ok", SHA256: EmptySHA256}
	create := Record{Op: OpCreate, Path: "a", Result: "ok", Decision: Allowed}
	tests := []struct {
		name   string
		recs   []Record
		seq    uint64
		reason string
	}{
		{"valid", []Record{mount, create, unmount}, 0, ""},
		{"first record not a mount", []Record{create, unmount}, 1, `the first record is "create", want mount`},
		{"second mount", []Record{mount, mount, unmount}, 2, "mount record after record 1"},
		{"unmount in the middle", []Record{mount, unmount, create, unmount}, 2, "unmount record is not the last"},
		{"denied but ok", []Record{mount, {Op: OpUnlink, Path: "a", Result: "ok", Decision: Denied}, unmount}, 2, "denied operation recorded as ok"},
		{"a release may carry any decision", []Record{mount, {Op: OpRelease, Path: "a", Result: "ok", Decision: Denied, SHA256: EmptySHA256}, unmount}, 0, ""},
		{"no result", []Record{mount, {Op: OpUnlink, Path: "a"}, unmount}, 2, "no result"},
		{"bad sha256", []Record{mount, {Op: OpRelease, Path: "a", Result: "ok", SHA256: "ABC"}, unmount}, 2, "not 64 lowercase hex digits"},
		{"mount without manifest", []Record{{Op: OpMount, Result: "ok"}, unmount}, 1, "without a manifest hash"},
		{"unmount without manifest", []Record{mount, {Op: OpUnmount, Result: "ok"}}, 2, "without a manifest hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Create(filepath.Join(t.TempDir(), "j"))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var recs []Record
			for _, r := range tt.recs {
				got, err := w.Append(r)
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, got)
			}
			err = Verify(recs, nil)
			if tt.reason == "" {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Seq != tt.seq || ve.Line != int(tt.seq) || !strings.Contains(ve.Reason, tt.reason) {
				t.Errorf("got %v, want record %d mentioning %q", err, tt.seq, tt.reason)
			}
		})
	}
}

// TestRewrittenChainChangesHead shows what the chain proves: a journal
// rewritten from an edit on, every hash recomputed, verifies, but its
// head (the last Hash) differs from the original's, which is what a
// verifier holding the head compares.
func TestRewrittenChainChangesHead(t *testing.T) {
	ws := tamperJournal(t)
	recs, err := Read(ws.path)
	if err != nil {
		t.Fatal(err)
	}
	head := recs[len(recs)-1].Hash
	forged := append([]Record{}, recs...)
	forged[5].Decision, forged[5].Result = Allowed, "ok"
	for i := 5; i < len(forged); i++ {
		forged[i].Prev = forged[i-1].Hash
		forged[i].Hash = forged[i].ComputeHash()
	}
	if err := Verify(forged, ws.w.Blobs()); err != nil {
		t.Fatalf("the rewritten chain: got %v, want it to verify", err)
	}
	if got := forged[len(forged)-1].Hash; got == head {
		t.Errorf("the rewritten chain has the original head %s", head)
	}
}

func TestVerifyErrorMessage(t *testing.T) {
	err := &VerifyError{Seq: 17, Line: 17, Reason: "hash does not match its content"}
	if got, want := err.Error(), "record 17 (line 17): hash does not match its content"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestEveryFieldIsHashed changes each field of a record in turn, through
// reflection so that a field added to Record later is covered too: the
// canonical encoding must still be encoding/json's, and Verify must name
// the changed record.
func TestEveryFieldIsHashed(t *testing.T) {
	ws := tamperJournal(t)
	recs, err := Read(ws.path)
	if err != nil {
		t.Fatal(err)
	}
	const k = 6 // the denied unlink
	typ := reflect.TypeFor[Record]()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Name == "Hash" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			edited := append([]Record{}, recs...)
			v := reflect.ValueOf(&edited[k-1]).Elem().Field(i)
			switch v.Kind() {
			case reflect.String:
				v.SetString(v.String() + "x")
			case reflect.Uint32, reflect.Uint64:
				v.SetUint(v.Uint() + 1)
			case reflect.Int64:
				v.SetInt(v.Int() + 1)
			case reflect.Struct: // time.Time
				v.Set(reflect.ValueOf(edited[k-1].Wall.Add(time.Nanosecond)))
			default:
				t.Fatalf("field %s of kind %s: extend this test", f.Name, v.Kind())
			}
			r := edited[k-1]
			if got, want := string(r.appendCanonical(nil)), string(canonicalByJSON(t, r)); got != want {
				t.Errorf("canonical encoding:\ngot  %s\nwant %s", got, want)
			}
			var ve *VerifyError
			if err := Verify(edited, nil); !errors.As(err, &ve) || ve.Seq != r.Seq || ve.Line != k {
				t.Errorf("got %v, want line %d named", err, k)
			}
		})
	}
}
