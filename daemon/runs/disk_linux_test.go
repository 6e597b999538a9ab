package runs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/graders"
	"benchd.dev/internal/testenv"
)

// fillAgent writes 64 MiB of zeros into file (one the task's policy
// allows, or one it ignores), through one open file: the view's
// passthrough path, which the view never sees write. It prints dd's
// messages, its exit status and the file's size, and exits 0.
func fillAgent(file string) string {
	return fmt.Sprintf(`sh -c 'dd if=/dev/zero of=%[1]s bs=1M count=64 2>&1; echo "dd exit $?"; echo "size $(stat -c %%s %[1]s)"; true'`, file)
}

// fillSize is the size fillAgent's dd reached, from its stdout.
func fillSize(t *testing.T, out Outcome) (exit string, size int64, stdout string) {
	t.Helper()
	b, err := os.ReadFile(out.StdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "dd exit "); ok {
			exit = v
		}
		if v, ok := strings.CutPrefix(line, "size "); ok {
			size, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return exit, size, string(b)
}

// checkDiskGone checks that the attempt's disk is unmounted and its loop
// device detached, and that its image stays.
func checkDiskGone(t *testing.T, e *Engine, out Outcome) {
	t.Helper()
	if isDiskMount(out.FinalDir) {
		t.Errorf("the attempt disk is still mounted on %s", out.FinalDir)
	}
	if left := loopsOf(e.cfg.StateDir); len(left) > 0 {
		t.Errorf("loop devices left attached: %v", left)
	}
	if _, err := os.Stat(AttemptDir(filepath.Dir(out.FinalDir)).DiskImage()); err != nil {
		t.Errorf("the disk image is gone: %v", err)
	}
}

// TestStorageQuota: a hostile agent writes 64 MiB through an open file,
// to an allowed path and to an ignored one, into a workspace of
// storage_mb 32. The write stops with ENOSPC at about
// 32 MiB, the host's disk takes no more than the image's 32 MiB (and the
// view's blobs of what was written), and the attempt fails with
// workspace_cap naming the storage cap, which its journal records; with
// storage_mb 128 the same agent writes all 64 MiB and hits no cap.
func TestStorageQuota(t *testing.T) {
	e := newEngine(t)
	for _, tt := range []struct {
		id        string
		storageMB int64
		full      bool
		file      string
	}{
		{"quota32", 32, true, "src/counter.py"},
		// An ignored path (rt-01 ignores *.tmp): graded or not, it is
		// the attempt's disk.
		{"ignored32", 32, true, "fill.tmp"},
		{"quota128", 128, false, "src/counter.py"},
	} {
		t.Run(tt.id, func(t *testing.T) {
			task := *findTask(t, "rt-01")
			task.StorageMB = tt.storageMB
			out, _ := runAttempt(t, e, Spec{AttemptID: tt.id, Task: &task, Agent: fillAgent(tt.file)})
			a := out.Attempt
			exit, size, stdout := fillSize(t, out)
			if a.ExitCode != 0 || exit == "" {
				t.Fatalf("agent exit %d, stdout %q", a.ExitCode, stdout)
			}
			quota := tt.storageMB << 20
			recs := verifiedJournal(t, out.JournalPath)
			hasCap := slices.Contains(codes(a.Reasons), graders.CodeCap)
			if tt.full {
				if exit == "0" || !strings.Contains(stdout, "No space left on device") {
					t.Errorf("dd: got exit %s, want ENOSPC; stdout %q", exit, stdout)
				}
				// Below the quota by at most the file system's metadata.
				if size > quota || size < quota*3/4 {
					t.Errorf("written: got %d bytes, want about %d", size, quota)
				}
				if a.Pass || !hasCap {
					t.Errorf("got pass %v reasons %v, want a failure with %s", a.Pass, codes(a.Reasons), graders.CodeCap)
				}
				if caps := journal.CapsOf(recs); !slices.Equal(caps, []string{journal.CapStorage}) {
					t.Errorf("journal caps: got %v, want [%s]", caps, journal.CapStorage)
				}
				for _, r := range a.Reasons {
					if r.Code == graders.CodeCap && !strings.Contains(r.Message, "storage_mb") {
						t.Errorf("the cap's reason does not name storage_mb: %q", r.Message)
					}
				}
			} else {
				if exit != "0" || size != 64<<20 {
					t.Errorf("dd: got exit %s and %d bytes, want 0 and %d; stdout %q", exit, size, 64<<20, stdout)
				}
				if hasCap || len(journal.CapsOf(recs)) > 0 {
					t.Errorf("got reasons %v, journal caps %v: want no cap", codes(a.Reasons), journal.CapsOf(recs))
				}
			}
			// The host's disk: the image takes at most its size.
			var st syscall.Stat_t
			if err := syscall.Stat(AttemptDir(filepath.Dir(out.FinalDir)).DiskImage(), &st); err != nil {
				t.Fatal(err)
			}
			if st.Size != quota || st.Blocks*512 > quota {
				t.Errorf("disk image: size %d, %d bytes allocated; want size %d and no more allocated", st.Size, st.Blocks*512, quota)
			}
			checkDiskGone(t, e, out)
		})
	}
}

// TestStorageUnderQuota: an attempt well under a small quota passes as
// it does on the default disk, with no cap.
func TestStorageUnderQuota(t *testing.T) {
	e := newEngine(t)
	task := *findTask(t, "rt-01")
	task.StorageMB = 16
	out, _ := runAttempt(t, e, Spec{AttemptID: "small", Task: &task, Agent: "builtin:reference"})
	if a := out.Attempt; !a.Pass || len(out.Caps) > 0 {
		t.Errorf("got pass %v reasons %v caps %v, want a pass without caps", a.Pass, codes(a.Reasons), out.Caps)
	}
	checkDiskGone(t, e, out)
}

// TestCleanupDisk: Cleanup unmounts an attempt disk a crash left mounted
// under a view (its loop device detaches itself), keeps its image, and
// MountDiskReadOnly shows the tree on it again, read-only.
func TestCleanupDisk(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE, testenv.Loop)
	state := t.TempDir()
	dir := filepath.Join(state, "attempts", "x1")
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	img := AttemptDir(dir).DiskImage()
	if err := makeDisk(context.Background(), img, 16<<20); err != nil {
		t.Fatal(err)
	}
	if err := mountDisk(img, backing, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(backing, "left.txt"), []byte("left\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another ext4 mount below the state dir that is no attempt's disk
	// is left alone.
	other, otherImg := filepath.Join(dir, "other"), filepath.Join(dir, "other.img")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := makeDisk(context.Background(), otherImg, 16<<20); err != nil {
		t.Fatal(err)
	}
	if err := mountDisk(otherImg, other, false); err != nil {
		t.Fatal(err)
	}
	defer unmountDisk(other)
	w, err := journal.Create(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := fsmon.Mount(context.Background(), fsmon.Config{Backing: backing, Mountpoint: mnt, Journal: w}); err != nil {
		t.Fatal(err)
	}
	if err := Cleanup(context.Background(), state, ""); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if isDiskMount(backing) {
		t.Errorf("the attempt disk is still mounted on %s", backing)
	}
	if !isMounted(t, other) {
		t.Errorf("Cleanup unmounted %s, which is no attempt's disk", other)
	}
	if left := loopsOf(dir); len(left) != 1 {
		t.Errorf("got loop devices %v attached, want only other.img's", left)
	}
	unmount, err := MountDiskReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(backing, "left.txt")); err != nil || string(b) != "left\n" {
		t.Errorf("the tree on the disk: got %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(backing, "new.txt"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("a write into the disk mounted for recovery: got %v, want EROFS", err)
	}
	if err := unmount(); err != nil {
		t.Fatal(err)
	}
	if isDiskMount(backing) {
		t.Errorf("the attempt disk is still mounted on %s after the undo", backing)
	}
	if err := unmountDisk(other); err != nil {
		t.Fatal(err)
	}
	if left := loopsOf(dir); len(left) > 0 {
		t.Errorf("loop devices left attached: %v", left)
	}
}

// isMounted reports whether a file system is mounted on p.
func isMounted(t *testing.T, p string) bool {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}

// TestReadOnlyAfterLazyUnmount: a disk still busy at its unmount is
// detached lazily; mounting its image read-only waits until the
// detached disk lets go of it, and then shows the whole tree.
func TestReadOnlyAfterLazyUnmount(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Loop)
	dir := filepath.Join(t.TempDir(), "attempts", "z1")
	backing := filepath.Join(dir, "backing")
	if err := os.MkdirAll(backing, 0o755); err != nil {
		t.Fatal(err)
	}
	img := AttemptDir(dir).DiskImage()
	if err := makeDisk(context.Background(), img, 16<<20); err != nil {
		t.Fatal(err)
	}
	if err := mountDisk(img, backing, false); err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("tree\n"), 1000)
	if err := os.WriteFile(filepath.Join(backing, "tree.txt"), want, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file left open keeps the disk busy.
	held, err := os.Open(filepath.Join(backing, "tree.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	wait := unmountBusyWait
	t.Cleanup(func() { unmountBusyWait = wait })
	unmountBusyWait = 200 * time.Millisecond
	if err := unmountDisk(backing); err != nil {
		t.Fatalf("unmountDisk of a busy disk: %v", err)
	}
	if isDiskMount(backing) || !imageAttached(img) {
		t.Fatalf("got mounted %v attached %v, want a disk detached lazily and still attached", isDiskMount(backing), imageAttached(img))
	}
	unmountBusyWait = 2 * time.Minute
	type mounted struct {
		unmount func() error
		err     error
	}
	done := make(chan mounted, 1)
	go func() {
		u, err := MountDiskReadOnly(dir)
		done <- mounted{u, err}
	}()
	select {
	case m := <-done:
		if m.err == nil {
			m.unmount()
		}
		t.Fatalf("MountDiskReadOnly returned (%v) while the detached disk still held the image", m.err)
	case <-time.After(500 * time.Millisecond):
	}
	held.Close()
	m := <-done
	if m.err != nil {
		t.Fatal(m.err)
	}
	defer func() {
		if err := m.unmount(); err != nil {
			t.Error(err)
		}
	}()
	if got, err := os.ReadFile(filepath.Join(backing, "tree.txt")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the tree on the read-only disk: got %d bytes, %v; want %d", len(got), err, len(want))
	}
}
