package e2e

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"benchd.dev/client/apitype"
)

// writeGiB writes a GiB of zeros (dd: every block written, none a hole)
// and a GiB sparse file with a few bytes at its end.
const writeGiB = `sh -c 'dd if=/dev/zero of=src/zeros bs=1M count=1024 status=none && truncate -s 1G src/sparse && printf tail >> src/sparse'`

// TestStateGrowthOfZeros: an attempt that writes a GiB of zeros and a
// GiB sparse file grows the state directory by under 100 MiB once it has
// ended (the disk image goes once its tree is in the store, and runs of
// zeros are stored as holes), and both files read back byte for byte
// from the export archive; diff and show name them.
func TestStateGrowthOfZeros(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	d := startDaemon(t, dir, "--concurrency", "1", "--tasks", bigTaskStore(t, dir, 3072))
	defer d.stopBounded(t)
	before := allocatedUnder(t, d.state)

	run, err := d.client.CreateRun(context.Background(), apitype.RunRequest{Task: "rt-01", Agent: writeGiB})
	if err != nil {
		t.Fatal(err)
	}
	a := wait(t, d.client, run.Attempts[0])
	if a.State != apitype.StateDone {
		t.Fatalf("attempt %s: got state %s (%v), want done", a.ID, a.State, a.Reasons)
	}
	if len(a.Changeset) != 2 {
		tr, _ := d.client.Transcript(context.Background(), a.ID)
		t.Fatalf("attempt %s (exit %d): got changeset %+v, want zeros and sparse\nstderr: %.2000s", a.ID, a.ExitCode, a.Changeset, tr.Stderr)
	}
	after := allocatedUnder(t, d.state)
	t.Logf("state grew by %.1f MiB (%d -> %d bytes allocated)", float64(after-before)/(1<<20), before, after)
	if grew := after - before; grew >= 100<<20 {
		t.Errorf("the state grew by %d MiB for a GiB of zeros and a sparse GiB, want under 100 MiB", grew>>20)
	}
	img := filepath.Join(d.state, "attempts", a.ID, "disk.img")
	if _, err := os.Stat(img); !os.IsNotExist(err) {
		t.Errorf("the disk image of the ended attempt: got %v, want it gone", err)
	}

	want := map[string]int64{zerosDigest(""): 1 << 30, zerosDigest("tail"): 1<<30 + 4}
	got := exportedBlobs(t, d, a.ID)
	for sha, size := range want {
		if got[sha] != size {
			t.Errorf("blob %s: got %d bytes hashing to its name in the export, want %d", sha, got[sha], size)
		}
	}
	// show exits with the verdict (1: a fail, the counter is not fixed);
	// diff with 0.
	for cmd, want := range map[string]int{"diff": 0, "show": 1} {
		out, code := benchctlOn(t, d.socket, cmd, a.ID)
		if code != want || !strings.Contains(out, "src/zeros") || !strings.Contains(out, "src/sparse") {
			t.Errorf("benchctl %s %s: exit %d, want %d naming src/zeros and src/sparse\n%.2000s", cmd, a.ID, code, want, out)
		}
	}
}

// bigTaskStore copies the task store into dir with RT-01's workspace
// given storageMB MiB and src/zeros and src/sparse allowed, and returns
// its path.
func bigTaskStore(t *testing.T, dir string, storageMB int) string {
	t.Helper()
	store := filepath.Join(dir, "tasks")
	if out, err := exec.Command("cp", "-a", tasksDir+"/.", store).CombinedOutput(); err != nil {
		t.Fatalf("copy the task store: %v\n%s", err, out)
	}
	toml := filepath.Join(store, "rt-01-circular-counter", "task.toml")
	b, err := os.ReadFile(toml)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "[environment]\n", "[environment]\nstorage_mb = "+strconv.Itoa(storageMB)+"\n", 1)
	s = strings.Replace(s, `allow = ["src/counter.py"]`, `allow = ["src/counter.py", "src/zeros", "src/sparse"]`, 1)
	if strings.Count(s, "\n") != strings.Count(string(b), "\n")+1 || !strings.Contains(s, "src/zeros") {
		t.Fatal("rt-01's task.toml has no [environment] table or no allow list of src/counter.py")
	}
	if err := os.WriteFile(toml, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return store
}

// zerosDigest is the hex SHA-256 of a GiB of zeros followed by tail.
func zerosDigest(tail string) string {
	h := sha256.New()
	block := make([]byte, 1<<20)
	for range 1 << 10 {
		h.Write(block)
	}
	io.WriteString(h, tail)
	return hex.EncodeToString(h.Sum(nil))
}

// exportedBlobs reads attempt id's export archive as a stream and
// returns the size of each blob entry whose content hashes to its name.
func exportedBlobs(t *testing.T, d *daemonProc, id string) map[string]int64 {
	t.Helper()
	rc, err := d.client.Export(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(hdr.Name, "journal.jsonl.blobs/") {
			continue
		}
		h := sha256.New()
		n, err := io.Copy(h, tr)
		if err != nil {
			t.Fatal(err)
		}
		if sha := filepath.Base(hdr.Name); hex.EncodeToString(h.Sum(nil)) == sha {
			got[sha] = n
		}
	}
}

// allocatedUnder is the disk space the files under dir take (their
// blocks, as du counts them; a file linked twice counts once).
func allocatedUnder(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file that went while we walked
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		n += st.Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
