package fsmon_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
)

// seedEntries is the number of entries seed makes (files and
// directories).
const seedEntries = 10

// hostile runs a Python program (the agent) with args and decodes the
// JSON object it prints last. Its working directory is outside the view
// (see "Forking from the serving process" in the package doc).
func hostile(t *testing.T, program string, args ...string) map[string]any {
	t.Helper()
	testenv.Require(t, testenv.Python)
	cmd := exec.Command("/usr/bin/python3", append([]string{"-c", program}, args...)...)
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hostile program: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("hostile program printed %q: %v", out, err)
	}
	return res
}

// createMany makes argv[2] files in directory argv[1] (made first) and
// reports how many it made and the errno names of those it could not
// (counted by name).
const createMany = `
import errno, json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
made, errs = 0, {}
for i in range(n):
    try:
        open(os.path.join(d, "f%06d" % i), "wb").close()
        made += 1
    except OSError as e:
        k = errno.errorcode.get(e.errno, str(e.errno))
        errs[k] = errs.get(k, 0) + 1
print(json.dumps({"made": made, "errors": errs}))
`

// capRecords returns the journal's cap records of first refusals.
func capRecords(recs []journal.Record) []journal.Record {
	var out []journal.Record
	for _, r := range recs {
		if r.Op == journal.OpCap && !r.IsCapCount() {
			out = append(out, r)
		}
	}
	return out
}

// capCount returns the refusals the journal's count record for cap
// says, and -1 when there is not exactly one.
func capCount(recs []journal.Record, cap string) int64 {
	n, found := int64(-1), 0
	for _, r := range recs {
		if r.IsCapCount() && r.Name == cap {
			n = r.Size
			found++
		}
	}
	if found != 1 {
		return -1
	}
	return n
}

// wantOneCap checks that the journal holds exactly one cap record of a
// first refusal, for cap, with result errno, and one count record for
// it, after every other record but the unmount.
func wantOneCap(t *testing.T, recs []journal.Record, cap, errno string) {
	t.Helper()
	if n := capCount(recs, cap); n < 1 {
		t.Errorf("count record for cap %s: got %d refusals, want one record of at least 1", cap, n)
	}
	if len(recs) < 2 || !recs[len(recs)-2].IsCapCount() {
		t.Errorf("the count record is not just before the unmount record")
	}
	caps := capRecords(recs)
	if len(caps) != 1 || caps[0].Name != cap || caps[0].Result != errno {
		t.Fatalf("got cap records %+v, want one for %s with result %s", caps, cap, errno)
	}
	if caps[0].PID == 0 {
		t.Errorf("cap record names no caller: %+v", caps[0])
	}
	if got := journal.CapsOf(recs); !slices.Equal(got, []string{cap}) {
		t.Errorf("CapsOf: got %v, want [%s]", got, cap)
	}
}

func TestCapsFiles(t *testing.T) {
	const extra = 20
	v := mountWith(t, fsmon.Config{MaxFiles: seedEntries + extra})
	if st := v.v.Stats(); st.Files != seedEntries {
		t.Fatalf("files at mount: got %d, want %d (the seeded tree)", st.Files, seedEntries)
	}
	// The directory new/ is one entry; extra-1 files fit beside it.
	res := hostile(t, createMany, v.p("new"), "50")
	if got := res["made"].(float64); got != extra-1 {
		t.Errorf("files made: got %v, want %d", got, extra-1)
	}
	if got, _ := res["errors"].(map[string]any)["EDQUOT"].(float64); got != 50-(extra-1) {
		t.Errorf("creates refused with EDQUOT: got %v (%v), want %d", got, res["errors"], 50-(extra-1))
	}
	// Every kind of new entry is refused at the cap.
	wantErrno(t, "mkdir at the cap", os.Mkdir(v.p("src/d"), 0o755), syscall.EDQUOT)
	wantErrno(t, "symlink at the cap", os.Symlink("x", v.p("src/l")), syscall.EDQUOT)
	wantErrno(t, "link at the cap", os.Link(v.p("src/counter.py"), v.p("src/c2")), syscall.EDQUOT)
	// Opening an existing file and renaming over one add nothing.
	if err := os.WriteFile(v.p("new/f000000"), []byte("x"), 0o644); err != nil {
		t.Fatalf("rewriting an existing file at the cap: %v", err)
	}
	if err := os.Rename(v.p("new/f000001"), v.p("new/f000002")); err != nil {
		t.Fatalf("rename over a file at the cap: %v", err)
	}
	// The rename freed one entry, and so does an unlink.
	if err := os.WriteFile(v.p("new/again1"), nil, 0o644); err != nil {
		t.Fatalf("create after a rename replaced a file: %v", err)
	}
	if err := os.Remove(v.p("new/f000003")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(v.p("new/again2"), 0o755); err != nil {
		t.Fatalf("mkdir after an unlink: %v", err)
	}
	wantErrno(t, "create at the cap again", os.WriteFile(v.p("new/again3"), nil, 0o644), syscall.EDQUOT)
	st := v.v.Stats()
	if st.Files != seedEntries+extra || !slices.Equal(st.Caps, []string{journal.CapFiles}) {
		t.Errorf("stats: got files %d caps %v, want %d [files]", st.Files, st.Caps, seedEntries+extra)
	}
	recs := v.finish()
	wantOneCap(t, recs, journal.CapFiles, "EDQUOT")
	final, err := journal.ScanTree(v.backing)
	if err != nil {
		t.Fatal(err)
	}
	if len(final) != seedEntries+extra {
		t.Errorf("final tree: got %d entries, want %d", len(final), seedEntries+extra)
	}
}

// TestCapsFilesDefault: the program creates 100,001 files under the
// default cap.
func TestCapsFilesDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 100,001 files")
	}
	v := mountWith(t, fsmon.Config{})
	const n = 100_001
	res := hostile(t, createMany, v.p("new"), "100001")
	room := fsmon.DefaultMaxFiles - seedEntries - 1 // new/ itself
	if got := res["made"].(float64); got != float64(room) {
		t.Errorf("files made: got %v, want %d", got, room)
	}
	if got, _ := res["errors"].(map[string]any)["EDQUOT"].(float64); got != float64(n-room) {
		t.Errorf("creates refused with EDQUOT: got %v (%v), want %d", got, res["errors"], n-room)
	}
	if st := v.v.Stats(); st.Files != fsmon.DefaultMaxFiles {
		t.Errorf("files held: got %d, want %d", st.Files, fsmon.DefaultMaxFiles)
	}
	wantOneCap(t, v.finish(), journal.CapFiles, "EDQUOT")
}

// renameLoop renames argv[1] to argv[2] and back up to argv[3] times
// and reports how many renames succeeded and the first error.
const renameLoop = `
import errno, json, os, sys
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
done, err = 0, None
for i in range(n):
    try:
        os.rename(a, b)
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    a, b = b, a
    done += 1
print(json.dumps({"done": done, "error": err}))
`

func TestCapsRecords(t *testing.T) {
	const max = 300
	v := mountWith(t, fsmon.Config{MaxRecords: max})
	res := hostile(t, renameLoop, v.p("src/counter.py"), v.p("src/moved.py"), "100000")
	if res["error"] != "ENOSPC" {
		t.Fatalf("the rename loop ended with %v after %v renames, want ENOSPC", res["error"], res["done"])
	}
	if got := res["done"].(float64); got != max-1 {
		t.Errorf("renames done: got %v, want %d (the cap less the mount record)", got, max-1)
	}
	// At the cap every change is refused, with nothing more journaled:
	// an allowed write, a change the policy refuses, a chmod.
	wantErrno(t, "open for writing at the records cap", os.WriteFile(v.p("src/x.py"), nil, 0o644), syscall.ENOSPC)
	wantErrno(t, "unlink of a protected file at the records cap", os.Remove(v.p("README.md")), syscall.ENOSPC)
	wantErrno(t, "chmod at the records cap", os.Chmod(v.p("src/pkg/mod.py"), 0o600), syscall.ENOSPC)
	// Reading goes on.
	if got := readFile(t, v.p("README.md")); got != "readme\n" {
		t.Errorf("read at the records cap: got %q", got)
	}
	if st := v.v.Stats(); st.Records != max+1 || st.Denied != 0 {
		t.Errorf("stats: got %d records %d denied, want %d (the cap record after the cap) and 0", st.Records, st.Denied, max+1)
	}
	recs := v.finish() // the unmount record still follows; the journal verifies and replays
	wantOneCap(t, recs, journal.CapRecords, "ENOSPC")
	if last := recs[len(recs)-1]; last.Op != journal.OpUnmount || len(recs) != max+3 {
		t.Errorf("journal: %d records ending in %s, want %d (the cap's count and the unmount after it) ending in unmount", len(recs), last.Op, max+3)
	}
}

// writeFiles writes files of argv[2] bytes of distinct content into
// argv[1] until one fails, at most argv[3], and reports how many it
// wrote and the errno that stopped it.
const writeFiles = `
import errno, json, os, sys
d, size, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
done, err = 0, None
for i in range(n):
    try:
        with open(os.path.join(d, "b%04d" % i), "wb") as f:
            f.write((b"%08d" % i) * (size // 8))
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    done += 1
print(json.dumps({"done": done, "error": err}))
`

func TestCapsBlobBytes(t *testing.T) {
	const storage = 256 << 10 // a budget of 1 MiB
	const size = 64 << 10
	budget := int64(fsmon.BlobFactor * storage)
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mountWith(t, fsmon.Config{Mode: mode, StorageBytes: storage})
			// A file may not grow past what is left, sparse or not,
			// in either mode.
			wantErrno(t, "truncate to 1T", os.Truncate(v.p("src/counter.py"), 1<<40), syscall.EFBIG)
			if mode == fsmon.ModeWrites {
				f, err := os.OpenFile(v.p("src/big.bin"), os.O_WRONLY|os.O_CREATE, 0o644)
				if err == nil {
					_, err = f.WriteAt([]byte("x"), budget)
					f.Close()
				}
				wantErrno(t, "a write past the budget", err, syscall.EFBIG)
			}
			// The initial tree's content and manifest are in the
			// store already and count against the budget.
			base := v.v.Stats().BlobBytes
			if base <= 0 || base >= size {
				t.Fatalf("blob bytes at mount: %d, want the seeded tree's few hundred", base)
			}
			res := hostile(t, writeFiles, v.p("new"), "65536", "1000")
			// Content mode: each file's content is stored at its
			// release, and an open for writing is refused once what
			// is stored and what files still open for writing hold
			// reach the budget (the kernel sends a release after
			// close returns, so the next open may come first; the
			// file still counts). Writes mode sees each write: the
			// one that grows a file past what is left is refused.
			stop, want := "ENOSPC", (budget-base+size-1)/size
			if mode == fsmon.ModeWrites {
				stop, want = "EFBIG", (budget-base)/size
			}
			if res["error"] != stop {
				t.Fatalf("the write loop ended with %v after %v files, want %s", res["error"], res["done"], stop)
			}
			if got := int64(res["done"].(float64)); got != want {
				t.Errorf("files written: got %d, want %d (%d B each, budget %d B, %d B stored at mount)", got, want, size, budget, base)
			}
			// Every file written is stored, the last one maybe not
			// yet (its release may still be on its way); writes mode
			// may store a part of the refused file too.
			low, high := base+(want-1)*size, base+want*size
			if mode == fsmon.ModeWrites {
				high += size
			}
			if st := v.v.Stats(); st.BlobBytes < low || st.BlobBytes > high {
				t.Errorf("blob bytes stored: got %d, want %d to %d (budget %d)", st.BlobBytes, low, high, budget)
			}
			// Shrinking, reading and removing go on.
			if err := os.Truncate(v.p("new/b0000"), 0); err != nil {
				t.Errorf("truncate to a smaller size at the budget: %v", err)
			}
			if err := os.Remove(v.p("new/b0001")); err != nil {
				t.Errorf("unlink at the budget: %v", err)
			}
			recs := v.finish()
			wantOneCap(t, recs, journal.CapBlobBytes, "EFBIG")
			var stored int64
			blobs := journal.BlobsDir(v.jpath)
			filepath.WalkDir(blobs, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if fi, err := d.Info(); err == nil {
						stored += fi.Size()
					}
				}
				return nil
			})
			// The final tree's content was stored at the releases
			// already: the store holds about the budget.
			if stored > budget+4*size {
				t.Errorf("blob store holds %d B, want at most about the budget %d B", stored, budget)
			}
		})
	}
}
