package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

// blobJournal writes a journal whose workspace holds shared.txt (the
// same content in every journal it writes) and whose agent writes
// own.txt with content own. It returns the journal's path and the
// blobs of its blob directory.
func blobJournal(t *testing.T, own string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	must(t, os.MkdirAll(ws, 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "shared.txt"), []byte("the same in every journal\n"), 0o644))
	path := filepath.Join(dir, "journal.jsonl")
	w, err := journal.Create(path)
	must(t, err)
	wall := base
	app := func(r journal.Record) {
		wall = wall.Add(time.Millisecond)
		r.Wall, r.Mono, r.Result = wall, wall.Sub(base).Nanoseconds(), "ok"
		_, err := w.Append(r)
		must(t, err)
	}
	tree, err := journal.SnapshotTree(ws, w.Blobs())
	must(t, err)
	app(journal.Record{Op: journal.OpMount, SHA256: tree.ManifestHash()})
	must(t, os.WriteFile(filepath.Join(ws, "own.txt"), []byte(own), 0o644))
	sha, err := w.Blobs().PutBytes([]byte(own))
	must(t, err)
	app(journal.Record{Op: journal.OpCreate, Path: "own.txt", Mode: 0o644, PID: 7, UID: 1000, Comm: "sh", Decision: journal.Allowed})
	app(journal.Record{Op: journal.OpRelease, Path: "own.txt", PID: 7, UID: 1000, Comm: "sh", Size: int64(len(own)), Decision: journal.Allowed, SHA256: sha})
	tree, err = journal.SnapshotTree(ws, w.Blobs())
	must(t, err)
	app(journal.Record{Op: journal.OpUnmount, SHA256: tree.ManifestHash()})
	must(t, w.Close())
	var shas []string
	dirs, err := os.ReadDir(journal.BlobsDir(path))
	must(t, err)
	for _, d := range dirs {
		files, err := os.ReadDir(filepath.Join(journal.BlobsDir(path), d.Name()))
		must(t, err)
		for _, f := range files {
			if journal.ValidSHA(f.Name()) {
				shas = append(shas, f.Name())
			}
		}
	}
	return path, shas
}

// hasBlob reports whether the store holds blob sha: a file in
// STATE/blobs on SQLite, a row on PostgreSQL.
func hasBlob(t *testing.T, s *Store, sha string) bool {
	t.Helper()
	if _, ok := s.d.(postgresDialect); !ok {
		return s.blobs.Has(sha)
	}
	var n int
	must(t, s.r.QueryRowContext(context.Background(), `SELECT count(*) FROM blobs WHERE sha = ?`, sha).Scan(&n))
	return n > 0
}

// TestPrune: a prune deletes the ended attempts before its time (of
// its purposes) with their records and the blobs no kept journal
// names, keeps queued and running ones and the blobs they share, and
// deletes the runs left empty; on both backends, and on SQLite with
// journals ingested before the store listed their blobs.
func TestPrune(t *testing.T) {
	type variant struct {
		name   string
		be     backend
		legacy bool // the journals' blob lists are dropped, as before schema version 6
	}
	variants := []variant{{"sqlite", backends[0], false}, {"sqlite legacy journals", backends[0], true}, {"postgres", backends[1], false}}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			ctx := context.Background()
			s := v.be.open(t)
			cut := base.Add(time.Hour)
			must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Attempts: []string{"old", "oldinfra", "keep"}, Created: base}))
			must(t, s.CreateRun(ctx, apitype.Run{ID: "r2", Task: "rt-01", Attempts: []string{"check"}, Created: base}))
			must(t, s.CreateRun(ctx, apitype.Run{ID: "r3", Task: "rt-01", Attempts: []string{"running", "queued"}, Created: base}))
			setup := []struct {
				id, run, purpose, state string
				at                      time.Time
			}{
				{"old", "r1", apitype.PurposeRun, apitype.StateDone, base},
				{"oldinfra", "r1", apitype.PurposeRun, apitype.StateInfraError, base.Add(time.Minute)},
				{"keep", "r1", apitype.PurposeRun, apitype.StateDone, cut.Add(time.Minute)},
				{"check", "r2", apitype.PurposeCheck, apitype.StateCanceled, base.Add(2 * time.Minute)},
				{"running", "r3", apitype.PurposeRun, apitype.StateRunning, base},
				{"queued", "r3", apitype.PurposeRun, apitype.StateQueued, base},
			}
			for _, a := range setup {
				at := apitype.Attempt{ID: a.id, Run: a.run, Task: "rt-01", Purpose: a.purpose, Created: a.at}
				mustCreate(t, s, at)
				at.State = a.state
				must(t, s.UpdateAttempt(ctx, at))
			}
			must(t, s.CreateRetry(ctx, apitype.Attempt{ID: "retry", Run: "r1", Task: "rt-01", Created: cut.Add(2 * time.Minute)}, "oldinfra", []byte(`{}`)))
			// A chain pruned whole: gone1, an infra error, retried by
			// gone2, which ended before the cut too.
			must(t, s.CreateRun(ctx, apitype.Run{ID: "r4", Task: "rt-01", Attempts: []string{"gone1"}, Created: base}))
			g1 := apitype.Attempt{ID: "gone1", Run: "r4", Task: "rt-01", Created: base.Add(3 * time.Minute)}
			mustCreate(t, s, g1)
			g1.State = apitype.StateInfraError
			must(t, s.UpdateAttempt(ctx, g1))
			g2 := apitype.Attempt{ID: "gone2", Run: "r4", Task: "rt-01", Created: base.Add(4 * time.Minute)}
			must(t, s.CreateRetry(ctx, g2, "gone1", nil))
			g2.State = apitype.StateDone
			must(t, s.UpdateAttempt(ctx, g2))
			blobs := map[string][]string{}
			for _, id := range []string{"old", "keep", "check", "running"} {
				path, shas := blobJournal(t, "written by "+id+"\n")
				_, _, err := s.IngestJournal(ctx, id, path)
				must(t, err)
				blobs[id] = shas
			}
			must(t, s.SaveTranscript(ctx, "old", apitype.Transcript{Stdout: "0123456789", Stderr: "abc"}))
			must(t, s.SaveRequest(ctx, "old", []byte(`{"agent":"x"}`)))
			must(t, s.SaveEnvelope(ctx, "old", "k1", []byte(`{"payload":""}`)))
			if v.legacy {
				_, err := s.w.ExecContext(ctx, `DELETE FROM journal_blobs`)
				must(t, err)
			}
			// The blobs only old names, and those it shares with a kept
			// journal.
			var only, shared []string
			for _, sha := range blobs["old"] {
				if slices.Contains(blobs["keep"], sha) || slices.Contains(blobs["running"], sha) {
					shared = append(shared, sha)
				} else {
					only = append(only, sha)
				}
			}
			if len(only) == 0 || len(shared) == 0 {
				t.Fatalf("the test journals share %d blobs and have %d of their own, want some of each", len(shared), len(only))
			}
			var onlyBytes int64
			for _, sha := range only {
				p, err := s.blobs.Path(sha)
				must(t, err)
				st, err := os.Stat(p)
				must(t, err)
				onlyBytes += st.Size()
			}

			t.Run("dry run of checks", func(t *testing.T) {
				got, err := s.Prune(ctx, PruneFilter{Before: cut, Purposes: []string{apitype.PurposeCheck}, DryRun: true})
				must(t, err)
				if want := []string{"check"}; !reflect.DeepEqual(got.Attempts, want) || got.Runs != 1 {
					t.Errorf("got %v and %d runs, want %v and 1 run", got.Attempts, got.Runs, want)
				}
				if _, err := s.GetAttempt(ctx, "check"); err != nil {
					t.Errorf("after a dry run: %v, want the attempt kept", err)
				}
				if _, err := s.GetRun(ctx, "r2"); err != nil {
					t.Errorf("after a dry run: %v, want the run kept", err)
				}
			})
			t.Run("checks", func(t *testing.T) {
				got, err := s.Prune(ctx, PruneFilter{Before: cut, Purposes: []string{apitype.PurposeCheck}})
				must(t, err)
				if want := []string{"check"}; !reflect.DeepEqual(got.Attempts, want) {
					t.Errorf("got %v, want %v", got.Attempts, want)
				}
				wantErr(t, ignore(s.GetAttempt(ctx, "check")), ErrNotFound)
				wantErr(t, ignore(s.GetRun(ctx, "r2")), ErrNotFound)
				must(t, ignore(s.GetAttempt(ctx, "old")))
			})
			t.Run("everything before", func(t *testing.T) {
				got, err := s.Prune(ctx, PruneFilter{Before: cut})
				must(t, err)
				if want := []string{"old", "gone1", "gone2"}; !reflect.DeepEqual(got.Attempts, want) {
					t.Errorf("got attempts %v, want %v", got.Attempts, want)
				}
				if want := []string{"oldinfra"}; !reflect.DeepEqual(got.KeptForRetries, want) {
					t.Errorf("got kept for retries %v, want %v (its retry is kept)", got.KeptForRetries, want)
				}
				if got.Runs != 1 {
					t.Errorf("got %d runs deleted, want 1: r4 (r1 keeps keep and retry, r3 its running and queued attempts)", got.Runs)
				}
				if got.Blobs != len(only) || got.BlobBytes != onlyBytes {
					t.Errorf("got %d blobs of %d bytes, want %d of %d", got.Blobs, got.BlobBytes, len(only), onlyBytes)
				}
				if got.RecordBytes <= int64(len("0123456789abc")) {
					t.Errorf("got %d record bytes, want more than the transcript's 13", got.RecordBytes)
				}
				for _, id := range []string{"old", "gone1", "gone2"} {
					wantErr(t, ignore(s.GetAttempt(ctx, id)), ErrNotFound)
				}
				wantErr(t, ignore(s.Journal(ctx, "old")), ErrNotFound)
				wantErr(t, ignore(s.Transcript(ctx, "old")), ErrNotFound)
				wantErr(t, ignore(s.Request(ctx, "old")), ErrNotFound)
				wantErr(t, ignore(s.Envelope(ctx, "old")), ErrNotFound)
				for _, id := range []string{"keep", "oldinfra", "retry", "running", "queued"} {
					must(t, ignore(s.GetAttempt(ctx, id)))
				}
				for _, sha := range only {
					if hasBlob(t, s, sha) {
						t.Errorf("blob %s of the pruned journal only: still stored", sha)
					}
					if s.blobs.Has(sha) {
						t.Errorf("blob %s of the pruned journal only: still in STATE/blobs", sha)
					}
				}
				for _, id := range []string{"keep", "running"} {
					for _, sha := range blobs[id] {
						if !hasBlob(t, s, sha) {
							t.Errorf("blob %s of kept attempt %s: gone", sha, id)
						}
					}
				}
				r, err := s.GetRun(ctx, "r1")
				must(t, err)
				if want := []string{"oldinfra", "keep", "retry"}; !reflect.DeepEqual(r.Attempts, want) {
					t.Errorf("got run r1's attempts %v, want %v", r.Attempts, want)
				}
				if _, err := s.GetRun(ctx, "r4"); !errors.Is(err, ErrNotFound) {
					t.Errorf("run r4, its chain pruned whole: got %v, want it gone", err)
				}
				re, err := s.GetAttempt(ctx, "retry")
				must(t, err)
				if re.RetryOf != "oldinfra" {
					t.Errorf("got the kept retry linked to %q, want oldinfra (its signed retry_of)", re.RetryOf)
				}
			})
			t.Run("kept journals still replay", func(t *testing.T) {
				for _, id := range []string{"keep", "running"} {
					b, err := s.BlobsFor(ctx, id)
					must(t, err)
					path := filepath.Join(t.TempDir(), "journal.jsonl")
					f, err := os.Create(path)
					must(t, err)
					must(t, s.JournalLines(ctx, id, f))
					must(t, f.Close())
					recs, err := journal.Read(path)
					must(t, err)
					if err := journal.VerifyReplay(recs, b); err != nil {
						t.Errorf("attempt %s: %v", id, err)
					}
				}
			})
			t.Run("nothing left to prune", func(t *testing.T) {
				got, err := s.Prune(ctx, PruneFilter{Before: cut})
				must(t, err)
				if len(got.Attempts) != 0 || got.Blobs != 0 {
					t.Errorf("got %+v, want nothing", got)
				}
			})
			t.Run("bad filters", func(t *testing.T) {
				wantErr(t, ignore(s.Prune(ctx, PruneFilter{})), ErrInvalid)
				wantErr(t, ignore(s.Prune(ctx, PruneFilter{Before: cut, Purposes: []string{"fun"}})), ErrInvalid)
			})
		})
	}
}

// ignore drops a value, keeping the error.
func ignore[T any](_ T, err error) error { return err }
