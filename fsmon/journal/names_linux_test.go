package journal

import (
	"bytes"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hostileNames are names an agent may choose: every byte Linux allows in
// a name (all but NUL and '/'), invalid UTF-8, control characters,
// escape sequences, and the longest name, of 255 bytes.
func hostileNames() []string {
	var every []byte
	for c := 1; c < 256; c++ {
		if c != '/' {
			every = append(every, byte(c))
		}
	}
	return []string{
		string(every[:127]),
		string(every[127:]),
		"\xff\xfe",
		"a\nb",
		"tab\there",
		"cr\r\x1b[2KPASS",
		"\x1b]0;title\x07",
		"\u202egnp.exe",
		"\xef\xbf\xbd", // U+FFFD itself, valid UTF-8
		strings.Repeat("\xc3", 255),
		strings.Repeat("n", 255),
	}
}

// Names of every byte but NUL and '/' (and the longest) round-trip
// through a snapshot, the manifest, journal lines written and read back,
// replay onto disk, and a changeset's JSON: the bytes come back, never
// U+FFFD.
func TestNamesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	names := hostileNames()
	for i, n := range names {
		d := filepath.Join(dir, n)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("name %d: %v", i, err)
		}
		if err := os.WriteFile(filepath.Join(d, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(n, filepath.Join(d, "link")); err != nil {
			t.Fatal(err)
		}
	}
	blobs := &Blobs{Dir: t.TempDir()}
	before, err := SnapshotTree(dir, blobs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(before), 3*len(names); got != want {
		t.Fatalf("snapshot: got %d entries, want %d", got, want)
	}
	back, err := ParseManifest(before.Manifest())
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if !reflect.DeepEqual(back, before) {
		t.Errorf("manifest did not round-trip")
	}
	if !utf8.Valid(before.Manifest()) {
		t.Errorf("manifest is not UTF-8")
	}

	// A rename of each to a second hostile name, through the journal.
	moved := path.Join(names[0], "moved\xff\n")
	jpath := filepath.Join(t.TempDir(), "journal.jsonl")
	w, err := Create(jpath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Blobs().PutBytes(before.Manifest()); err != nil {
		t.Fatal(err)
	}
	after := Tree{}
	for p, e := range before {
		after[p] = e
	}
	from := path.Join(names[1], names[1])
	e := after[from]
	delete(after, from)
	e.Path = moved
	after[moved] = e
	if _, err := w.Blobs().PutBytes(after.Manifest()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, moved)); err != nil {
		t.Fatal(err)
	}
	// Every blob lives in the writer's blob store.
	for _, e := range before {
		if e.Type == "file" {
			b, _ := blobs.ReadAll(e.SHA256)
			w.Blobs().PutBytes(b)
		}
	}
	now := time.Now()
	for _, r := range []Record{
		{Op: OpMount, Wall: now, Result: "ok", SHA256: before.ManifestHash()},
		{Op: OpRename, Wall: now, Path: from, Path2: moved, Comm: "\x1b[8m\xff", Result: "ok"},
		{Op: OpSetxattr, Wall: now, Path: moved, Name: "user.\xfe", Result: "ok"},
		{Op: OpSymlink, Wall: now, Path: names[2] + "/l2", Target: "\xff/\n", Result: "EACCES", Decision: Denied},
		{Op: OpUnmount, Wall: now, Result: "ok", SHA256: after.ManifestHash()},
	} {
		if _, err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(raw) {
		t.Errorf("journal file is not UTF-8")
	}
	recs, err := Read(jpath)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if recs[1].Path != from || recs[1].Path2 != moved || recs[1].Comm != "\x1b[8m\xff" || recs[2].Name != "user.\xfe" || recs[3].Target != "\xff/\n" {
		t.Errorf("names read back: got %q %q %q %q %q", recs[1].Path, recs[1].Path2, recs[1].Comm, recs[2].Name, recs[3].Target)
	}
	if err := VerifyFile(jpath); err != nil {
		t.Errorf("verify: %v", err)
	}
	if err := VerifyReplay(recs, w.Blobs()); err != nil {
		t.Errorf("verify replay: %v", err)
	}
	dst := t.TempDir()
	if err := Replay(recs, w.Blobs(), recs[len(recs)-1].Seq, dst); err != nil {
		t.Fatalf("replay: %v", err)
	}
	replayed, err := ScanTree(dst)
	if err != nil {
		t.Fatal(err)
	}
	ondisk, err := ScanTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(replayed, ondisk) {
		t.Errorf("replayed tree differs from the tree on disk")
	}

	// A record's JSON (the API's, benchctl log --json's) is its line.
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got Record
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("record %d: %v", r.Seq, err)
		}
		if !reflect.DeepEqual(got.Wall.UTC(), r.Wall.UTC()) {
			t.Errorf("record %d: wall changed", r.Seq)
		}
		got.Wall = r.Wall
		if !reflect.DeepEqual(got, r) {
			t.Errorf("record %d through JSON: got %+v, want %+v", r.Seq, got, r)
		}
	}
	cs := DiffTrees(before, after, nil)
	var csBack Changeset
	if err := json.Unmarshal(cs.JSON(), &csBack); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(csBack, cs) || len(cs) != 1 || cs[0].From != from || cs[0].Path != moved {
		t.Errorf("changeset through JSON: got %+v, want %+v (one rename)", csBack, cs)
	}
}

// Each name has one form: a line with the _b64 form of a UTF-8 name, or
// with both forms, is not canonical; a manifest entry with both is bad.
func TestNamesOneForm(t *testing.T) {
	for _, line := range []string{
		`{"seq":1,"t_ns":0,"wall":"2026-01-01T00:00:00Z","op":"create","path_b64":"YQ==","result":"ok","prev":"` + GenesisHash + `","hash":"` + GenesisHash + `"}`,
		`{"seq":1,"t_ns":0,"wall":"2026-01-01T00:00:00Z","op":"create","path":"a","path_b64":"/w==","result":"ok","prev":"` + GenesisHash + `","hash":"` + GenesisHash + `"}`,
	} {
		if _, err := parseLine([]byte(line)); err == nil {
			t.Errorf("parseLine(%s): got no error, want one", line)
		}
	}
	for _, m := range []string{
		`[{"path_b64":"YQ==","type":"dir","mode":493}]`,
		`[{"path":"a","path_b64":"/w==","type":"dir","mode":493}]`,
		`[{"path_b64":"not base64","type":"dir","mode":493}]`,
	} {
		if _, err := ParseManifest([]byte(m)); err == nil {
			t.Errorf("ParseManifest(%s): got no error, want one", m)
		}
	}
	good := []byte(`[{"path_b64":"/w==","type":"dir","mode":493}]`)
	tr, err := ParseManifest(good)
	if err != nil || tr["\xff"].Type != "dir" {
		t.Fatalf("ParseManifest(%s): got %v, %v, want the directory \\xff", good, tr, err)
	}
	if got := tr.Manifest(); !bytes.Equal(got, good) {
		t.Errorf("manifest: got %s, want %s", got, good)
	}
}
