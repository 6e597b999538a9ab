package journal

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestManifestCanonical(t *testing.T) {
	a := HashBytes([]byte("a"))
	tree := Tree{
		"src/x.py": {Path: "src/x.py", Type: "file", Mode: 0o644, Size: 1, SHA256: a},
		"src":      {Path: "src", Type: "dir", Mode: 0o755},
		"link":     {Path: "link", Type: "symlink", Mode: 0o777, Target: "src/x.py"},
		"src-b":    {Path: "src-b", Type: "dir", Mode: 0o700},
		"empty":    {Path: "empty", Type: "file", Mode: 0o600, SHA256: EmptySHA256},
	}
	want := `[{"path":"empty","type":"file","mode":384,"sha256":"` + EmptySHA256 + `"},` +
		`{"path":"link","type":"symlink","mode":511,"target":"src/x.py"},` +
		`{"path":"src","type":"dir","mode":493},` +
		`{"path":"src-b","type":"dir","mode":448},` +
		`{"path":"src/x.py","type":"file","mode":420,"size":1,"sha256":"` + a + `"}]`
	if got := string(tree.Manifest()); got != want {
		t.Errorf("Manifest:\ngot  %s\nwant %s", got, want)
	}
	if got, want := tree.ManifestHash(), HashBytes([]byte(want)); got != want {
		t.Errorf("ManifestHash: got %s, want %s", got, want)
	}
	back, err := ParseManifest(tree.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, tree) {
		t.Errorf("round trip:\ngot  %v\nwant %v", back, tree)
	}
	if got := string(Tree{}.Manifest()); got != "[]" {
		t.Errorf("empty tree: got %s, want []", got)
	}
	if back, err := ParseManifest([]byte("[]")); err != nil || len(back) != 0 {
		t.Errorf("empty manifest: got %v, %v; want an empty tree", back, err)
	}
}

func TestParseManifestRejects(t *testing.T) {
	sha := EmptySHA256
	file := func(p string) string {
		return `{"path":"` + p + `","type":"file","mode":420,"sha256":"` + sha + `"}`
	}
	dir := func(p string) string { return `{"path":"` + p + `","type":"dir","mode":493}` }
	tests := []struct {
		name, manifest, reason string
	}{
		{"not json", `[{`, "unexpected"},
		{"null", `null`, "not an array"},
		{"an object", `{}`, "cannot unmarshal"},
		{"trailing data", `[]x`, "after the array"},
		{"unknown field", `[{"path":"a","type":"dir","mode":493,"owner":"root"}]`, "unknown field"},
		{"unsorted", `[` + file("b") + `,` + file("a") + `]`, "sorted"},
		{"duplicate", `[` + file("a") + `,` + file("a") + `]`, "sorted and unique"},
		{"absolute path", `[` + file("/etc/passwd") + `]`, "absolute"},
		{"dot-dot", `[` + file("../x") + `]`, "leaves"},
		{"dot-dot inside", `[` + dir("a") + `,` + file("a/../../x") + `]`, "not clean"},
		{"empty path", `[` + file("") + `]`, "empty"},
		{"double slash", `[` + dir("a") + `,` + file("a//b") + `]`, "not clean"},
		{"missing parent", `[` + file("a/b") + `]`, "parent a is not a directory"},
		{"parent is a symlink", `[{"path":"a","type":"symlink","mode":511,"target":"/etc"},` + file("a/passwd") + `]`, "parent a is not a directory"},
		{"unknown type", `[{"path":"a","type":"fifo","mode":420}]`, "unknown type"},
		{"file without hash", `[{"path":"a","type":"file","mode":420}]`, "valid sha256"},
		{"file with a bad hash", `[{"path":"a","type":"file","mode":420,"sha256":"../../x"}]`, "valid sha256"},
		{"symlink without target", `[{"path":"a","type":"symlink","mode":511}]`, "without a target"},
		{"dir with content", `[{"path":"a","type":"dir","mode":493,"sha256":"` + sha + `"}]`, "with content"},
		{"mode with type bits", `[{"path":"a","type":"dir","mode":2147484141}]`, "permission bits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := ParseManifest([]byte(tt.manifest))
			if !errors.Is(err, ErrBadManifest) {
				t.Fatalf("got %v, %v; want ErrBadManifest", tree, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("got %q, want it to mention %q", err, tt.reason)
			}
		})
	}
}

func TestSnapshotTree(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.txt":          "alpha",
		"src/b.py":       "print(1)\n",
		"src/deep/c.bin": "\x00\x01\x02",
		"same.txt":       "alpha",
		"empty/":         "",
		"zero":           "",
	})
	if err := os.Symlink("src/b.py", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "src/b.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	blobs := &Blobs{Dir: t.TempDir()}
	got, err := SnapshotTree(dir, blobs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ScanTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SnapshotTree differs from ScanTree:\ngot  %v\nwant %v", got, want)
	}
	if len(got) != 9 {
		t.Errorf("got %d entries, want 9: %v", len(got), got.Paths())
	}
	for _, p := range got.Paths() {
		e := got[p]
		if e.Type != "file" {
			continue
		}
		content, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if e.SHA256 != HashBytes(content) || e.Size != int64(len(content)) {
			t.Errorf("%s: got %s/%d, want %s/%d", p, e.SHA256, e.Size, HashBytes(content), len(content))
		}
		if err := blobs.Verify(e.SHA256); err != nil {
			t.Errorf("%s: blob: %v", p, err)
		}
	}
	m, err := blobs.ReadAll(got.ManifestHash())
	if err != nil {
		t.Fatalf("manifest blob: %v", err)
	}
	if back, err := ParseManifest(m); err != nil || !reflect.DeepEqual(back, got) {
		t.Errorf("stored manifest: got %v, %v; want %v", back, err, got)
	}
}

// TestNamedBlobs: the blobs a journal names are its records' contents
// and its manifests with the files they list; a manifest the caller
// cannot give names only itself, and a broken one is an error.
func TestNamedBlobs(t *testing.T) {
	a, b, c := HashBytes([]byte("a")), HashBytes([]byte("b")), HashBytes([]byte("c"))
	start := Tree{"x": {Path: "x", Type: "file", Mode: 0o644, Size: 1, SHA256: a}}
	end := Tree{"x": {Path: "x", Type: "file", Mode: 0o644, Size: 1, SHA256: b}, "d": {Path: "d", Type: "dir", Mode: 0o755}}
	manifests := map[string][]byte{start.ManifestHash(): start.Manifest(), end.ManifestHash(): end.Manifest(), c: []byte("not a manifest")}
	recs := []Record{
		{Seq: 1, Op: OpMount, SHA256: start.ManifestHash()},
		{Seq: 2, Op: OpWrite, Path: "x"},
		{Seq: 3, Op: OpRelease, Path: "x", SHA256: b},
		{Seq: 4, Op: OpUnmount, SHA256: end.ManifestHash()},
	}
	given := func(sha string) ([]byte, error) { return manifests[sha], nil }
	got, err := NamedBlobs(recs, given)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a, b, start.ManifestHash(), end.ManifestHash()}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	missing := func(sha string) ([]byte, error) { return nil, nil }
	got, err = NamedBlobs(recs[:1], missing)
	if err != nil || !slices.Equal(got, []string{start.ManifestHash()}) {
		t.Errorf("missing manifest: got %v, %v; want only the manifest itself", got, err)
	}
	if _, err := NamedBlobs([]Record{{Seq: 1, Op: OpMount, SHA256: c}}, given); err == nil {
		t.Errorf("a broken manifest: got no error")
	}
}
