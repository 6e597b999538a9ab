package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

// fdFlooder creates 3,000 files in an ignored directory through its view
// and holds every one it got open for writing for 8 s: each costs benchd
// a backing descriptor, past the view's bound EMFILE. It fixes nothing.
const fdFlooder = `python3 -c '
import os, resource, time
s, h = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (h, h))
os.makedirs("__pycache__", exist_ok=True)
held, refused = [], 0
for i in range(3000):
	try:
		held.append(os.open("__pycache__/h%d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
	except OSError:
		refused += 1
print("held", len(held), "refused", refused, flush=True)
time.sleep(8)
'`

// journalFlooder renames a file back and forth between two paths of
// about 4 KiB each (in an ignored directory, so every rename is a
// record) for 20 s: 8 KiB of journal a rename.
const journalFlooder = `python3 -c '
import os, time
d = "__pycache__"
os.makedirs(d, exist_ok=True)
for i in range(15):
	d += "/" + chr(97 + i) * 250
	os.mkdir(d)
a, b = d + "/" + "x" * 200, d + "/" + "y" * 200
open(a, "w").close()
end, n, refused = time.time() + 20, 0, 0
while time.time() < end:
	try:
		os.rename(a, b); a, b = b, a; n += 1
	except OSError:
		refused += 1
print("renames", n, "refused", refused, flush=True)
'`

// fdCount is how many descriptors process pid holds.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// dirBytes is the disk space the files below dir take.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// startRun submits agent on rt-01 and returns its attempt id.
func startRun(t *testing.T, d *daemonProc, agent string) string {
	t.Helper()
	run, err := d.client.CreateRun(context.Background(), apitype.RunRequest{Task: "rt-01", Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return run.Attempts[0]
}

// floodJournal exports attempt id and returns its journal's records.
func floodJournal(t *testing.T, d *daemonProc, id string) []journal.Record {
	t.Helper()
	archive := filepath.Join(t.TempDir(), id+".tar")
	if out, code := benchctlOn(t, d.socket, "export", "-o", archive, id); code != 0 {
		t.Fatalf("export %s: exit %d\n%s", id, code, out)
	}
	return exportedJournal(t, archive)
}

// checkNeighbour: the neighbour's fix passed, whatever the flooder did.
func checkNeighbour(t *testing.T, a apitype.Attempt) {
	t.Helper()
	if a.State != apitype.StateDone || !a.Pass {
		t.Errorf("neighbour: got state %s (%s) pass %v reasons %v, want a pass", a.State, a.InfraError, a.Pass, codes(a))
	}
}

// A descriptor flood in one attempt: its view refuses opens past its
// bound (an open_files cap record), the neighbour that writes the fix
// passes, benchd answers status meanwhile, and benchd's descriptors are
// back at their baseline once both attempts ended.
func TestDescriptorFlood(t *testing.T) {
	require(t)
	// 4,096 descriptors shared by 12 views: each view's bound is then
	// 4096*3/4/12 = 256, below the flood; the bound is read when a view
	// mounts, so the limit set after the start is the one shared.
	d := startDaemon(t, newDaemonDir(t), "--group", callerGroup, "--concurrency", "12")
	t.Cleanup(func() { d.stop(t) })
	pid := d.cmd.Process.Pid
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 4096, Max: 4096}, nil); err != nil {
		t.Fatal(err)
	}
	if a := wait(t, d.client, startRun(t, d, apitype.AgentNull)); a.State != apitype.StateDone {
		t.Fatalf("warm-up attempt: got %s (%s), want done", a.State, a.InfraError)
	}
	base := fdCount(t, pid)
	flood := startRun(t, d, fdFlooder)
	waitPhase(t, d, flood, apitype.PhaseRun)
	time.Sleep(2 * time.Second) // the flood is held now
	during := fdCount(t, pid)
	neighbour := startRun(t, d, apitype.AgentReference)
	start := time.Now()
	if out, code := benchctlOn(t, d.socket, "status"); code != 0 {
		t.Errorf("status during the flood: exit %d\n%s", code, out)
	}
	statusTook := time.Since(start)
	fa, na := wait(t, d.client, flood), wait(t, d.client, neighbour)
	checkNeighbour(t, na)
	if fa.State != apitype.StateDone {
		t.Errorf("flooder: got state %s (%s), want done", fa.State, fa.InfraError)
	}
	if statusTook > 5*time.Second {
		t.Errorf("status during the flood took %v, want under 5 s", statusTook)
	}
	// benchd's work for the flooder, as stored: its view and grading.
	stored, err := d.client.Attempt(context.Background(), flood)
	if err != nil {
		t.Fatal(err)
	}
	if stored.ViewCPUMS <= 0 || stored.GradeCPUMS <= 0 {
		t.Errorf("flooder as stored: view CPU %d ms, grading CPU %d ms, want both > 0", stored.ViewCPUMS, stored.GradeCPUMS)
	}
	capped := false
	for _, r := range floodJournal(t, d, flood) {
		capped = capped || r.Op == journal.OpCap && r.Name == journal.CapOpenFiles
	}
	if !capped {
		t.Error("flooder's journal has no open_files cap record")
	}
	after := fdCount(t, pid)
	for deadline := time.Now().Add(15 * time.Second); after > base+8 && time.Now().Before(deadline); after = fdCount(t, pid) {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("benchd descriptors: %d before, %d during the flood, %d after; status took %v; flooder's view CPU %d ms, grading %d ms",
		base, during, after, statusTook, stored.ViewCPUMS, stored.GradeCPUMS)
	if after > base+8 {
		t.Errorf("benchd holds %d descriptors after the attempts, baseline %d: want within 8", after, base)
	}
	if during > base+256+64 {
		t.Errorf("benchd held %d descriptors during the flood, baseline %d: want at most the view's bound (256) and a few more", during, base)
	}
}

// A journal flood (long-path renames) beside a neighbour: the neighbour
// passes, the flooder is scored as a workspace_cap failure (a regrade
// too), and the state grows by the journal byte cap and a little more:
// the journal's lines in the database. The journal file is dropped once
// the store holds it, and SQLite's write-ahead log, which the lines pass
// through, is truncated once the end is recorded (store.Finish).
// Exporting or regrading the flooder, a journal at the byte cap, takes
// benchd under 100 MiB.
func TestJournalFlood(t *testing.T) {
	require(t)
	d := startDaemon(t, newDaemonDir(t), "--group", callerGroup)
	t.Cleanup(func() { d.stop(t) })
	before := dirBytes(t, d.state)
	flood := startRun(t, d, journalFlooder)
	waitPhase(t, d, flood, apitype.PhaseRun)
	neighbour := startRun(t, d, apitype.AgentReference)
	fa, na := wait(t, d.client, flood), wait(t, d.client, neighbour)
	checkNeighbour(t, na)
	if fa.State != apitype.StateDone {
		t.Errorf("flooder: got state %s (%s), want done", fa.State, fa.InfraError)
	}
	grew := dirBytes(t, d.state) - before
	t.Logf("state grew by %d MiB; flooder: %d edits, %d denied, reasons %v", grew>>20, fa.Edits, fa.Denied, codes(fa))
	if !slices.Contains(codes(fa), "workspace_cap") {
		t.Errorf("flooder: got reasons %v, want workspace_cap (the journal byte cap)", codes(fa))
	}
	const journalCap = 256 << 20 // fsmon's default MaxJournalBytes
	if limit := int64(journalCap + 96<<20); grew > limit {
		t.Errorf("state grew by %d MiB, want at most %d MiB", grew>>20, limit>>20)
	}
	// The store holds the journal, so the attempt keeps no file of it.
	if _, err := os.Stat(filepath.Join(d.state, "attempts", flood, "journal.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the flooder's journal file is still in its work directory (%v), beside the store's copy", err)
	}
	// The export of a journal at the byte cap, the largest allowed,
	// takes under 100 MiB of benchd's memory: its peak resident size
	// (reset first, clear_refs 5) over its resident size before.
	pid := d.cmd.Process.Pid
	rss := resetPeak(t, pid)
	recs := floodJournal(t, d, flood)
	peak := procKiB(t, pid, "VmHWM")
	t.Logf("export of %d records: benchd resident %d MiB before, peak %d MiB", len(recs), rss>>10, peak>>10)
	if len(recs) < 1000 {
		t.Errorf("the flooder's export holds %d records, want the flood's", len(recs))
	}
	if peak-rss > 100<<10 {
		t.Errorf("exporting the flooder's journal took benchd from %d to %d MiB resident, want under 100 MiB more", rss>>10, peak>>10)
	}
	// A regrade reads the cap from the stored records, and its final
	// tree from the unmount record's manifest: under 100 MiB too.
	rss = resetPeak(t, pid)
	if rg, err := d.client.Regrade(context.Background(), flood); err != nil || !rg.Same || !slices.Contains(codes(apitype.Attempt{Reasons: rg.After.Reasons}), "workspace_cap") {
		t.Errorf("regrade of the flooder: got %+v, %v; want the same verdict, workspace_cap", rg, err)
	}
	peak = procKiB(t, pid, "VmHWM")
	t.Logf("regrade: benchd resident %d MiB before, peak %d MiB", rss>>10, peak>>10)
	if peak-rss > 100<<10 {
		t.Errorf("regrading the flooder took benchd from %d to %d MiB resident, want under 100 MiB more", rss>>10, peak>>10)
	}
}

// resetPeak resets process pid's peak resident size (VmHWM) to its
// resident size now, which it returns in KiB.
func resetPeak(t *testing.T, pid int) int64 {
	t.Helper()
	if err := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	return procKiB(t, pid, "VmRSS")
}

// procKiB is field (VmRSS, VmHWM) of process pid's status, in KiB.
func procKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
