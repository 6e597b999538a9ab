package fsmon_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
)

// holdMany creates argv[2] files in directory argv[1] and holds each
// open for writing; it prints how many it holds and the errno names of
// the opens that failed, then waits for its stdin to close.
const holdMany = `
import errno, json, os, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
held, errs = [], {}
for i in range(n):
    try:
        held.append(os.open(os.path.join(d, "h%06d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError as e:
        k = errno.errorcode.get(e.errno, str(e.errno))
        errs[k] = errs.get(k, 0) + 1
print(json.dumps({"held": len(held), "errors": errs}), flush=True)
sys.stdin.read()
`

// holder is a running holdMany program.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	held  int
	errs  map[string]int
}

// startHolder runs holdMany on dir for n files and waits until it holds
// them.
func startHolder(t *testing.T, dir string, n int) *holder {
	t.Helper()
	testenv.Require(t, testenv.Python)
	cmd := exec.Command("/usr/bin/python3", "-c", holdMany, dir, fmt.Sprint(n))
	cmd.Dir = "/"
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(h.kill)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	var res struct {
		Held   int            `json:"held"`
		Errors map[string]int `json:"errors"`
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("holder printed %q: %v", line, err)
	}
	h.held, h.errs = res.Held, res.Errors
	return h
}

// kill ends the holder with SIGKILL: its files are closed by the
// kernel, which queues their RELEASE requests.
func (h *holder) kill() {
	if h.cmd.ProcessState != nil {
		return
	}
	h.cmd.Process.Kill()
	h.cmd.Wait()
}

// fdCount is how many descriptors this process (the serving one) holds.
func fdCount(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// fdNames is what this process's descriptors name.
func fdNames() []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"->"+l)
	}
	return out
}

// TestOpenFilesFlood: an agent that opens files without closing them
// gets EMFILE once its view holds MaxOpenFiles backing descriptors,
// while a neighbour's view beside it opens, writes and closes files
// without one failure; the serving process's descriptors stay within
// the two views' bounds, the refusals are counted in the flooder's
// journal, and none is in the neighbour's.
func TestOpenFilesFlood(t *testing.T) {
	const bound, flood = 300, 3000
	// The checks run once per process and keep what they opened: the
	// baseline is taken after them.
	testenv.Require(t, testenv.Root, testenv.FUSE, testenv.Python)
	base := fdCount(t)
	a := mountWith(t, fsmon.Config{MaxOpenFiles: bound})
	b := mountWith(t, fsmon.Config{MaxOpenFiles: bound})
	h := startHolder(t, a.p("new/flood"), flood)
	if h.held != bound || h.errs["EMFILE"] != flood-bound || len(h.errs) != 1 {
		t.Fatalf("flooder: got %d held, errors %v; want %d held and %d EMFILE", h.held, h.errs, bound, flood-bound)
	}
	if got := a.v.Stats().OpenFiles; got != bound {
		t.Errorf("flooded view's Stats.OpenFiles: got %d, want %d", got, bound)
	}
	during := fdCount(t)
	// Each view: its bound, its root, its /dev/fuse and its journal.
	if extra := during - base; extra > bound+16 {
		t.Errorf("descriptors while flooded: %d over the baseline, want at most %d", extra, bound+16)
	}
	t.Logf("descriptors: baseline %d, with the flooder holding %d files: %d", base, flood, during)
	if err := os.Mkdir(b.p("new"), 0o755); err != nil {
		t.Fatalf("neighbour mkdir: %v", err)
	}
	for i := range 500 {
		p := b.p(fmt.Sprintf("new/n%04d", i))
		data := []byte(strings.Repeat("x", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatalf("neighbour write %d: %v", i, err)
		}
		if got := readFile(t, p); got != string(data) {
			t.Fatalf("neighbour read %d: got %d bytes, want %d", i, len(got), len(data))
		}
	}
	// The flooder's view refuses its own next open too, and serves
	// reads of what it has open.
	if _, err := os.Open(a.p("README.md")); err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Errorf("open in the flooded view: got %v, want EMFILE", err)
	}
	h.kill()
	recs := a.finish()
	wantOneCap(t, recs, journal.CapOpenFiles, "EMFILE")
	if n := capCount(recs, journal.CapOpenFiles); n < flood-bound {
		t.Errorf("refusals counted: got %d, want at least %d", n, flood-bound)
	}
	if caps := journal.CapsOf(b.finish()); len(caps) != 0 {
		t.Errorf("neighbour's journal: got caps %v, want none", caps)
	}
	// go-fuse keeps a process-wide pool of pipe pairs (and /dev/null)
	// for splicing reads, made at the first reads: bounded, shared by
	// every view, and not the view's.
	const splicePool = 16
	if after := fdCount(t); after > base+splicePool {
		t.Errorf("descriptors after both views ended: got %d, want at most the baseline %d and go-fuse's splice pool: %v", after, base, fdNames())
	}
}

// TestEndLeavesNothing: an agent killed while it holds thousands of
// files open leaves nothing in the serving process once Unmount
// returns: its descriptor count and goroutines are back at the
// baseline, though the kernel had their RELEASE requests queued.
func TestEndLeavesNothing(t *testing.T) {
	const n = 4000
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			testenv.Require(t, testenv.Root, testenv.FUSE, testenv.Python)
			// No collection may close a leaked descriptor through its
			// finalizer before it is counted.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			base, gbase := fdCount(t), runtime.NumGoroutine()
			v := mountWith(t, fsmon.Config{Mode: mode, MaxOpenFiles: 2 * n})
			h := startHolder(t, v.p("new/held"), n)
			if h.held != n {
				t.Fatalf("holder: got %d held (errors %v), want %d", h.held, h.errs, n)
			}
			during := fdCount(t)
			h.kill()
			v.finish()
			after := fdCount(t)
			t.Logf("descriptors: baseline %d, %d files held %d, after the end %d", base, n, during, after)
			if during < base+n {
				t.Errorf("descriptors while held: got %d, want at least %d (one per file)", during, base+n)
			}
			if held := v.v.Stats().OpenFiles; held != 0 {
				t.Errorf("Stats.OpenFiles after the view ended: got %d, want 0", held)
			}
			if after > base {
				t.Errorf("descriptors after the view ended: got %d, want at most the baseline %d", after, base)
			}
			// Goroutines that returned may take a moment to be gone
			// from the count; none may stay.
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > gbase && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if g := runtime.NumGoroutine(); g > gbase {
				t.Errorf("goroutines after the view ended: got %d, want at most the baseline %d", g, gbase)
			}
		})
	}
}

// renameFlood renames a file between two names of about 4 KB each
// (argv[1] and argv[2], under the view) until a rename fails, at most
// argv[3] times, and reports how many it did and the errno that stopped
// it.
const renameFlood = `
import errno, json, os, sys
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for p in (a, b):
    os.makedirs(os.path.dirname(p), exist_ok=True)
open(a, "w").close()
done, err = 0, None
for i in range(n):
    src, dst = (a, b) if i % 2 == 0 else (b, a)
    try:
        os.rename(src, dst)
        done += 1
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
print(json.dumps({"done": done, "error": err}))
`

// TestJournalBytesCap: renames between two long names, each record
// about 8 KB, fill the journal to MaxJournalBytes; from then on changes
// fail with ENOSPC and are not journaled, the journal stays within the
// cap and a little slack, holds the cap and its count, verifies and
// replays, and Unmount reports no error.
func TestJournalBytesCap(t *testing.T) {
	const limit = 1 << 20
	v := mountWith(t, fsmon.Config{MaxJournalBytes: limit})
	long := func(c string) string {
		segs := make([]string, 15)
		for i := range segs {
			segs[i] = strings.Repeat(c, 250)
		}
		return strings.Join(segs, "/")
	}
	res := hostile(t, renameFlood, v.p("new/"+long("a")+"/f"), v.p("new/"+long("b")+"/f"), "100000")
	if res["error"] != "ENOSPC" {
		t.Fatalf("rename flood ended with %v after %v renames, want ENOSPC", res["error"], res["done"])
	}
	if done := res["done"].(float64); done < limit/(16<<10) {
		t.Errorf("renames before the cap: got %v, want at least %d", done, limit/(16<<10))
	}
	wantErrno(t, "create at the journal bytes cap", os.WriteFile(v.p("new/x"), nil, 0o644), syscall.ENOSPC)
	if got := readFile(t, v.p("README.md")); got != "readme\n" {
		t.Errorf("read at the journal bytes cap: got %q", got)
	}
	recs := v.finish()
	wantOneCap(t, recs, journal.CapJournalBytes, "ENOSPC")
	st, err := os.Stat(v.jpath)
	if err != nil {
		t.Fatal(err)
	}
	// The slack: the record of the operation admitted just under the
	// cap, the cap record, its count and the unmount record.
	const slack = 64 << 10
	if st.Size() > limit+slack {
		t.Errorf("journal size: got %d B, want at most %d B (cap and slack)", st.Size(), limit+slack)
	}
	t.Logf("journal: %d B for a cap of %d B, %d renames", st.Size(), limit, int(res["done"].(float64)))
}
