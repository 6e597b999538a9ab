package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// treeDiff describes the first entry at which got and want differ, or
// returns "".
func treeDiff(got, want Tree) string {
	all := Tree{}
	for p := range got {
		all[p] = Entry{}
	}
	for p := range want {
		all[p] = Entry{}
	}
	for _, p := range all.Paths() {
		g, gok := got[p]
		w, wok := want[p]
		if gok != wok || g != w {
			return fmt.Sprintf("%s: got %+v (present %v), want %+v (present %v)", p, g, gok, w, wok)
		}
	}
	return ""
}

// busyWorkspace journals a workspace through hard links, renames of
// files and directories, renames over existing files, symlinks, denied
// and failed operations, removals and truncation.
func busyWorkspace(t *testing.T) *workspace {
	t.Helper()
	ws := newWorkspace(t, map[string]string{
		"src/a.py":        "a1\n",
		"src/lib/util.py": "u1\n",
		"src/lib/more/x":  "x\n",
		"src/libx":        "not below src/lib\n",
		"docs/readme.md":  "readme\n",
		"old.txt":         "old\n",
	})
	ws.mkdir("pkg", 0o755)
	ws.create("pkg/mod.py", 0o640)
	ws.write("pkg/mod.py", "m1\n")
	ws.link("pkg/mod.py", "pkg/alias.py")
	ws.write("pkg/alias.py", "m2: written through the second name\n")
	ws.chmod("pkg/mod.py", 0o600)
	ws.rename("src/lib", "src/library")
	ws.write("src/library/util.py", "u2\n")
	ws.create("new.txt", 0o644)
	ws.write("new.txt", "replaces a.py\n")
	ws.rename("new.txt", "src/a.py")
	ws.symlink("a.py", "src/link.py")
	ws.denied(OpUnlink, "docs/readme.md")
	ws.append(Record{Op: OpUnlink, Path: "nothing.txt", Result: "ENOENT"})
	ws.unlink("pkg/mod.py")
	ws.write("pkg/alias.py", "m3\n")
	ws.mkdir("tmp", 0o700)
	ws.rmdir("tmp")
	ws.rename("docs", "documentation")
	ws.check(os.Truncate(ws.fp("old.txt"), 0))
	ws.append(Record{Op: OpTruncate, Path: "old.txt", Size: 0})
	ws.chmod("src/library", 0o700)
	ws.unmount()
	return ws
}

func TestReplayTreeMatchesTheFileSystemAtEveryRecord(t *testing.T) {
	ws := busyWorkspace(t)
	last := uint64(len(ws.recs))
	for seq := uint64(0); seq <= last+2; seq++ {
		want := ws.truth[min(max(seq, 1), last)]
		got, err := ReplayTree(ws.recs, ws.w.Blobs(), seq)
		if err != nil {
			t.Fatalf("upTo %d: %v", seq, err)
		}
		if d := treeDiff(got, want); d != "" {
			op := OpMount
			if seq >= 1 && seq <= last {
				op = ws.recs[seq-1].Op
			}
			t.Errorf("upTo %d (%s): %s", seq, op, d)
		}
	}
	if err := VerifyReplay(ws.recs, ws.w.Blobs()); err != nil {
		t.Errorf("VerifyReplay: %v", err)
	}
	if err := VerifyFile(ws.path); err != nil {
		t.Errorf("VerifyFile: %v", err)
	}
}

func TestReplayMaterializesEveryRecord(t *testing.T) {
	ws := busyWorkspace(t)
	blobs := ws.w.Blobs()
	linked := 0
	for seq := uint64(0); seq <= uint64(len(ws.recs)); seq++ {
		dst := filepath.Join(t.TempDir(), "replay")
		if err := Replay(ws.recs, blobs, seq, dst); err != nil {
			t.Fatalf("upTo %d: %v", seq, err)
		}
		got, err := ScanTree(dst)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ReplayTree(ws.recs, blobs, seq)
		if err != nil {
			t.Fatal(err)
		}
		if d := treeDiff(got, want); d != "" {
			t.Errorf("upTo %d: %s", seq, d)
		}
		if _, ok := want["pkg/alias.py"]; ok && want["pkg/mod.py"].Type == "file" && seq < uint64(len(ws.recs)) {
			a, err1 := os.Stat(filepath.Join(dst, "pkg/alias.py"))
			b, err2 := os.Stat(filepath.Join(dst, "pkg/mod.py"))
			if err1 != nil || err2 != nil || !os.SameFile(a, b) {
				t.Errorf("upTo %d: pkg/mod.py and pkg/alias.py are not one file", seq)
			}
			linked++
		}
	}
	if linked == 0 {
		t.Error("no replay point had the hard link")
	}
	t.Run("destination not empty", func(t *testing.T) {
		dst := t.TempDir()
		if err := os.WriteFile(filepath.Join(dst, "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Replay(ws.recs, blobs, 0, dst); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("got %v, want a not-empty error", err)
		}
	})
	t.Run("blob damaged", func(t *testing.T) {
		p, _ := blobs.Path(HashBytes([]byte("a1\n")))
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, []byte("A1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Replay(ws.recs, blobs, 0, filepath.Join(t.TempDir(), "r"))
		if !errors.Is(err, ErrBlobCorrupt) {
			t.Errorf("got %v, want ErrBlobCorrupt", err)
		}
	})
}

// Entry constructors for expected trees.
func fileE(p, content string, mode fs.FileMode) Entry {
	return Entry{Path: p, Type: "file", Mode: mode, Size: int64(len(content)), SHA256: HashBytes([]byte(content))}
}
func dirE(p string, mode fs.FileMode) Entry { return Entry{Path: p, Type: "dir", Mode: mode} }
func linkE(p, target string) Entry {
	return Entry{Path: p, Type: "symlink", Mode: 0o777, Target: target}
}
func treeOf(es ...Entry) Tree {
	t := Tree{}
	for _, e := range es {
		t[e.Path] = e
	}
	return t
}

// synthJournal journals recs after a mount of initial without touching
// any file system; records get result ok and decision allowed unless
// they say otherwise. It leaves the journal without an unmount.
func synthJournal(t *testing.T, initial Tree, recs ...Record) ([]Record, *Blobs) {
	t.Helper()
	w, err := Create(filepath.Join(t.TempDir(), "j"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mf, err := w.Blobs().PutBytes(initial.Manifest())
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	wall := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, r := range append([]Record{{Op: OpMount, SHA256: mf}}, recs...) {
		if r.Result == "" {
			r.Result = "ok"
		}
		if r.Decision == "" && r.Op != OpMount && r.Op != OpRelease {
			r.Decision = Allowed
		}
		r.Wall = wall
		got, err := w.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
	}
	return out, w.Blobs()
}

func TestReplayOperations(t *testing.T) {
	A, B, C := "A", "BB", "CCC"
	sha := func(s string) string { return HashBytes([]byte(s)) }
	ab := treeOf(fileE("a", A, 0o644), fileE("b", B, 0o644))
	tests := []struct {
		name    string
		initial Tree
		recs    []Record
		want    Tree
	}{
		{"a hard link shares content", treeOf(fileE("a", A, 0o644)), []Record{
			{Op: OpLink, Path: "a", Path2: "b"},
			{Op: OpRelease, Path: "b", SHA256: sha(B), Size: 2},
		}, treeOf(fileE("a", B, 0o644), fileE("b", B, 0o644))},
		{"a hard link shares its mode", treeOf(fileE("a", A, 0o644)), []Record{
			{Op: OpLink, Path: "a", Path2: "b"},
			{Op: OpChmod, Path: "b", Mode: 0o600},
		}, treeOf(fileE("a", A, 0o600), fileE("b", A, 0o600))},
		{"a hard link follows a rename", treeOf(fileE("a", A, 0o644)), []Record{
			{Op: OpLink, Path: "a", Path2: "b"},
			{Op: OpRename, Path: "a", Path2: "c"},
			{Op: OpRelease, Path: "c", SHA256: sha(C), Size: 3},
		}, treeOf(fileE("b", C, 0o644), fileE("c", C, 0o644))},
		{"unlinking one name keeps the other", treeOf(fileE("a", A, 0o644)), []Record{
			{Op: OpLink, Path: "a", Path2: "b"},
			{Op: OpUnlink, Path: "a"},
			{Op: OpRelease, Path: "b", SHA256: sha(C), Size: 3},
		}, treeOf(fileE("b", C, 0o644))},
		{"renaming one name onto the other does nothing", treeOf(fileE("a", A, 0o644)), []Record{
			{Op: OpLink, Path: "a", Path2: "b"},
			{Op: OpRename, Path: "a", Path2: "b"},
		}, treeOf(fileE("a", A, 0o644), fileE("b", A, 0o644))},
		{"a directory moves with everything below it",
			treeOf(dirE("d", 0o755), fileE("d/x", A, 0o644), dirE("d/e", 0o700), fileE("d/e/y", B, 0o600), fileE("dz", C, 0o644), dirE("d.z", 0o755)),
			[]Record{{Op: OpRename, Path: "d", Path2: "n"}},
			treeOf(dirE("n", 0o755), fileE("n/x", A, 0o644), dirE("n/e", 0o700), fileE("n/e/y", B, 0o600), fileE("dz", C, 0o644), dirE("d.z", 0o755))},
		{"a directory moves into another", treeOf(dirE("d", 0o755), fileE("d/x", A, 0o644), dirE("t", 0o755)),
			[]Record{{Op: OpRename, Path: "d", Path2: "t/d"}},
			treeOf(dirE("t", 0o755), dirE("t/d", 0o755), fileE("t/d/x", A, 0o644))},
		{"a rename replaces an existing file", ab,
			[]Record{{Op: OpRename, Path: "a", Path2: "b"}},
			treeOf(fileE("b", A, 0o644))},
		{"a rename replaces an empty directory", treeOf(dirE("d", 0o755), fileE("d/x", A, 0o644), dirE("e", 0o700)),
			[]Record{{Op: OpRename, Path: "d", Path2: "e"}},
			treeOf(dirE("e", 0o755), fileE("e/x", A, 0o644))},
		{"an exchange swaps two files", ab,
			[]Record{{Op: OpRename, Path: "a", Path2: "b", Flags: flagRenameExchange}},
			treeOf(fileE("a", B, 0o644), fileE("b", A, 0o644))},
		{"an exchange swaps a directory and a file", treeOf(dirE("d", 0o755), fileE("d/x", A, 0o644), fileE("f", B, 0o644)),
			[]Record{{Op: OpRename, Path: "d", Path2: "f", Flags: flagRenameExchange}},
			treeOf(fileE("d", B, 0o644), dirE("f", 0o755), fileE("f/x", A, 0o644))},
		{"denied and failed operations change nothing", ab, []Record{
			{Op: OpUnlink, Path: "a", Result: "EACCES", Decision: Denied},
			{Op: OpRename, Path: "a", Path2: "c", Result: "EACCES", Decision: Denied},
			{Op: OpUnlink, Path: "c", Result: "ENOENT"},
			{Op: OpCreate, Path: "nodir/x", Result: "ENOENT"},
			// Inconsistent (Verify rejects it), but denied means not done.
			{Op: OpUnlink, Path: "b", Result: "ok", Decision: Denied},
		}, ab},
		{"ignored operations apply", Tree{}, []Record{
			{Op: OpMkdir, Path: "__pycache__", Mode: 0o755, Decision: Ignored},
			{Op: OpCreate, Path: "__pycache__/m.pyc", Mode: 0o100644, Decision: Ignored},
		}, treeOf(dirE("__pycache__", 0o755), fileE("__pycache__/m.pyc", "", 0o644))},
		{"create, mkdir and symlink", Tree{}, []Record{
			{Op: OpMkdir, Path: "d", Mode: 0o040700},
			{Op: OpCreate, Path: "d/f", Mode: 0o100600},
			{Op: OpSymlink, Path: "l", Target: "d/f"},
		}, treeOf(dirE("d", 0o700), fileE("d/f", "", 0o600), linkE("l", "d/f"))},
		{"create of an existing file keeps it, or empties it with O_TRUNC", ab, []Record{
			{Op: OpCreate, Path: "a", Mode: 0o100600},
			{Op: OpCreate, Path: "b", Mode: 0o100600, Flags: flagOTrunc | 1},
		}, treeOf(fileE("a", A, 0o644), fileE("b", "", 0o644))},
		{"mknod", Tree{}, []Record{
			{Op: OpMknod, Path: "fifo", Mode: 0o010640},
			{Op: OpMknod, Path: "reg", Mode: 0o100640},
		}, treeOf(Entry{Path: "fifo", Type: "other", Mode: 0o640}, fileE("reg", "", 0o640))},
		{"truncate to zero empties the file", ab,
			[]Record{{Op: OpTruncate, Path: "a", Size: 0}},
			treeOf(fileE("a", "", 0o644), fileE("b", B, 0o644))},
		{"truncate to a size keeps the last known hash", ab,
			[]Record{{Op: OpTruncate, Path: "a", Size: 100}},
			treeOf(Entry{Path: "a", Type: "file", Mode: 0o644, Size: 100, SHA256: sha(A)}, fileE("b", B, 0o644))},
		{"a write keeps the last known content until release", ab, []Record{
			{Op: OpOpen, Path: "a", Flags: 1},
			{Op: OpWrite, Path: "a", Offset: 1, Size: 10},
			{Op: OpFallocate, Path: "a", Size: 4096},
		}, ab},
		{"a release gives the content after the writes", ab, []Record{
			{Op: OpWrite, Path: "a", Size: 3},
			{Op: OpRelease, Path: "a", SHA256: sha(C), Size: 3},
		}, treeOf(fileE("a", C, 0o644), fileE("b", B, 0o644))},
		{"open with O_TRUNC empties the file", ab,
			[]Record{{Op: OpOpen, Path: "b", Flags: flagOTrunc | 1}},
			treeOf(fileE("a", A, 0o644), fileE("b", "", 0o644))},
		{"copy_file_range changes its destination at release", ab, []Record{
			{Op: OpCopyFileRange, Path: "b", Path2: "a", Size: 1},
			{Op: OpRelease, Path: "b", SHA256: sha(A + B[1:]), Size: 2},
		}, treeOf(fileE("a", A, 0o644), fileE("b", A+B[1:], 0o644))},
		{"a release applies whatever its decision", ab, []Record{
			{Op: OpRelease, Path: "a", SHA256: sha(C), Size: 3, Decision: Denied},
		}, treeOf(fileE("a", C, 0o644), fileE("b", B, 0o644))},
		{"a release of a removed file changes nothing", ab, []Record{
			{Op: OpCreate, Path: "t", Mode: 0o100644},
			{Op: OpUnlink, Path: "t"},
			{Op: OpRelease, Path: "t", SHA256: sha(C), Size: 3},
		}, ab},
		{"chmod of a directory and of the root", treeOf(dirE("d", 0o755)), []Record{
			{Op: OpChmod, Path: "d", Mode: 0o040711},
			{Op: OpChmod, Path: "", Mode: 0o700},
		}, treeOf(dirE("d", 0o711))},
		{"owners, times and xattrs are not in the tree", ab, []Record{
			{Op: OpChown, Path: "a"},
			{Op: OpUtimens, Path: "a"},
			{Op: OpSetxattr, Path: "a", Name: "user.x"},
			{Op: OpRemovexattr, Path: "a", Name: "user.x"},
		}, ab},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, blobs := synthJournal(t, tt.initial, tt.recs...)
			got, err := ReplayTree(recs, blobs, 1<<62)
			if err != nil {
				t.Fatal(err)
			}
			if d := treeDiff(got, tt.want); d != "" {
				t.Errorf("after every record: %s", d)
			}
			initial, err := ReplayTree(recs, blobs, 0)
			if err != nil {
				t.Fatal(err)
			}
			if d := treeDiff(initial, tt.initial); d != "" {
				t.Errorf("upTo 0: %s", d)
			}
		})
	}
}

func TestReplayRejectsInconsistentJournals(t *testing.T) {
	initial := treeOf(dirE("d", 0o755), fileE("d/x", "x", 0o644), fileE("f", "f", 0o644))
	tests := []struct {
		name   string
		rec    Record
		reason string
	}{
		{"unlink of a missing path", Record{Op: OpUnlink, Path: "gone"}, `no such path "gone"`},
		{"unlink of a directory", Record{Op: OpUnlink, Path: "d"}, "is a directory"},
		{"create in a missing directory", Record{Op: OpCreate, Path: "nodir/x"}, "parent nodir is not a directory"},
		{"create below a file", Record{Op: OpCreate, Path: "f/x"}, "parent f is not a directory"},
		{"mkdir over a file", Record{Op: OpMkdir, Path: "f"}, "exists already"},
		{"create over a directory", Record{Op: OpCreate, Path: "d"}, "exists already"},
		{"rmdir of a non-empty directory", Record{Op: OpRmdir, Path: "d"}, "not empty"},
		{"rmdir of a file", Record{Op: OpRmdir, Path: "f"}, `no directory "f"`},
		{"rename below itself", Record{Op: OpRename, Path: "d", Path2: "d/sub"}, "below itself"},
		{"rename of a file over a directory", Record{Op: OpRename, Path: "f", Path2: "d"}, "cannot replace directory d"},
		{"rename of a missing path", Record{Op: OpRename, Path: "gone", Path2: "g"}, "no such path"},
		{"rename out of the workspace", Record{Op: OpRename, Path: "f", Path2: "../f"}, "leaves the workspace"},
		{"link of a directory", Record{Op: OpLink, Path: "d", Path2: "d2"}, "is a directory"},
		{"write to a directory", Record{Op: OpWrite, Path: "d"}, "not a file"},
		{"absolute path", Record{Op: OpCreate, Path: "/etc/passwd"}, "absolute"},
		{"unknown operation", Record{Op: "frobnicate", Path: "f"}, `unknown operation "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, blobs := synthJournal(t, initial, Record{Op: OpChown, Path: "f"}, tt.rec)
			_, err := ReplayTree(recs, blobs, 10)
			if !errors.Is(err, ErrReplay) || !strings.Contains(err.Error(), tt.reason) || !strings.Contains(err.Error(), "record 3 ") {
				t.Errorf("got %v, want ErrReplay naming record 3 and %q", err, tt.reason)
			}
			// The tree before the bad record still replays.
			if _, err := ReplayTree(recs, blobs, 2); err != nil {
				t.Errorf("upTo 2: %v", err)
			}
		})
	}
}

func TestReplayTreeBounds(t *testing.T) {
	ws := newWorkspace(t, map[string]string{"a": "1"})
	ws.write("a", "2")
	recs := ws.unmount()
	blobs := ws.w.Blobs()
	final := ws.truth[uint64(len(recs))]
	tests := []struct {
		name string
		recs []Record
		upTo uint64
		want Tree
	}{
		{"zero is the initial tree", recs, 0, ws.truth[1]},
		{"the mount record is the initial tree", recs, 1, ws.truth[1]},
		{"the unmount record is the final manifest", recs, uint64(len(recs)), final},
		{"beyond the end is the final manifest", recs, 1 << 63, final},
		{"a cut journal ends at its last record", recs[:len(recs)-1], 1 << 63, final},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReplayTree(tt.recs, blobs, tt.upTo)
			if err != nil {
				t.Fatal(err)
			}
			if d := treeDiff(got, tt.want); d != "" {
				t.Error(d)
			}
		})
	}
	t.Run("no blobs", func(t *testing.T) {
		if _, err := ReplayTree(recs, nil, 0); !errors.Is(err, ErrReplay) {
			t.Errorf("got %v, want ErrReplay", err)
		}
	})
	t.Run("no mount", func(t *testing.T) {
		if _, err := ReplayTree(recs[1:], blobs, 0); !errors.Is(err, ErrReplay) {
			t.Errorf("got %v, want ErrReplay", err)
		}
	})
}

func TestVerifyReplayFindsUnjournaledChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(ws *workspace) // a change made behind the journal's back
		path   string
		reason string
	}{
		{"nothing", func(*workspace) {}, "", ""},
		{"content", func(ws *workspace) {
			ws.check(os.WriteFile(ws.fp("src/a.py"), []byte("edited\n"), 0o644))
		}, "src/a.py", "content"},
		{"mode", func(ws *workspace) { ws.check(os.Chmod(ws.fp("src/a.py"), 0o755)) }, "src/a.py", "mode 0644 in the replay, 0755 in the manifest"},
		{"a new file", func(ws *workspace) {
			ws.check(os.WriteFile(ws.fp("src/b.py"), nil, 0o644))
		}, "src/b.py", "missing from the replay"},
		{"a removed file", func(ws *workspace) { ws.check(os.Remove(ws.fp("keep.txt"))) }, "keep.txt", "not in the manifest"},
		{"a file turned into a directory", func(ws *workspace) {
			ws.check(os.Remove(ws.fp("keep.txt")))
			ws.check(os.Mkdir(ws.fp("keep.txt"), 0o755))
		}, "keep.txt", "a file in the replay, a dir in the manifest"},
		{"a symlink retargeted", func(ws *workspace) {
			ws.check(os.Remove(ws.fp("l")))
			ws.check(os.Symlink("elsewhere", ws.fp("l")))
		}, "l", `target "src/a.py" in the replay, "elsewhere" in the manifest`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t, map[string]string{"src/a.py": "a\n", "keep.txt": "k\n"})
			ws.write("src/a.py", "b\n")
			ws.symlink("src/a.py", "l")
			tt.change(ws)
			recs := ws.unmount()
			err := VerifyReplay(recs, ws.w.Blobs())
			if tt.path == "" {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *VerifyError", err)
			}
			if ve.Seq != uint64(len(recs)) || !strings.Contains(ve.Reason, "at "+tt.path+":") || !strings.Contains(ve.Reason, tt.reason) {
				t.Errorf("got %q, want the unmount record and %s: %q", err, tt.path, tt.reason)
			}
			// The chain itself is intact: only the replay tells.
			if err := VerifyFile(ws.path); err != nil {
				t.Errorf("VerifyFile: %v", err)
			}
		})
	}
	t.Run("cut journal", func(t *testing.T) {
		ws := newWorkspace(t, map[string]string{"a": "a"})
		var ve *VerifyError
		if err := VerifyReplay(ws.recs, ws.w.Blobs()); !errors.As(err, &ve) || ve.Seq != 2 {
			t.Errorf("got %v, want record 2 missing", err)
		}
	})
}

func TestChangesetOf(t *testing.T) {
	ws := newWorkspace(t, map[string]string{
		"src/counter.py":  "count = 1\n",
		"src/old_name.py": "moved unchanged\n",
		"README.md":       "readme\n",
		"tests/t.py":      "test\n",
	})
	ws.write("src/counter.py", "count = 2\n")
	ws.rename("src/old_name.py", "src/new_name.py")
	ws.create("src/added.py", 0o644)
	ws.write("src/added.py", "new\n")
	ws.unlink("README.md")
	ws.mkdir("src/__pycache__", 0o755)
	ws.create("src/__pycache__/counter.pyc", 0o644)
	ws.write("src/__pycache__/counter.pyc", "bytecode")
	ws.create("scratch.log", 0o644)
	ws.denied(OpUnlink, "tests/t.py")
	recs := ws.unmount()
	policy := Policy{Allow: []string{"src/**", "README.md"}, Ignore: []string{"__pycache__/", "*.log"}}
	got, err := ChangesetOf(recs, ws.w.Blobs(), policy)
	if err != nil {
		t.Fatal(err)
	}
	sha := func(s string) string { return HashBytes([]byte(s)) }
	want := Changeset{
		{Kind: Deleted, Path: "README.md", Type: "file", SHA256: sha("readme\n")},
		{Kind: Added, Path: "src/added.py", Type: "file", SHA256: sha("new\n")},
		{Kind: Modified, Path: "src/counter.py", Type: "file", SHA256: sha("count = 2\n")},
		{Kind: Renamed, Path: "src/new_name.py", From: "src/old_name.py", Type: "file", SHA256: sha("moved unchanged\n")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got, want := got.String(), "deleted README.md\nadded src/added.py\nmodified src/counter.py\nrenamed src/old_name.py -> src/new_name.py\n"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
	t.Run("nothing ignored", func(t *testing.T) {
		all, err := ChangesetOf(recs, ws.w.Blobs(), Policy{})
		if err != nil {
			t.Fatal(err)
		}
		paths := strings.Join(all.Paths(), " ")
		for _, p := range []string{"src/__pycache__", "src/__pycache__/counter.pyc", "scratch.log"} {
			if !strings.Contains(paths, p) {
				t.Errorf("got paths %s, want %s among them", paths, p)
			}
		}
	})
	t.Run("cut journal", func(t *testing.T) {
		if _, err := ChangesetOf(recs[:len(recs)-1], ws.w.Blobs(), policy); err == nil || !strings.Contains(err.Error(), "no unmount") {
			t.Errorf("got %v, want a missing-unmount error", err)
		}
	})
}

// TestReplayManifest: the tree of a mount or unmount record's manifest,
// materialized without the records, is the tree Replay makes at that
// record; a manifest not in the store is an error.
func TestReplayManifest(t *testing.T) {
	ws := busyWorkspace(t)
	blobs := ws.w.Blobs()
	manifests := 0
	for _, r := range ws.recs {
		if r.Op != OpMount && r.Op != OpUnmount {
			continue
		}
		manifests++
		dst := filepath.Join(t.TempDir(), "m")
		if err := ReplayManifest(blobs, r.SHA256, dst); err != nil {
			t.Fatalf("%s record %d: %v", r.Op, r.Seq, err)
		}
		want := filepath.Join(t.TempDir(), "r")
		if err := Replay(ws.recs, blobs, r.Seq, want); err != nil {
			t.Fatal(err)
		}
		got, err := ScanTree(dst)
		if err != nil {
			t.Fatal(err)
		}
		wantTree, err := ScanTree(want)
		if err != nil {
			t.Fatal(err)
		}
		if d := treeDiff(got, wantTree); d != "" {
			t.Errorf("%s record %d: %s", r.Op, r.Seq, d)
		}
	}
	if manifests < 2 {
		t.Fatalf("the journal has %d manifest records, want its mount and unmount", manifests)
	}
	if err := ReplayManifest(blobs, HashBytes([]byte("no such manifest")), filepath.Join(t.TempDir(), "x")); err == nil {
		t.Error("a manifest not in the store replayed")
	}
}
