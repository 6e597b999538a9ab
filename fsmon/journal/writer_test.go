package journal

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// workspace is a real directory whose changes a test makes and journals
// the way fsmon would, keeping the true tree after every record so that
// replays can be checked against the file system rather than against
// expectations written by hand.
type workspace struct {
	t     *testing.T
	dir   string // the workspace
	path  string // the journal file
	w     *Writer
	recs  []Record
	truth map[uint64]Tree // ScanTree of dir right after each record
	clock time.Time
}

// newWorkspace creates a workspace holding files (path -> content; a
// path ending in "/" is a directory), a journal and its mount record.
func newWorkspace(t *testing.T, files map[string]string) *workspace {
	t.Helper()
	root := t.TempDir()
	ws := &workspace{
		t:     t,
		dir:   filepath.Join(root, "ws"),
		path:  filepath.Join(root, "journal.jsonl"),
		truth: map[uint64]Tree{},
		clock: time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC),
	}
	if err := os.Mkdir(ws.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws.dir, files)
	w, err := Create(ws.path)
	if err != nil {
		t.Fatal(err)
	}
	ws.w = w
	initial, err := SnapshotTree(ws.dir, w.Blobs())
	if err != nil {
		t.Fatal(err)
	}
	ws.append(Record{Op: OpMount, Result: "ok", SHA256: initial.ManifestHash()})
	return ws
}

// writeFiles creates files (path -> content, "dir/" for a directory)
// below dir with modes 0644 and 0755.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		fp := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, "/")))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(fp, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(fp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(fp, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// append journals r as fsmon would (times, default result and decision)
// and records the true tree after it.
func (ws *workspace) append(r Record) Record {
	ws.t.Helper()
	ws.clock = ws.clock.Add(1500 * time.Microsecond)
	r.Wall = ws.clock
	r.Mono = int64(len(ws.recs)) * 1500000
	r.PID, r.UID, r.Comm = 4242, 1000, "python3"
	if r.Result == "" {
		r.Result = "ok"
	}
	if r.Decision == "" && r.Op != OpMount && r.Op != OpUnmount && r.Op != OpRelease {
		r.Decision = Allowed
	}
	got, err := ws.w.Append(r)
	if err != nil {
		ws.t.Fatal(err)
	}
	ws.recs = append(ws.recs, got)
	truth, err := ScanTree(ws.dir)
	if err != nil {
		ws.t.Fatal(err)
	}
	ws.truth[got.Seq] = truth
	return got
}

func (ws *workspace) fp(p string) string { return filepath.Join(ws.dir, filepath.FromSlash(p)) }

func (ws *workspace) check(err error) {
	ws.t.Helper()
	if err != nil {
		ws.t.Fatal(err)
	}
}

// create makes an empty file with mode.
func (ws *workspace) create(p string, mode os.FileMode) {
	ws.t.Helper()
	f, err := os.OpenFile(ws.fp(p), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	ws.check(err)
	ws.check(f.Close())
	ws.check(os.Chmod(ws.fp(p), mode))
	ws.append(Record{Op: OpCreate, Path: p, Mode: uint32(mode) | modeTypeRegular, Flags: uint32(os.O_WRONLY | os.O_CREATE | os.O_EXCL)})
}

// write replaces p's content as an open(O_TRUNC), a write and a release.
// The write record is journaled before the bytes reach the disk, so the
// true tree at the write record still has the content of before: what
// the journal knows at that point.
func (ws *workspace) write(p, content string) {
	ws.t.Helper()
	ws.check(os.Truncate(ws.fp(p), 0))
	ws.append(Record{Op: OpOpen, Path: p, Flags: uint32(os.O_WRONLY | os.O_TRUNC)})
	ws.append(Record{Op: OpWrite, Path: p, Offset: 0, Size: int64(len(content))})
	f, err := os.OpenFile(ws.fp(p), os.O_WRONLY, 0)
	ws.check(err)
	_, err = f.WriteString(content)
	ws.check(err)
	ws.check(f.Close())
	sha, size, err := ws.w.Blobs().PutFile(ws.fp(p))
	ws.check(err)
	ws.append(Record{Op: OpRelease, Path: p, SHA256: sha, Size: size})
}

func (ws *workspace) mkdir(p string, mode os.FileMode) {
	ws.t.Helper()
	ws.check(os.Mkdir(ws.fp(p), mode))
	ws.check(os.Chmod(ws.fp(p), mode))
	ws.append(Record{Op: OpMkdir, Path: p, Mode: uint32(mode)})
}

func (ws *workspace) symlink(target, p string) {
	ws.t.Helper()
	ws.check(os.Symlink(target, ws.fp(p)))
	ws.append(Record{Op: OpSymlink, Path: p, Target: target})
}

func (ws *workspace) link(old, new string) {
	ws.t.Helper()
	ws.check(os.Link(ws.fp(old), ws.fp(new)))
	ws.append(Record{Op: OpLink, Path: old, Path2: new})
}

func (ws *workspace) rename(old, new string) {
	ws.t.Helper()
	ws.check(os.Rename(ws.fp(old), ws.fp(new)))
	ws.append(Record{Op: OpRename, Path: old, Path2: new})
}

func (ws *workspace) unlink(p string) {
	ws.t.Helper()
	ws.check(os.Remove(ws.fp(p)))
	ws.append(Record{Op: OpUnlink, Path: p})
}

func (ws *workspace) rmdir(p string) {
	ws.t.Helper()
	ws.check(os.Remove(ws.fp(p)))
	ws.append(Record{Op: OpRmdir, Path: p})
}

func (ws *workspace) chmod(p string, mode os.FileMode) {
	ws.t.Helper()
	ws.check(os.Chmod(ws.fp(p), mode))
	ws.append(Record{Op: OpChmod, Path: p, Mode: uint32(mode)})
}

// denied journals an attempt the policy refused: nothing changes.
func (ws *workspace) denied(op Op, p string) {
	ws.t.Helper()
	ws.append(Record{Op: op, Path: p, Result: "EACCES", Decision: Denied})
}

// unmount snapshots the final tree, appends the unmount record, closes
// the journal and returns the records.
func (ws *workspace) unmount() []Record {
	ws.t.Helper()
	final, err := SnapshotTree(ws.dir, ws.w.Blobs())
	ws.check(err)
	ws.append(Record{Op: OpUnmount, Result: "ok", SHA256: final.ManifestHash()})
	ws.check(ws.w.Close())
	return ws.recs
}

// lines returns the journal file's lines (without newlines).
func (ws *workspace) lines() []string {
	ws.t.Helper()
	b, err := os.ReadFile(ws.path)
	ws.check(err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// canonicalByJSON is the canonical encoding as the package doc defines
// it, computed with encoding/json: the reference the fast encoder must
// match.
func canonicalByJSON(t *testing.T, r Record) []byte {
	t.Helper()
	r.Hash = ""
	r.Wall = r.Wall.UTC()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCanonicalEncodingMatchesEncodingJSON(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	full := Record{
		Seq: 1<<64 - 1, Mono: -5, Wall: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC),
		Op: OpRename, Path: "src/a.py", Path2: "src/b.py", Target: "../t", PID: 1<<32 - 1, UID: 7,
		Comm: "python3", Offset: -1, Size: 1 << 40, Mode: 0o100644, Flags: 3, Name: "user.x",
		Result: "ok", Decision: Ignored, SHA256: EmptySHA256, Prev: GenesisHash, Hash: "ignored",
	}
	tests := []struct {
		name string
		rec  Record
	}{
		{"zero record", Record{}},
		{"every field set", full},
		{"wall in another zone", Record{Op: OpWrite, Wall: time.Date(2026, 6, 1, 12, 0, 0, 123456789, paris)}},
		{"wall with a monotonic reading", Record{Op: OpWrite, Wall: time.Now()}},
		{"wall trailing zeros", Record{Op: OpWrite, Wall: time.Date(2026, 6, 1, 12, 0, 0, 120000000, time.UTC)}},
		{"html characters", Record{Op: OpCreate, Path: "a<b>&c.txt", Result: "ok"}},
		{"quotes and backslashes", Record{Op: OpCreate, Path: `a"b\c`, Target: `\\`}},
		{"control characters", Record{Op: OpCreate, Path: "a\nb\tc\rd\x01e\x1f\bf\fg\x7f"}},
		{"unicode", Record{Op: OpCreate, Path: "données/日本語/émoji-😀.txt", Comm: "ł"}},
		{"line separators", Record{Op: OpCreate, Path: "a\u2028b\u2029c"}},
		{"invalid utf-8", Record{Op: OpCreate, Path: "bad\xff\xfe.txt", Target: "\xc3"}},
		{"negative numbers", Record{Op: OpWrite, Mono: -1, Offset: -9, Size: -3}},
		{"denied", Record{Op: OpUnlink, Path: "tests/x.py", Result: "EACCES", Decision: Denied}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rec.appendCanonical(nil)
			want := canonicalByJSON(t, tt.rec)
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			sum := sha256.Sum256(want)
			if got, want := tt.rec.ComputeHash(), hex.EncodeToString(sum[:]); got != want {
				t.Errorf("ComputeHash: got %s, want %s", got, want)
			}
		})
	}
}

// TestRecordLineFormat pins the line format with a line written by hand:
// a change here breaks every journal already stored.
func TestRecordLineFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Date(2026, 11, 29, 18, 24, 37, 123400000, time.FixedZone("X", 3600))
	rec, err := w.Append(Record{Op: OpMount, Mono: 0, Wall: wall, Result: "ok", SHA256: EmptySHA256})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	unhashed := `{"seq":1,"t_ns":0,"wall":"2026-11-29T17:24:37.1234Z","op":"mount","result":"ok",` +
		`"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",` +
		`"prev":"0000000000000000000000000000000000000000000000000000000000000000","hash":""}`
	sum := sha256.Sum256([]byte(unhashed))
	wantHash := hex.EncodeToString(sum[:])
	if rec.Hash != wantHash {
		t.Errorf("hash: got %s, want %s", rec.Hash, wantHash)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantLine := strings.TrimSuffix(unhashed, `""}`) + `"` + wantHash + `"}` + "\n"
	if string(b) != wantLine {
		t.Errorf("line:\ngot  %s\nwant %s", b, wantLine)
	}
}

func TestAppendAssignsChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Last(); got.Seq != 0 {
		t.Errorf("Last before any append: got seq %d, want 0", got.Seq)
	}
	in := []Record{
		{Op: OpMount, Result: "ok", SHA256: EmptySHA256, Seq: 99, Prev: "x", Hash: "y"},
		{Op: OpCreate, Path: "a", Result: "ok", Decision: Allowed, Wall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("Y", -7200))},
		{Op: OpUnmount, Result: "ok", SHA256: EmptySHA256},
	}
	var out []Record
	for i, r := range in {
		got, err := w.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq != uint64(i+1) {
			t.Errorf("record %d: got seq %d, want %d", i+1, got.Seq, i+1)
		}
		wantPrev := GenesisHash
		if i > 0 {
			wantPrev = out[i-1].Hash
		}
		if got.Prev != wantPrev {
			t.Errorf("record %d: got prev %s, want %s", i+1, got.Prev, wantPrev)
		}
		if got.Hash != got.ComputeHash() || got.Hash != hashAs(r, got.Seq, got.Prev) {
			t.Errorf("record %d: hash %s is not the hash of its content", i+1, got.Hash)
		}
		if got.Wall.Location() != time.UTC || !got.Wall.Equal(r.Wall) {
			t.Errorf("record %d: got wall %v, want %v in UTC", i+1, got.Wall, r.Wall)
		}
		if w.Last() != got {
			t.Errorf("record %d: Last is %+v, want %+v", i+1, w.Last(), got)
		}
		out = append(out, got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	read, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, out) {
		t.Errorf("Read:\ngot  %+v\nwant %+v", read, out)
	}
	if err := Verify(read, nil); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// hashAs is the hash r gets as record seq after prev.
func hashAs(r Record, seq uint64, prev string) string {
	r.Seq, r.Prev = seq, prev
	return r.ComputeHash()
}

func TestWriterErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(BlobsDir(path)); err != nil || !st.IsDir() {
		t.Errorf("blob dir %s: got %v, want a directory", BlobsDir(path), err)
	}
	if w.Blobs().Dir != BlobsDir(path) {
		t.Errorf("Blobs().Dir: got %s, want %s", w.Blobs().Dir, BlobsDir(path))
	}
	t.Run("create over an existing journal", func(t *testing.T) {
		if _, err := Create(path); !errors.Is(err, os.ErrExist) {
			t.Errorf("got %v, want an error matching os.ErrExist", err)
		}
	})
	t.Run("wall year out of range", func(t *testing.T) {
		_, err := w.Append(Record{Op: OpMount, Wall: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err == nil {
			t.Fatal("got nil, want an error")
		}
		if got := w.Last().Seq; got != 0 {
			t.Errorf("a refused record took seq %d", got)
		}
	})
	t.Run("append after close", func(t *testing.T) {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Append(Record{Op: OpMount}); !errors.Is(err, ErrClosed) {
			t.Errorf("Append: got %v, want ErrClosed", err)
		}
		if err := w.Flush(); !errors.Is(err, ErrClosed) {
			t.Errorf("Flush: got %v, want ErrClosed", err)
		}
		if err := w.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("second Close: got %v, want ErrClosed", err)
		}
	})
}

func TestFlushMakesRecordsReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 0; i < 3; i++ {
		if _, err := w.Append(Record{Op: OpWrite, Path: "a", Result: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[2] != w.Last() {
		t.Errorf("got %d records ending %+v, want 3 ending %+v", len(recs), recs[len(recs)-1], w.Last())
	}
}

func TestConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(Record{Op: OpMount, Result: "ok", SHA256: EmptySHA256}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := w.Append(Record{Op: OpWrite, Path: fmt.Sprintf("g%d", g), Offset: int64(i), Result: "ok", Decision: Allowed}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, err := w.Append(Record{Op: OpUnmount, Result: "ok", SHA256: EmptySHA256}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(recs), writers*each+2; got != want {
		t.Fatalf("got %d records, want %d", got, want)
	}
	if err := Verify(recs, nil); err != nil {
		t.Errorf("Verify: %v", err)
	}
	// Each writer's records keep their order.
	next := map[string]int64{}
	for _, r := range recs[1 : len(recs)-1] {
		if r.Offset != next[r.Path] {
			t.Fatalf("record %d: %s offset %d, want %d", r.Seq, r.Path, r.Offset, next[r.Path])
		}
		next[r.Path]++
	}
}

// BenchmarkAppend measures Append against three baselines in the same
// run: a writer that never syncs in batches (what the batches cost),
// writing the same lines already encoded (the cost of the I/O alone) and
// encoding with encoding/json plus SHA-256 (the obvious implementation).
// Run: go test -run '^$' -bench Append -benchtime 1000000x ./fsmon/journal/
func BenchmarkAppend(b *testing.B) {
	rec := Record{
		Mono: 123456789, Wall: time.Date(2026, 11, 29, 18, 24, 37, 123456789, time.UTC),
		Op: OpWrite, Path: "src/pkg/module/counter.py", PID: 31337, UID: 1000, Comm: "python3",
		Offset: 65536, Size: 4096, Result: "ok", Decision: Allowed,
	}
	for _, interval := range []time.Duration{SyncInterval, 0} {
		name := "journal"
		if interval == 0 {
			name = "baseline-journal-without-batches"
		}
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "j")
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			w := newWriter(path, f, Record{}, interval)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := w.Append(rec); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
	b.Run("baseline-io-only", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "j"))
		if err != nil {
			b.Fatal(err)
		}
		line := append(rec.appendCanonical(nil), '\n')
		bw := bufio.NewWriterSize(f, 256<<10)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := bw.Write(line); err != nil {
				b.Fatal(err)
			}
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("baseline-encoding-json", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "j"))
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 256<<10)
		prev := GenesisHash
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := rec
			r.Seq, r.Prev = uint64(i+1), prev
			enc, err := json.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			sum := sha256.Sum256(enc)
			r.Hash = hex.EncodeToString(sum[:])
			line, err := json.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			bw.Write(append(line, '\n'))
			prev = r.Hash
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkRead measures Read (decoding and the canonical-form check) of
// b.N records.
func BenchmarkRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "j")
	w, err := Create(path)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := w.Append(Record{Op: OpWrite, Path: "src/counter.py", Offset: int64(i), Size: 4096, Result: "ok", Decision: Allowed}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	recs, err := Read(path)
	if err != nil || len(recs) != b.N {
		b.Fatalf("got %d records, %v; want %d", len(recs), err, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestBatches: records reach the file while the writer is open, with no
// Flush or Close, so that a writer that dies keeps what it journaled
// before its last batch.
func TestBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rec, err := w.Append(Record{Op: OpMount, Result: "ok", SHA256: EmptySHA256, Wall: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	// Bounded far above SyncInterval, for a slow machine; not a timing
	// assertion.
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs, err := Read(path)
		if err == nil && len(recs) == 1 && recs[0].Hash == rec.Hash {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record is not in the file 30 s after Append (got %d records, %v)", len(recs), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
