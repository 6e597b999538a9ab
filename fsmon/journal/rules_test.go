package journal

import (
	"reflect"
	"testing"
)

func TestViolations(t *testing.T) {
	p := Policy{Allow: []string{"notes/*.md"}, Ignore: []string{"__pycache__/"}}
	tests := []struct {
		name string
		cs   Changeset
		want []string
	}{
		{"dir holding an allowed file", Changeset{
			{Kind: Added, Path: "notes", Type: "dir"},
			{Kind: Added, Path: "notes/a.md", Type: "file"},
		}, nil},
		{"empty dir", Changeset{{Kind: Added, Path: "notes", Type: "dir"}}, []string{"notes (added)"}},
		{"dir holding only a dir", Changeset{
			{Kind: Added, Path: "notes", Type: "dir"},
			{Kind: Added, Path: "notes/x.md", Type: "dir"},
		}, []string{"notes (added)"}},
		{"ignored dir", Changeset{{Kind: Added, Path: "src/__pycache__", Type: "dir"}}, nil},
		{"denied file", Changeset{{Kind: Added, Path: "notes/a.txt", Type: "file"}}, []string{"notes/a.txt (added)"}},
		{"dir holding a denied file", Changeset{
			{Kind: Added, Path: "notes", Type: "dir"},
			{Kind: Added, Path: "notes/a.txt", Type: "file"},
		}, []string{"notes (added)", "notes/a.txt (added)"}},
		{"renamed out of an allowed path", Changeset{{Kind: Renamed, From: "notes/a.md", Path: "a.md", Type: "file"}}, []string{"a.md (renamed)"}},
		{"renamed into an allowed path", Changeset{{Kind: Renamed, From: "README", Path: "notes/r.md", Type: "file"}}, []string{"README (renamed)"}},
		{"file named like a dir", Changeset{{Kind: Added, Path: "notes", Type: "file"}}, []string{"notes (added)"}},
		{"symlink to an allowed name", Changeset{{Kind: Added, Path: "notes/l.md", Type: "symlink"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Violations(tt.cs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCounts holds the counting rule: bookkeeping and cap records are
// neither edits nor denials; ignored operations and releases are edits.
func TestCounts(t *testing.T) {
	recs := []Record{
		{Op: OpMount},
		{Op: OpCreate, Path: "a.py", Decision: Allowed},
		{Op: OpRelease, Path: "a.py", Decision: Allowed},
		{Op: OpMkdir, Path: "__pycache__", Decision: Ignored},
		{Op: OpUnlink, Path: "tests/t.py", Decision: Denied, Result: "EACCES"},
		{Op: OpRename, Path: "a.py", Path2: "tests/t.py", Decision: Denied, Result: "EACCES"},
		{Op: OpCap, Name: CapFiles, Result: "EDQUOT"},
		{Op: OpInterrupted, Name: "out of time"},
		{Op: OpRelease, Path: "b.py", Decision: Allowed},
		{Op: OpUnmount},
	}
	want := Counts{Edits: 4, Denied: 2}
	if got := CountsOf(recs); got != want {
		t.Errorf("CountsOf: got %+v, want %+v", got, want)
	}
	var c Counts
	for _, r := range recs[:5] {
		c.Add(r)
	}
	if want := (Counts{Edits: 3, Denied: 1}); c != want {
		t.Errorf("Add over a prefix: got %+v, want %+v", c, want)
	}
}
