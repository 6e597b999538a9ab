package fsmon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
)

// TestWaitingCaptureOrder: a release whose capture waits in the queue
// (captureLoop held, so it waits until something finishes it) is
// captured before whatever could change the file or its name, in both
// modes: its record holds the content written before the close, and
// precedes the record of the operation.
func TestWaitingCaptureOrder(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE)
	ops := []struct {
		name string
		op   journal.Op // the operation's record
		do   func(p string) error
	}{
		{"open O_TRUNC", journal.OpOpen, func(p string) error { return os.WriteFile(p, []byte("second"), 0o644) }},
		{"open for writing", journal.OpOpen, func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt([]byte("SECOND"), 0)
			return err
		}},
		{"truncate", journal.OpTruncate, func(p string) error { return os.Truncate(p, 2) }},
		{"chmod", journal.OpChmod, func(p string) error { return os.Chmod(p, 0o600) }},
		{"setxattr", journal.OpSetxattr, func(p string) error { return unix.Setxattr(p, "user.note", []byte("n"), 0) }},
		{"unlink", journal.OpUnlink, func(p string) error { return os.Remove(p) }},
		{"rename over", journal.OpRename, func(p string) error {
			q := filepath.Join(filepath.Dir(p), "other.txt")
			if err := os.WriteFile(q, []byte("other"), 0o644); err != nil {
				return err
			}
			return os.Rename(q, p)
		}},
	}
	for _, mode := range []Mode{ModeContent, ModeWrites} {
		for _, c := range ops {
			t.Run(string(mode)+"/"+c.name, func(t *testing.T) {
				v, mnt, w, jpath := mountInternal(t, mode, nil)
				v.captures.mu.Lock()
				v.captures.held = true
				v.captures.mu.Unlock()
				p := filepath.Join(mnt, "f.txt")
				first := []byte("first content")
				if err := os.WriteFile(p, first, 0o644); err != nil {
					t.Fatal(err)
				}
				// The kernel sends the RELEASE after close returns.
				for waiting := 0; waiting == 0; {
					time.Sleep(time.Millisecond)
					v.captures.mu.Lock()
					waiting = len(v.captures.queue)
					v.captures.mu.Unlock()
				}
				if err := c.do(p); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				v.captures.mu.Lock()
				v.captures.held = false
				v.captures.cond.Broadcast()
				v.captures.mu.Unlock()
				if err := v.Unmount(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				recs, err := journal.Read(jpath)
				if err != nil {
					t.Fatal(err)
				}
				blobs := &journal.Blobs{Dir: journal.BlobsDir(jpath)}
				if err := journal.VerifyReplay(recs, blobs); err != nil {
					t.Fatalf("replay: %v", err)
				}
				var rel, op uint64
				for _, r := range recs {
					switch {
					case r.Op == journal.OpRelease && r.Path == "f.txt" && rel == 0:
						if r.SHA256 != journal.HashBytes(first) {
							t.Fatalf("first release of f.txt: recorded %s, want the content written before the close", r.SHA256)
						}
						rel = r.Seq
					case r.Op == c.op && (r.Path == "f.txt" || r.Path2 == "f.txt") && op == 0:
						op = r.Seq
					}
				}
				if rel == 0 || op == 0 || rel > op {
					t.Errorf("release record %d, %s record %d: want the release first", rel, c.op, op)
				}
			})
		}
	}
}

// mountInternal mounts a view of a new backing directory, which seed
// (if not nil) fills first, with a policy that allows every path, and
// returns it with its mountpoint, journal writer and journal path.
func mountInternal(t testing.TB, mode Mode, seed func(backing string)) (*View, string, *journal.Writer, string) {
	t.Helper()
	testenv.Require(t, testenv.Root, testenv.FUSE)
	tmp := t.TempDir()
	backing, mnt, jpath := filepath.Join(tmp, "backing"), filepath.Join(tmp, "mnt"), filepath.Join(tmp, "journal.jsonl")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if seed != nil {
		seed(backing)
	}
	w, err := journal.Create(jpath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Mount(context.Background(), Config{Backing: backing, Mountpoint: mnt, Journal: w, Policy: journal.Policy{Allow: []string{"**"}}, Mode: mode})
	if err != nil {
		w.Close()
		t.Fatal(err)
	}
	return v, mnt, w, jpath
}
