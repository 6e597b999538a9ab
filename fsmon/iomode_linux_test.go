package fsmon_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
)

// TestPageCacheCoherent: a small file read through the kernel's page
// cache and written with passthrough, in turn and at once, always reads
// as the backing file holds it.
func TestPageCacheCoherent(t *testing.T) {
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			p := v.p("src/counter.py")
			if got := readFile(t, p); got != "x = 1\n" {
				t.Fatalf("first read: got %q", got)
			}
			// Written in place, the size unchanged, with no reader open:
			// the kernel's pages of the first read are stale.
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteAt([]byte("y = 2\n"), 0); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if got := readFile(t, p); got != "y = 2\n" {
				t.Fatalf("read after an in-place write: got %q, want %q", got, "y = 2\n")
			}

			// A reader open, then a writer: the writer's bytes reach
			// the reader.
			q := v.p("src/pkg/mod.py")
			r, err := os.Open(q)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			if n, _ := r.ReadAt(buf, 0); string(buf[:n]) != "y = 2\n" {
				t.Fatalf("reader: got %q", buf[:n])
			}
			w, err = os.OpenFile(q, os.O_WRONLY, 0)
			if err != nil {
				t.Fatalf("open for writing a file open for reading: %v", err)
			}
			if _, err := w.WriteAt([]byte("z = 3\n"), 0); err != nil {
				t.Fatal(err)
			}
			if n, _ := r.ReadAt(buf, 0); string(buf[:n]) != "z = 3\n" {
				t.Fatalf("reader after the writer wrote: got %q, want %q", buf[:n], "z = 3\n")
			}
			w.Close()
			r.Close()

			// A writer open, then a reader.
			if err := os.WriteFile(v.p("new/f.txt"), []byte("one\n"), 0o644); err != nil {
				if err := os.Mkdir(v.p("new"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(v.p("new/f.txt"), []byte("one\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err = os.OpenFile(v.p("new/f.txt"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			r, err = os.Open(v.p("new/f.txt"))
			if err != nil {
				t.Fatalf("open for reading a file open for writing: %v", err)
			}
			w.Write([]byte("two\n"))
			if n, _ := r.ReadAt(buf, 0); string(buf[:n]) != "one\ntwo\n" {
				t.Fatalf("reader of a file open for writing: got %q", buf[:n])
			}
			r.Close()
			w.Close()
			if got := readFile(t, v.p("new/f.txt")); got != "one\ntwo\n" {
				t.Fatalf("read after both closed: got %q", got)
			}
			recs := v.finish()
			if rel := want(t, recs, journal.OpRelease, "src/pkg/mod.py", journal.Allowed, "ok"); rel.SHA256 != sum([]byte("z = 3\n")) {
				t.Errorf("release of mod.py: got %s, want the hash of %q", rel.SHA256, "z = 3\n")
			}
			if mode == fsmon.ModeContent && len(find(recs, journal.OpWrite, "src/pkg/mod.py")) == 0 {
				t.Errorf("content mode: no write record of mod.py, written while open for reading (through the page cache, so through the view)")
			}
		})
	}
}

// TestOpenModesHostile: readers and writers of one file open, read,
// write and close it at once, so that the kernel's RELEASE of one open
// races with the next opens. No open may fail: the kernel refuses with
// EIO an open whose I/O mode (passthrough or page cache) conflicts with
// an open it still has.
func TestOpenModesHostile(t *testing.T) {
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			p := v.p("src/counter.py")
			if err := os.WriteFile(p, []byte("v0000\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			valid := regexp.MustCompile(`^v[0-9]{4}\n$`)
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, 16)
					for i := range 60 {
						if (g+i)%3 == 0 {
							f, err := os.OpenFile(p, os.O_WRONLY, 0)
							if err != nil {
								t.Errorf("writer %d: %v", g, err)
								return
							}
							_, err = f.WriteAt([]byte(fmt.Sprintf("v%02d%02d\n", g, i)), 0)
							f.Close()
							if err != nil {
								t.Errorf("writer %d: %v", g, err)
								return
							}
							continue
						}
						f, err := os.Open(p)
						if err != nil {
							t.Errorf("reader %d: %v", g, err)
							return
						}
						n, _ := f.ReadAt(buf, 0)
						f.Close()
						if !valid.Match(buf[:n]) {
							t.Errorf("reader %d: read %q", g, buf[:n])
							return
						}
					}
				}()
			}
			wg.Wait()
			v.finish() // the journal replays to the final tree
		})
	}
}

// TestCaptureOrderHostile: files written and closed, then at once
// truncated, rewritten, renamed over, removed and made again, by
// several goroutines at once, so that the captures of releases (which
// wait in a queue, or run in the request when another handle writes
// the file) race with every operation that finishes them first. The
// journal replays to the final tree (finish checks it) in both modes.
func TestCaptureOrderHostile(t *testing.T) {
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			if err := os.Mkdir(v.p("new"), 0o755); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := v.p(fmt.Sprintf("new/f%d.txt", g))
					tmp := v.p(fmt.Sprintf("new/t%d.txt", g))
					shared := v.p("new/shared.txt")
					step := func(what string, err error) bool {
						if err != nil {
							t.Errorf("goroutine %d: %s: %v", g, what, err)
						}
						return err == nil
					}
					for i := range 30 {
						body := []byte(fmt.Sprintf("g%d round %d %s\n", g, i, strings.Repeat("x", i)))
						if !step("write", os.WriteFile(p, body, 0o644)) {
							return
						}
						switch i % 5 {
						case 0:
							step("truncate", os.Truncate(p, int64(i%7)))
						case 1:
							f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
							if step("append", err) {
								f.Write([]byte("appended\n"))
								f.Close()
							}
						case 2:
							if step("write tmp", os.WriteFile(tmp, body[:len(body)/2], 0o644)) {
								step("rename over", os.Rename(tmp, p))
							}
						case 3:
							if step("unlink", os.Remove(p)) {
								step("write again", os.WriteFile(p, body[1:], 0o644))
							}
						case 4:
							step("chmod", os.Chmod(p, 0o600))
						}
						f, err := os.OpenFile(shared, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
						if step("open shared", err) {
							f.Write(body)
							f.Close()
						}
					}
				}()
			}
			wg.Wait()
			v.finish()
		})
	}
}
