package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

func TestIngestJournal(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		mustCreate(t, s, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
		mustCreate(t, s, apitype.Attempt{ID: "nojournal", Task: "rt-01", Created: base})
		path, recs := testJournal(t, t.TempDir(), 40)
		file, err := os.ReadFile(path)
		must(t, err)

		head, n, err := s.IngestJournal(ctx, "a1", path)
		must(t, err)
		if want := recs[len(recs)-1].Hash; head != want {
			t.Errorf("got head %s, want %s", head, want)
		}
		if n != len(recs) {
			t.Errorf("got %d records, want %d", n, len(recs))
		}
		ji, err := s.Journal(ctx, "a1")
		must(t, err)
		if ji.Records != len(recs) || ji.Head != head || ji.Bytes != int64(len(file)) {
			t.Errorf("got %+v, want %d records, head %s, %d bytes", ji, len(recs), head, len(file))
		}

		t.Run("lines are byte-identical", func(t *testing.T) {
			var buf bytes.Buffer
			must(t, s.JournalLines(ctx, "a1", &buf))
			if !bytes.Equal(buf.Bytes(), file) {
				t.Fatalf("got %d bytes back, want the %d bytes of the file", buf.Len(), len(file))
			}
		})
		t.Run("verifies against the store's blobs", func(t *testing.T) {
			var buf bytes.Buffer
			must(t, s.JournalLines(ctx, "a1", &buf))
			out := filepath.Join(t.TempDir(), "journal.jsonl")
			must(t, os.WriteFile(out, buf.Bytes(), 0o644))
			got, err := journal.Read(out)
			must(t, err)
			if err := journal.Verify(got, s.Blobs()); err != nil {
				t.Errorf("journal.Verify: got %v, want nil", err)
			}
			if err := journal.VerifyReplay(got, s.Blobs()); err != nil {
				t.Errorf("journal.VerifyReplay: got %v, want nil", err)
			}
		})
		t.Run("blobs are hard links", func(t *testing.T) {
			src := journal.Blobs{Dir: journal.BlobsDir(path)}
			count := 0
			for _, r := range recs {
				if r.SHA256 == "" || !src.Has(r.SHA256) {
					continue
				}
				count++
				a, _ := src.Path(r.SHA256)
				b, _ := s.Blobs().Path(r.SHA256)
				sa, err := os.Stat(a)
				must(t, err)
				sb, err := os.Stat(b)
				must(t, err)
				if !os.SameFile(sa, sb) {
					t.Errorf("blob %s: got a copy, want a hard link", r.SHA256)
				}
			}
			if count < 3 {
				t.Errorf("got %d blobs named by records, want at least 3", count)
			}
		})

		tests := []struct {
			name    string
			id      string
			path    string
			wantErr error
		}{
			{"second ingest", "a1", path, ErrConflict},
			{"unknown attempt", "nope", path, ErrNotFound},
			{"missing file", "nojournal", filepath.Join(t.TempDir(), "none.jsonl"), fs.ErrNotExist},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, _, err := s.IngestJournal(ctx, tt.id, tt.path)
				wantErr(t, err, tt.wantErr)
			})
		}
		for _, id := range []string{"nope", "nojournal"} {
			t.Run("lines of "+id, func(t *testing.T) {
				var buf bytes.Buffer
				wantErr(t, s.JournalLines(ctx, id, &buf), ErrNotFound)
				_, err := s.Journal(ctx, id)
				wantErr(t, err, ErrNotFound)
				if buf.Len() != 0 {
					t.Errorf("got %d bytes written, want none", buf.Len())
				}
			})
		}
	})
}

// TestIngestJournalInvalid feeds journals broken in different ways: each
// is refused with ErrInvalid, stores nothing, and the attempt can still
// take its real journal afterwards.
func TestIngestJournalInvalid(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		path, _ := testJournal(t, t.TempDir(), 5)
		good, err := os.ReadFile(path)
		must(t, err)
		lines := strings.SplitAfter(string(good), "\n")
		lines = lines[:len(lines)-1] // the empty string after the last newline
		join := func(ls ...string) string { return strings.Join(ls, "") }
		tests := []struct {
			name, content, want string
		}{
			{"empty", "", "empty"},
			{"not json", "hello\n", "line 1"},
			{"edited path", join(lines[0], lines[1], strings.Replace(lines[2], "counter.py", "counter.pz", 1), join(lines[3:]...)),
				"line 3 (seq 3): hash"},
			{"edited decision", join(lines[0], strings.Replace(lines[1], `"decision":"allowed"`, `"decision":"ignored"`, 1), join(lines[2:]...)),
				"line 2 (seq 2): hash"},
			{"line removed", join(lines[0], lines[1], join(lines[3:]...)), "line 3: seq 4, want 3"},
			{"lines swapped", join(lines[0], lines[2], lines[1], join(lines[3:]...)), "line 2: seq 3, want 2"},
			{"line repeated", join(lines[0], lines[1], lines[1], join(lines[2:]...)), "line 3: seq 2, want 3"},
			{"first line missing", join(lines[1:]...), "line 1: seq 2, want 1"},
			{"spacing", join(lines[0], strings.Replace(lines[1], `,"op"`, `, "op"`, 1), join(lines[2:]...)), "line 2"},
			{"blank line", join(lines[0], "\n", join(lines[1:]...)), "line 2"},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				id := "a" + string(rune('a'+i))
				mustCreate(t, s, apitype.Attempt{ID: id, Task: "rt-01", Created: base})
				bad := filepath.Join(t.TempDir(), "journal.jsonl")
				must(t, os.WriteFile(bad, []byte(tt.content), 0o644))
				_, _, err := s.IngestJournal(ctx, id, bad)
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want ErrInvalid naming %q", err, tt.want)
				}
				var buf bytes.Buffer
				wantErr(t, s.JournalLines(ctx, id, &buf), ErrNotFound)
				var rows int
				must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM journal_lines WHERE k >> 32 = (SELECT n FROM attempts WHERE id = ?)`, id).Scan(&rows))
				if rows != 0 {
					t.Errorf("got %d lines stored after a refused ingest, want 0", rows)
				}
				if _, n, err := s.IngestJournal(ctx, id, path); err != nil || n != len(lines) {
					t.Errorf("real journal after the refusal: got %d records, %v; want %d", n, err, len(lines))
				}
			})
		}
	})
}

// TestIngestJournalCopiesBlobs takes the copy path: across file systems
// (link fails with EXDEV) blobs are copied and checked against their
// names.
func TestIngestJournalCopiesBlobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		linkFile = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EXDEV} }
		t.Cleanup(func() { linkFile = os.Link })
		s := be.open(t)

		t.Run("copied", func(t *testing.T) {
			mustCreate(t, s, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
			path, recs := testJournal(t, t.TempDir(), 4)
			_, _, err := s.IngestJournal(ctx, "a1", path)
			must(t, err)
			src := journal.Blobs{Dir: journal.BlobsDir(path)}
			for _, r := range recs {
				if r.SHA256 == "" || !src.Has(r.SHA256) {
					continue
				}
				a, _ := src.Path(r.SHA256)
				b, _ := s.Blobs().Path(r.SHA256)
				sa, err := os.Stat(a)
				must(t, err)
				sb, err := os.Stat(b)
				must(t, err)
				if os.SameFile(sa, sb) {
					t.Errorf("blob %s: got a hard link, want a copy", r.SHA256)
				}
				if err := s.Blobs().Verify(r.SHA256); err != nil {
					t.Errorf("blob %s: %v", r.SHA256, err)
				}
			}
		})
		t.Run("corrupt blob", func(t *testing.T) {
			mustCreate(t, s, apitype.Attempt{ID: "a2", Task: "rt-01", Created: base})
			dir := t.TempDir()
			path, _ := testJournal(t, dir, 2)
			// Plant a blob whose content does not match its name.
			sha := journal.HashBytes([]byte("the real content"))
			p := filepath.Join(journal.BlobsDir(path), sha[:2], sha)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.WriteFile(p, []byte("something else"), 0o444))
			_, _, err := s.IngestJournal(ctx, "a2", path)
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, journal.ErrBlobCorrupt) {
				t.Fatalf("got %v, want ErrInvalid and journal.ErrBlobCorrupt", err)
			}
			if s.Blobs().Has(sha) {
				t.Errorf("got blob %s in the store, want the corrupt blob kept out", sha)
			}
			_, err = s.Journal(ctx, "a2")
			wantErr(t, err, ErrNotFound)
		})
	})
}

// TestIngestJournalOtherFileSystem ingests a journal from a tmpfs into a
// store on the disk, where link(2) really fails with EXDEV.
func TestIngestJournalOtherFileSystem(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		shm, err := os.MkdirTemp("/dev/shm", "store-test-")
		if err != nil {
			t.Skipf("skipping: no /dev/shm: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(shm) })
		var a, b syscall.Stat_t
		must(t, syscall.Stat(shm, &a))
		must(t, syscall.Stat(s.Blobs().Dir, &b))
		if a.Dev == b.Dev {
			t.Skip("skipping: /dev/shm and the temporary directory are one file system")
		}
		mustCreate(t, s, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
		path, recs := testJournal(t, shm, 3)
		_, n, err := s.IngestJournal(ctx, "a1", path)
		must(t, err)
		if n != len(recs) {
			t.Errorf("got %d records, want %d", n, len(recs))
		}
		var buf bytes.Buffer
		must(t, s.JournalLines(ctx, "a1", &buf))
		out := filepath.Join(t.TempDir(), "journal.jsonl")
		must(t, os.WriteFile(out, buf.Bytes(), 0o644))
		got, err := journal.Read(out)
		must(t, err)
		if err := journal.Verify(got, s.Blobs()); err != nil {
			t.Errorf("journal.Verify against the copied blobs: got %v, want nil", err)
		}
	})
}

// TestIngestJournalInsertFails makes the inserting side fail in the
// middle of a journal (a row in the way of record 600): the reading side
// stops, nothing of the journal is kept, and the error says why.
func TestIngestJournalInsertFails(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		mustCreate(t, s, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
		path, _ := testJournal(t, t.TempDir(), 1000)
		_, err := s.w.ExecContext(ctx, `INSERT INTO journal_lines (k, line) VALUES (?, 'in the way')`, lineKey(1, 600))
		must(t, err)
		_, _, err = s.IngestJournal(ctx, "a1", path)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "unable to insert journal lines") {
			t.Fatalf("got %v, want ErrConflict from inserting the lines", err)
		}
		var n int
		must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM journal_lines`).Scan(&n))
		if n != 1 {
			t.Errorf("got %d lines stored, want only the one in the way", n)
		}
		_, err = s.Journal(ctx, "a1")
		wantErr(t, err, ErrNotFound)
	})
}

func TestIngestJournalCanceled(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		s := be.open(t)
		mustCreate(t, s, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
		path, _ := testJournal(t, t.TempDir(), 10)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := s.IngestJournal(ctx, "a1", path)
		wantErr(t, err, context.Canceled)
		_, err = s.Journal(context.Background(), "a1")
		wantErr(t, err, ErrNotFound)
	})
}
