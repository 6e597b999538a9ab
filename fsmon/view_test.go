package fsmon_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
)

// testPolicy allows src/ and new/, ignores Python noise, and protects
// everything else (README.md, tests/, ...).
var testPolicy = journal.Policy{
	Allow:  []string{"src/**", "new/**", "out.bin"},
	Ignore: []string{"__pycache__/", "*.pyc"},
}

// view is a mounted workspace for one test.
type view struct {
	t       testing.TB
	backing string
	mnt     string
	jpath   string
	w       *journal.Writer
	v       *fsmon.View
	done    bool
}

func seed(t testing.TB, dir string) {
	t.Helper()
	files := map[string]string{
		"README.md":           "readme\n",
		"tests/test_x.py":     "def test_x():\n    assert True\n",
		"src/counter.py":      "x = 1\n",
		"src/pkg/mod.py":      "y = 2\n",
		"docs/guide/intro.md": "intro\n",
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func mount(t *testing.T, mode fsmon.Mode) *view {
	t.Helper()
	return mountWith(t, fsmon.Config{Mode: mode})
}

// mountWith mounts a seeded workspace with cfg, whose backing,
// mountpoint and journal it fills in, and its policy (testPolicy) when
// cfg has none.
func mountWith(t testing.TB, cfg fsmon.Config) *view {
	t.Helper()
	testenv.Require(t, testenv.Root, testenv.FUSE)
	tmp := t.TempDir()
	v := &view{t: t, backing: filepath.Join(tmp, "backing"), mnt: filepath.Join(tmp, "mnt"), jpath: filepath.Join(tmp, "journal.jsonl")}
	for _, d := range []string{v.backing, v.mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seed(t, v.backing)
	w, err := journal.Create(v.jpath)
	if err != nil {
		t.Fatal(err)
	}
	v.w = w
	cfg.Backing, cfg.Mountpoint, cfg.Journal = v.backing, v.mnt, w
	if cfg.Policy.Allow == nil && cfg.Policy.Ignore == nil {
		cfg.Policy = testPolicy
	}
	fv, err := fsmon.Mount(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	v.v = fv
	t.Cleanup(func() {
		if !v.done {
			v.finish()
		}
	})
	return v
}

func (v *view) p(rel string) string { return filepath.Join(v.mnt, rel) }

// finish unmounts, closes and verifies the journal (chain, blobs, and
// replay of the last record against the real final tree), and returns it.
func (v *view) finish() []journal.Record {
	v.t.Helper()
	v.done = true
	if err := v.v.Unmount(context.Background()); err != nil {
		v.t.Fatalf("unmount: %v", err)
	}
	if err := v.w.Close(); err != nil {
		v.t.Fatal(err)
	}
	if mounted, _ := fsmon.IsMountpoint(v.mnt); mounted {
		v.t.Fatalf("%s is still mounted after Unmount", v.mnt)
	}
	recs, err := journal.Read(v.jpath)
	if err != nil {
		v.t.Fatal(err)
	}
	blobs := &journal.Blobs{Dir: journal.BlobsDir(v.jpath)}
	if err := journal.Verify(recs, blobs); err != nil {
		v.t.Fatalf("verify: %v", err)
	}
	if err := journal.VerifyReplay(recs, blobs); err != nil {
		v.t.Fatalf("replay of the last record differs from the final tree: %v", err)
	}
	// The view's counters are the journal's counts (journal.Counts).
	if st, c := v.v.Stats(), journal.CountsOf(recs); st.Edits != c.Edits || st.Denied != c.Denied {
		v.t.Fatalf("stats: got %d edits %d denied, the journal counts %d and %d", st.Edits, st.Denied, c.Edits, c.Denied)
	}
	real, err := journal.ScanTree(v.backing)
	if err != nil {
		v.t.Fatal(err)
	}
	replayed, err := journal.ReplayTree(recs, blobs, recs[len(recs)-1].Seq)
	if err != nil {
		v.t.Fatal(err)
	}
	for _, p := range real.Paths() {
		if real[p].SHA256 != replayed[p].SHA256 || real[p].Type != replayed[p].Type {
			v.t.Errorf("replayed %s: got %+v, want %+v", p, replayed[p], real[p])
		}
	}
	if len(real) != len(replayed) {
		v.t.Errorf("replayed tree has %d paths, real final tree %d", len(replayed), len(real))
	}
	return recs
}

// find returns the records of op on path (path2 too for two-path ops).
func find(recs []journal.Record, op journal.Op, path string) []journal.Record {
	var out []journal.Record
	for _, r := range recs {
		if r.Op == op && (r.Path == path || r.Path2 == path) {
			out = append(out, r)
		}
	}
	return out
}

// want requires exactly one... at least one record of op on path with the
// given decision and result, and returns the last.
func want(t *testing.T, recs []journal.Record, op journal.Op, path string, d journal.Decision, result string) journal.Record {
	t.Helper()
	for _, r := range slicesReverse(find(recs, op, path)) {
		if r.Decision == d && r.Result == result {
			return r
		}
	}
	t.Fatalf("no %s record for %s with decision %s and result %s; have %+v", op, path, d, result, find(recs, op, path))
	return journal.Record{}
}

func slicesReverse(rs []journal.Record) []journal.Record {
	out := make([]journal.Record, len(rs))
	for i, r := range rs {
		out[len(rs)-1-i] = r
	}
	return out
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteReadBothModes(t *testing.T) {
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			content := []byte("hello world\n")
			if err := os.WriteFile(v.p("src/new.py"), content, 0o644); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, v.p("src/new.py")); got != string(content) {
				t.Fatalf("read back %q, want %q", got, content)
			}
			if got := readFile(t, filepath.Join(v.backing, "src/new.py")); got != string(content) {
				t.Fatalf("backing holds %q, want %q", got, content)
			}
			st, err := os.Stat(v.p("src/new.py"))
			if err != nil || st.Size() != int64(len(content)) {
				t.Fatalf("stat: size %v err %v, want %d", st.Size(), err, len(content))
			}
			recs := v.finish()
			c := want(t, recs, journal.OpCreate, "src/new.py", journal.Allowed, "ok")
			if c.PID == 0 || c.Comm == "" {
				t.Errorf("create record has no caller: pid %d comm %q", c.PID, c.Comm)
			}
			if c.PID != uint32(os.Getpid()) {
				t.Errorf("create pid: got %d, want %d (this test)", c.PID, os.Getpid())
			}
			rel := want(t, recs, journal.OpRelease, "src/new.py", journal.Allowed, "ok")
			if rel.SHA256 != sum(content) || rel.Size != int64(len(content)) {
				t.Errorf("release: got sha %s size %d, want %s %d", rel.SHA256, rel.Size, sum(content), len(content))
			}
			writes := find(recs, journal.OpWrite, "src/new.py")
			if mode == fsmon.ModeWrites && (len(writes) != 1 || writes[0].Size != int64(len(content)) || writes[0].Offset != 0) {
				t.Errorf("writes mode: got write records %+v, want one of %d bytes at 0", writes, len(content))
			}
			if mode == fsmon.ModeContent && len(writes) != 0 {
				t.Errorf("content mode: got %d write records, want none (passthrough)", len(writes))
			}
			if recs[0].Op != journal.OpMount || recs[len(recs)-1].Op != journal.OpUnmount {
				t.Errorf("journal starts with %s and ends with %s, want mount ... unmount", recs[0].Op, recs[len(recs)-1].Op)
			}
			cs, err := v.v.Changeset()
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.String(); got != "added src/new.py\n" {
				t.Errorf("changeset: got %q, want %q", got, "added src/new.py\n")
			}
		})
	}
}

func TestAppendTruncate(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	f, err := os.OpenFile(v.p("src/counter.py"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		fmt.Fprintf(f, "line %d\n", i)
	}
	f.Close()
	if got, want := readFile(t, v.p("src/counter.py")), "x = 1\nline 0\nline 1\nline 2\n"; got != want {
		t.Fatalf("after O_APPEND: got %q, want %q", got, want)
	}
	if err := os.WriteFile(v.p("src/pkg/mod.py"), []byte("z"), 0o644); err != nil { // O_TRUNC
		t.Fatal(err)
	}
	f, err = os.OpenFile(v.p("src/counter.py"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := readFile(t, v.p("src/counter.py")); got != "x =" {
		t.Fatalf("after ftruncate: got %q", got)
	}
	// Denied: truncate and O_TRUNC on a protected file.
	wantErrno(t, "truncate README.md", os.Truncate(v.p("README.md"), 0), syscall.EACCES)
	_, err = os.OpenFile(v.p("README.md"), os.O_WRONLY|os.O_TRUNC, 0)
	wantErrno(t, "O_TRUNC README.md", err, syscall.EACCES)
	_, err = os.OpenFile(v.p("README.md"), os.O_WRONLY|os.O_APPEND, 0)
	wantErrno(t, "O_APPEND README.md", err, syscall.EACCES)
	if got := readFile(t, v.p("README.md")); got != "readme\n" {
		t.Fatalf("protected file changed: %q", got)
	}
	recs := v.finish()
	want(t, recs, journal.OpOpen, "src/counter.py", journal.Allowed, "ok")
	want(t, recs, journal.OpTruncate, "src/pkg/mod.py", journal.Allowed, "ok")
	tr := want(t, recs, journal.OpTruncate, "src/counter.py", journal.Allowed, "ok")
	if tr.Size != 3 {
		t.Errorf("ftruncate record size: got %d, want 3", tr.Size)
	}
	want(t, recs, journal.OpTruncate, "README.md", journal.Denied, "EACCES")
	want(t, recs, journal.OpOpen, "README.md", journal.Denied, "EACCES")
	if rel := want(t, recs, journal.OpRelease, "src/counter.py", journal.Allowed, "ok"); rel.SHA256 != sum([]byte("x =")) {
		t.Errorf("last release of counter.py: got %s, want the hash of %q", rel.SHA256, "x =")
	}
}

// TestTruncateByPath: truncate(2) by path, which no release follows,
// shrinking a file and growing another past its end (a hole), in both
// modes: each truncate record carries the content it left, so the
// journal replays to the final tree (finish checks it); a refused one
// carries none.
func TestTruncateByPath(t *testing.T) {
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			if err := os.Truncate(v.p("src/counter.py"), 2); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(v.p("src/pkg/mod.py"), 1<<20); err != nil {
				t.Fatal(err)
			}
			wantErrno(t, "truncate README.md", os.Truncate(v.p("README.md"), 3), syscall.EACCES)
			recs := v.finish()
			if tr := want(t, recs, journal.OpTruncate, "src/counter.py", journal.Allowed, "ok"); tr.SHA256 != sum([]byte("x ")) || tr.Size != 2 {
				t.Errorf("truncate of counter.py: got %s size %d, want the hash of %q", tr.SHA256, tr.Size, "x ")
			}
			grown, _ := os.ReadFile(filepath.Join(v.backing, "src", "pkg", "mod.py"))
			if tr := want(t, recs, journal.OpTruncate, "src/pkg/mod.py", journal.Allowed, "ok"); len(grown) != 1<<20 || tr.SHA256 != sum(grown) {
				t.Errorf("truncate of mod.py: got %s size %d, want the hash of its %d bytes", tr.SHA256, tr.Size, len(grown))
			}
			if tr := want(t, recs, journal.OpTruncate, "README.md", journal.Denied, "EACCES"); tr.SHA256 != "" {
				t.Errorf("refused truncate carries content %s", tr.SHA256)
			}
		})
	}
}

func TestRenames(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	os.WriteFile(v.p("src/a.py"), []byte("A"), 0o644)
	// Rename over an existing allowed file.
	if err := os.Rename(v.p("src/a.py"), v.p("src/counter.py")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, v.p("src/counter.py")); got != "A" {
		t.Fatalf("after rename over: got %q", got)
	}
	// Rename of a directory whose contents are all allowed.
	if err := os.Rename(v.p("src/pkg"), v.p("new/pkg2")); err != nil {
		if err := os.Mkdir(v.p("new"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(v.p("src/pkg"), v.p("new/pkg2")); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, v.p("new/pkg2/mod.py")); got != "y = 2\n" {
		t.Fatalf("after directory rename: got %q", got)
	}
	// Denied: moving a protected file away, over a protected file, a
	// directory holding protected files, and exchanging with one.
	wantErrno(t, "rename tests/test_x.py to src/", os.Rename(v.p("tests/test_x.py"), v.p("src/t.py")), syscall.EACCES)
	wantErrno(t, "rename src/counter.py over README.md", os.Rename(v.p("src/counter.py"), v.p("README.md")), syscall.EACCES)
	wantErrno(t, "rename dir docs", os.Rename(v.p("docs"), v.p("src/docs")), syscall.EACCES)
	wantErrno(t, "rename dir tests into new/", os.Rename(v.p("tests"), v.p("new/tests")), syscall.EACCES)
	wantErrno(t, "exchange", unix.Renameat2(unix.AT_FDCWD, v.p("src/counter.py"), unix.AT_FDCWD, v.p("README.md"), unix.RENAME_EXCHANGE), syscall.EACCES)
	// A protected directory moved under an allowed name: every path
	// below is checked.
	os.MkdirAll(v.p("src/d/e"), 0o755)
	os.WriteFile(v.p("src/d/e/f.py"), []byte("f"), 0o644)
	wantErrno(t, "rename src/d to docs/d", os.Rename(v.p("src/d"), v.p("docs/d")), syscall.EACCES)
	recs := v.finish()
	want(t, recs, journal.OpRename, "src/a.py", journal.Allowed, "ok")
	want(t, recs, journal.OpRename, "src/pkg", journal.Allowed, "ok")
	want(t, recs, journal.OpRename, "tests/test_x.py", journal.Denied, "EACCES")
	want(t, recs, journal.OpRename, "docs", journal.Denied, "EACCES")
	want(t, recs, journal.OpRename, "src/d", journal.Denied, "EACCES")
	cs, _ := v.v.Changeset()
	for _, c := range cs {
		if strings.HasPrefix(c.Path, "tests/") || c.Path == "README.md" || strings.HasPrefix(c.Path, "docs/") {
			t.Errorf("changeset touches a protected path: %+v", c)
		}
	}
	if !strings.Contains(cs.String(), "renamed src/pkg/mod.py -> new/pkg2/mod.py") {
		t.Errorf("changeset misses the rename found by content hash:\n%s", cs)
	}
}

func TestUnlinkOpenFile(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	os.WriteFile(v.p("src/gone.txt"), []byte("still here"), 0o644)
	r, err := os.Open(v.p("src/gone.txt"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(v.p("src/gone.txt"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(v.p("src/gone.txt")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	n, err := r.ReadAt(b, 0)
	if string(b[:n]) != "still here" {
		t.Fatalf("reader of an unlinked file read %q (%v)", b[:n], err)
	}
	w.WriteAt([]byte("STILL"), 0)
	w.Close()
	r.Close()
	wantErrno(t, "unlink README.md", os.Remove(v.p("README.md")), syscall.EACCES)
	wantErrno(t, "rmdir tests", os.RemoveAll(v.p("tests")), syscall.EACCES)
	recs := v.finish()
	want(t, recs, journal.OpUnlink, "src/gone.txt", journal.Allowed, "ok")
	want(t, recs, journal.OpUnlink, "README.md", journal.Denied, "EACCES")
	if _, err := os.Stat(filepath.Join(v.backing, "tests/test_x.py")); err != nil {
		t.Fatalf("protected file removed: %v", err)
	}
}

func TestLinksAndSymlinks(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	if err := os.Link(v.p("src/counter.py"), v.p("src/counter2.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("counter.py", v.p("src/link.py")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Readlink(v.p("src/link.py")); got != "counter.py" {
		t.Fatalf("readlink: got %q", got)
	}
	// Denied: a second name for a protected file, a symlink in a
	// protected place, writing through an allowed symlink that points at
	// a protected file.
	wantErrno(t, "link protected", os.Link(v.p("tests/test_x.py"), v.p("src/t.py")), syscall.EACCES)
	wantErrno(t, "symlink in tests/", os.Symlink("x", v.p("tests/l")), syscall.EACCES)
	if err := os.Symlink("../README.md", v.p("src/readme-link")); err != nil {
		t.Fatal(err)
	}
	err := os.WriteFile(v.p("src/readme-link"), []byte("pwned"), 0o644)
	wantErrno(t, "write through symlink", err, syscall.EACCES)
	if got := readFile(t, v.p("README.md")); got != "readme\n" {
		t.Fatalf("protected file changed through a symlink: %q", got)
	}
	recs := v.finish()
	want(t, recs, journal.OpLink, "src/counter2.py", journal.Allowed, "ok")
	want(t, recs, journal.OpLink, "tests/test_x.py", journal.Denied, "EACCES")
	if s := want(t, recs, journal.OpSymlink, "src/link.py", journal.Allowed, "ok"); s.Target != "counter.py" {
		t.Errorf("symlink target: got %q", s.Target)
	}
	want(t, recs, journal.OpSymlink, "tests/l", journal.Denied, "EACCES")
	want(t, recs, journal.OpOpen, "README.md", journal.Denied, "EACCES")
}

func TestDirsModesTimesXattrs(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	if err := os.MkdirAll(v.p("src/a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(v.p("src/a/b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(v.p("src/counter.py"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(v.p("src/counter.py")); st.Mode().Perm() != 0o600 {
		t.Fatalf("chmod: got %v", st.Mode())
	}
	ts := []unix.Timespec{{Sec: 1000}, {Sec: 2000}}
	if err := unix.UtimesNano(v.p("src/counter.py"), ts); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(v.p("src/counter.py")); st.ModTime().Unix() != 2000 {
		t.Fatalf("utimens: mtime %v", st.ModTime())
	}
	if err := unix.Setxattr(v.p("src/counter.py"), "user.note", []byte("hi"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := unix.Getxattr(v.p("src/counter.py"), "user.note", buf); err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("getxattr: %q %v", buf[:n], err)
	}
	if err := unix.Removexattr(v.p("src/counter.py"), "user.note"); err != nil {
		t.Fatal(err)
	}
	// Denied and refused.
	wantErrno(t, "mkdir in tests", os.Mkdir(v.p("tests/sub"), 0o755), syscall.EACCES)
	wantErrno(t, "rmdir docs/guide", unix.Rmdir(v.p("docs/guide")), syscall.EACCES)
	wantErrno(t, "chmod README", os.Chmod(v.p("README.md"), 0o777), syscall.EACCES)
	wantErrno(t, "setuid", unix.Chmod(v.p("src/counter.py"), 0o4755), syscall.EPERM)
	wantErrno(t, "setgid", unix.Chmod(v.p("src/counter.py"), 0o2755), syscall.EPERM)
	wantErrno(t, "utimens README", unix.UtimesNano(v.p("README.md"), ts), syscall.EACCES)
	wantErrno(t, "setxattr README", unix.Setxattr(v.p("README.md"), "user.x", []byte("1"), 0), syscall.EACCES)
	wantErrno(t, "mknod char device", unix.Mknod(v.p("src/null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))), syscall.EPERM)
	if err := unix.Mkfifo(v.p("src/fifo"), 0o644); err != nil {
		t.Fatalf("mkfifo in an allowed place: %v", err)
	}
	wantErrno(t, "create in tests", os.WriteFile(v.p("tests/new.py"), nil, 0o644), syscall.EACCES)
	recs := v.finish()
	want(t, recs, journal.OpMkdir, "src/a/b", journal.Allowed, "ok")
	want(t, recs, journal.OpRmdir, "src/a/b", journal.Allowed, "ok")
	if c := want(t, recs, journal.OpChmod, "src/counter.py", journal.Allowed, "ok"); c.Mode&0o777 != 0o600 {
		t.Errorf("chmod record mode: got %o", c.Mode)
	}
	want(t, recs, journal.OpUtimens, "src/counter.py", journal.Allowed, "ok")
	if x := want(t, recs, journal.OpSetxattr, "src/counter.py", journal.Allowed, "ok"); x.Name != "user.note" {
		t.Errorf("setxattr record name: got %q", x.Name)
	}
	want(t, recs, journal.OpRemovexattr, "src/counter.py", journal.Allowed, "ok")
	want(t, recs, journal.OpMkdir, "tests/sub", journal.Denied, "EACCES")
	want(t, recs, journal.OpRmdir, "docs/guide", journal.Denied, "EACCES")
	want(t, recs, journal.OpChmod, "README.md", journal.Denied, "EACCES")
	want(t, recs, journal.OpChmod, "src/counter.py", journal.Denied, "EPERM")
	want(t, recs, journal.OpUtimens, "README.md", journal.Denied, "EACCES")
	want(t, recs, journal.OpSetxattr, "README.md", journal.Denied, "EACCES")
	want(t, recs, journal.OpMknod, "src/null", journal.Denied, "EPERM")
	want(t, recs, journal.OpMknod, "src/fifo", journal.Allowed, "ok")
	want(t, recs, journal.OpCreate, "tests/new.py", journal.Denied, "EACCES")
	if st := v.v.Stats(); st.Denied != 9 {
		t.Errorf("stats: got %d denied, want 9", st.Denied)
	}
}

func TestSharedMmapWrite(t *testing.T) {
	testenv.Require(t, testenv.Python)
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			// The mapping is written by another process: a page fault of
			// this process on its own view would stall a garbage
			// collection that stops the threads serving the fault.
			script := `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[100:112] = b"mapped write"
m.close()
os.close(fd)
`
			if out, err := exec.Command("/usr/bin/python3", "-c", script, v.p("src/mm.bin")).CombinedOutput(); err != nil {
				t.Fatalf("mmap writer: %v: %s", err, out)
			}
			wantContent := make([]byte, 8192)
			copy(wantContent[100:], "mapped write")
			if got := readFile(t, filepath.Join(v.backing, "src/mm.bin")); got != string(wantContent) {
				t.Fatalf("backing file misses the mmap write")
			}
			recs := v.finish()
			if rel := want(t, recs, journal.OpRelease, "src/mm.bin", journal.Allowed, "ok"); rel.SHA256 != sum(wantContent) {
				t.Errorf("release after mmap write: got %s, want %s", rel.SHA256, sum(wantContent))
			}
		})
	}
}

func TestSparseAndLargeFiles(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	f, err := os.Create(v.p("src/sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("end"), 64<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(v.backing, "src/sparse.bin"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 64<<20+3 || st.Blocks*512 > 1<<20 {
		t.Fatalf("sparse file: size %d, %d bytes allocated; want a hole", st.Size, st.Blocks*512)
	}
	// Over 1 GiB of real data, in 1 MiB writes.
	big, err := os.Create(v.p("out.bin"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	h := sha256.New()
	const n = 1025 // 1 GiB + 1 MiB
	for i := 0; i < n; i++ {
		chunk[0] = byte(i)
		if _, err := big.Write(chunk); err != nil {
			t.Fatal(err)
		}
		h.Write(chunk)
	}
	big.Close()
	recs := v.finish()
	rel := want(t, recs, journal.OpRelease, "out.bin", journal.Allowed, "ok")
	if rel.Size != n<<20 || rel.SHA256 != hex.EncodeToString(h.Sum(nil)) {
		t.Errorf("large file release: size %d sha %s, want %d %x", rel.Size, rel.SHA256, n<<20, h.Sum(nil))
	}
	sp := want(t, recs, journal.OpRelease, "src/sparse.bin", journal.Allowed, "ok")
	if sp.Size != 64<<20+3 {
		t.Errorf("sparse release size: got %d", sp.Size)
	}
	// The hole is a hole in the blob too (and in the final snapshot's).
	blobs := &journal.Blobs{Dir: journal.BlobsDir(v.jpath)}
	bp, err := blobs.Path(sp.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(bp, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > 1<<20 {
		t.Errorf("blob of the sparse file: %d bytes allocated, want its hole kept", st.Blocks*512)
	}
}

// TestTruncatedHole: truncate -s 1G of a new file journals a release
// whose blob is a 1 GiB hole, not a gigabyte of zeros on disk, and the
// replayed file is a hole too.
func TestTruncatedHole(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	if out, err := exec.Command("truncate", "-s", "1G", v.p("src/big.img")).CombinedOutput(); err != nil {
		t.Fatalf("truncate -s 1G: %v: %s", err, out)
	}
	recs := v.finish()
	rel := want(t, recs, journal.OpRelease, "src/big.img", journal.Allowed, "ok")
	if rel.Size != 1<<30 {
		t.Fatalf("release of the truncated file: size %d, want 1 GiB", rel.Size)
	}
	blobs := &journal.Blobs{Dir: journal.BlobsDir(v.jpath)}
	bp, err := blobs.Path(rel.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(bp, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 1<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("blob of the 1 GiB hole: size %d, %d bytes allocated; want 1 GiB, a hole", st.Size, st.Blocks*512)
	}
	dst := filepath.Join(t.TempDir(), "replay")
	if err := journal.Replay(recs, blobs, recs[len(recs)-1].Seq, dst); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(filepath.Join(dst, "src/big.img"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 1<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("replayed 1 GiB hole: size %d, %d bytes allocated; want 1 GiB, a hole", st.Size, st.Blocks*512)
	}
}

func TestNames(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	nfc, nfd := "src/caf\u00e9.py", "src/cafe\u0301.py"
	os.WriteFile(v.p(nfc), []byte("nfc"), 0o644)
	os.WriteFile(v.p(nfd), []byte("nfd"), 0o644)
	if readFile(t, v.p(nfc)) != "nfc" || readFile(t, v.p(nfd)) != "nfd" {
		t.Fatal("NFC and NFD names are not distinct files")
	}
	long := "src/" + strings.Repeat("n", 255)
	if err := os.WriteFile(v.p(long), []byte("long"), 0o644); err != nil {
		t.Fatalf("255-byte name: %v", err)
	}
	wantErrno(t, "256-byte name", os.WriteFile(v.p("src/"+strings.Repeat("n", 256)), nil, 0o644), syscall.ENAMETOOLONG)
	deep := "src" + strings.Repeat("/d", 60)
	if err := os.MkdirAll(v.p(deep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v.p(deep+"/leaf.txt"), []byte("deep"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs := v.finish()
	want(t, recs, journal.OpCreate, nfc, journal.Allowed, "ok")
	want(t, recs, journal.OpCreate, nfd, journal.Allowed, "ok")
	want(t, recs, journal.OpCreate, long, journal.Allowed, "ok")
	want(t, recs, journal.OpRelease, deep+"/leaf.txt", journal.Allowed, "ok")
	cs, _ := v.v.Changeset()
	if !strings.Contains(cs.String(), "added "+nfc+"\n") || !strings.Contains(cs.String(), "added "+nfd+"\n") {
		t.Errorf("changeset misses one of the NFC/NFD names:\n%s", cs)
	}
}

func TestTwoWriters(t *testing.T) {
	v := mount(t, fsmon.ModeWrites)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			f, err := os.Create(v.p(fmt.Sprintf("src/w%d.txt", i)))
			if err != nil {
				t.Error(err)
				return
			}
			for j := 0; j < 200; j++ {
				fmt.Fprintf(f, "writer %d line %d\n", i, j)
			}
			f.Close()
		}(i)
	}
	wg.Wait()
	recs := v.finish()
	for i := 0; i < 2; i++ {
		p := fmt.Sprintf("src/w%d.txt", i)
		var b strings.Builder
		for j := 0; j < 200; j++ {
			fmt.Fprintf(&b, "writer %d line %d\n", i, j)
		}
		if rel := want(t, recs, journal.OpRelease, p, journal.Allowed, "ok"); rel.SHA256 != sum([]byte(b.String())) {
			t.Errorf("%s: release hash does not match what was written", p)
		}
		if got := len(find(recs, journal.OpWrite, p)); got != 200 {
			t.Errorf("%s: got %d write records, want 200", p, got)
		}
	}
}

func TestIgnoredNoise(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	os.MkdirAll(v.p("src/__pycache__"), 0o755)
	os.WriteFile(v.p("src/__pycache__/counter.cpython-311.pyc"), []byte("pyc"), 0o644)
	os.WriteFile(v.p("junk.pyc"), []byte("pyc"), 0o644)
	recs := v.finish()
	want(t, recs, journal.OpMkdir, "src/__pycache__", journal.Ignored, "ok")
	want(t, recs, journal.OpCreate, "src/__pycache__/counter.cpython-311.pyc", journal.Ignored, "ok")
	want(t, recs, journal.OpCreate, "junk.pyc", journal.Ignored, "ok")
	if cs, _ := v.v.Changeset(); len(cs) != 0 {
		t.Errorf("changeset of noise only: got %s, want none", cs)
	}
}

func TestMountErrors(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE)
	tmp := t.TempDir()
	w, err := journal.Create(filepath.Join(tmp, "j"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	os.Mkdir(filepath.Join(tmp, "b"), 0o755)
	os.Mkdir(filepath.Join(tmp, "full"), 0o755)
	os.WriteFile(filepath.Join(tmp, "full/x"), nil, 0o644)
	cases := []struct {
		name string
		cfg  fsmon.Config
		want error
	}{
		{"no backing", fsmon.Config{Backing: filepath.Join(tmp, "nope"), Mountpoint: filepath.Join(tmp, "full"), Journal: w}, fsmon.ErrInvalid},
		{"mountpoint not empty", fsmon.Config{Backing: filepath.Join(tmp, "b"), Mountpoint: filepath.Join(tmp, "full"), Journal: w}, fsmon.ErrBusy},
		{"bad glob", fsmon.Config{Backing: filepath.Join(tmp, "b"), Mountpoint: filepath.Join(tmp, "b"), Journal: w, Policy: journal.Policy{Allow: []string{"[x"}}}, fsmon.ErrInvalid},
		{"bad mode", fsmon.Config{Backing: filepath.Join(tmp, "b"), Mountpoint: filepath.Join(tmp, "b"), Journal: w, Mode: "fast"}, fsmon.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := fsmon.Mount(context.Background(), c.cfg)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// TestUnlinkedOpenFile: writes, fallocate, ftruncate and copy_file_range
// on a file whose name was removed while it was open (what
// tempfile.TemporaryFile does when O_TMPFILE is refused) are journaled
// with no path and the last name in Target, allowed as at open; the
// journal verifies and replays, and a new file made under the old name
// afterwards is not touched by them in the replay.
func TestUnlinkedOpenFile(t *testing.T) {
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			f, err := os.OpenFile(v.p("src/tmpabc"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(v.p("src/tmpabc")); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("spooled data")); err != nil {
				t.Fatal(err)
			}
			if err := unix.Fallocate(int(f.Fd()), 0, 0, 1<<20); err != nil {
				t.Fatalf("fallocate on the unlinked file: %v", err)
			}
			if err := f.Truncate(100); err != nil {
				t.Fatalf("ftruncate on the unlinked file: %v", err)
			}
			src, err := os.Open(v.p("src/counter.py"))
			if err != nil {
				t.Fatal(err)
			}
			off := int64(200)
			if _, err := unix.CopyFileRange(int(src.Fd()), nil, int(f.Fd()), &off, 5, 0); err != nil {
				t.Fatalf("copy_file_range into the unlinked file: %v", err)
			}
			src.Close()
			f.Close()
			if err := os.WriteFile(v.p("src/tmpabc"), []byte("a new file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			recs := v.finish() // verifies, replays, compares with the backing tree

			unnamed := map[journal.Op]journal.Record{}
			for _, r := range recs {
				if r.Path == "" && r.Target == "src/tmpabc" {
					unnamed[r.Op] = r
				}
			}
			ops := []journal.Op{journal.OpFallocate, journal.OpTruncate, journal.OpCopyFileRange, journal.OpRelease}
			if mode == fsmon.ModeWrites {
				ops = append(ops, journal.OpWrite)
			}
			for _, op := range ops {
				r, ok := unnamed[op]
				if !ok {
					t.Errorf("no %s record of the unlinked file (path \"\", target src/tmpabc); records: %+v", op, recs)
					continue
				}
				if r.Result != "ok" || r.Decision != journal.Allowed {
					t.Errorf("%s of the unlinked file: got %s %s, want ok allowed", op, r.Result, r.Decision)
				}
			}
			blobs := &journal.Blobs{Dir: journal.BlobsDir(v.jpath)}
			dst := filepath.Join(t.TempDir(), "replay")
			if err := journal.Replay(recs, blobs, recs[len(recs)-2].Seq, dst); err != nil {
				t.Fatalf("replay: %v", err)
			}
			if got := readFile(t, filepath.Join(dst, "src/tmpabc")); got != "a new file\n" {
				t.Errorf("replayed src/tmpabc: got %q, want the new file's content", got)
			}
		})
	}
}

// TestTemporaryFile: Python's tempfile.TemporaryFile in the view (O_TMPFILE
// is refused, so it makes a named file and unlinks it) journals a
// journal that verifies and replays.
func TestTemporaryFile(t *testing.T) {
	testenv.Require(t, testenv.Python)
	v := mount(t, fsmon.ModeWrites)
	script := `
import os, sys, tempfile
with tempfile.TemporaryFile(dir=sys.argv[1]) as f:
    f.write(b"x" * 10000)
    f.flush()
    os.posix_fallocate(f.fileno(), 0, 65536)
    f.seek(0)
    assert f.read(3) == b"xxx"
`
	if out, err := exec.Command("/usr/bin/python3", "-c", script, v.p("src")).CombinedOutput(); err != nil {
		t.Fatalf("python TemporaryFile: %v: %s", err, out)
	}
	recs := v.finish()
	var writes, fallocs int
	for _, r := range recs {
		if r.Path == "" && strings.HasPrefix(r.Target, "src/tmp") {
			switch r.Op {
			case journal.OpWrite:
				writes++
			case journal.OpFallocate:
				fallocs++
			}
		}
	}
	if writes == 0 || fallocs == 0 {
		t.Errorf("TemporaryFile: got %d write and %d fallocate records of the unnamed file, want at least one each", writes, fallocs)
	}
}

// TestReleaseOrder: the kernel sends a file's release after close
// returns, so its capture can race with what follows the close: a
// truncate by path, or the release of another handle of the same file.
// The records of a file's content are ordered as their reads of it, so
// the last one holds the file's last content and the journal replays to
// the tree.
func TestReleaseOrder(t *testing.T) {
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			p := v.p("src/counter.py")
			for i := range 40 {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(f, "round %d: %s\n", i, strings.Repeat("x", 200))
				g, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(g, "appended %d\n", i)
				g.Close()
				f.Close()
				if err := os.Truncate(p, int64(5+i%7)); err != nil {
					t.Fatal(err)
				}
			}
			v.finish() // verifies that the journal replays to the tree
		})
	}
}

// TestCapabilityXattr: a file the view made answers that it has no
// security.capability without the view reading it, until one is set:
// then it reads back.
func TestCapabilityXattr(t *testing.T) {
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			p := v.p("src/tool")
			if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			_, err := unix.Getxattr(p, "security.capability", buf)
			wantErrno(t, "getxattr security.capability of a new file", err, unix.ENODATA)
			// VFS_CAP_REVISION_2 granting CAP_NET_BIND_SERVICE.
			caps := []byte{0, 0, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
			if err := unix.Setxattr(p, "security.capability", caps, 0); err != nil {
				t.Fatal(err)
			}
			n, err := unix.Getxattr(p, "security.capability", buf)
			if err != nil || !bytes.Equal(buf[:n], caps) {
				t.Fatalf("getxattr after setxattr: got %x (%v), want %x", buf[:n], err, caps)
			}
			v.finish()
		})
	}
}

// TestMountRecordOnDisk: once Mount returns, the journal file holds the
// mount record, whatever the writer's batch interval: benchd killed at
// any point after it leaves a journal start-up recovery can seal.
func TestMountRecordOnDisk(t *testing.T) {
	v := mountWith(t, fsmon.Config{})
	recs, err := journal.Read(v.jpath)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || recs[0].Op != journal.OpMount {
		t.Fatalf("journal file right after Mount: %d records, want the mount record first", len(recs))
	}
}
