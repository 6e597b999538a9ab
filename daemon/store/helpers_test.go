package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/pgtest"
)

// openTest opens a store in a new temporary directory, closed at the end
// of the test.
func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// base is the creation time of test attempts: a fixed instant, so that
// orderings are chosen by the test.
var base = time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)

// testJournal writes a real journal with journal.Create and Append: a
// workspace snapshot at mount, ops edits of one file (each a write and a
// release whose content is stored as a blob), a denied op, and the final
// snapshot at unmount. It returns the journal's path and its records.
func testJournal(t testing.TB, dir string, ops int) (string, []journal.Record) {
	t.Helper()
	ws := filepath.Join(dir, "ws")
	must(t, os.MkdirAll(filepath.Join(ws, "src"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "src", "counter.py"), []byte("count = 0\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "README"), []byte("read me\n"), 0o644))
	path := filepath.Join(dir, "journal.jsonl")
	w, err := journal.Create(path)
	must(t, err)
	var recs []journal.Record
	wall := base
	app := func(r journal.Record) {
		wall = wall.Add(time.Millisecond)
		r.Wall, r.Mono = wall, wall.Sub(base).Nanoseconds()
		if r.Result == "" {
			r.Result = "ok"
		}
		rec, err := w.Append(r)
		must(t, err)
		recs = append(recs, rec)
	}
	tree, err := journal.SnapshotTree(ws, w.Blobs())
	must(t, err)
	app(journal.Record{Op: journal.OpMount, SHA256: tree.ManifestHash()})
	fp := filepath.Join(ws, "src", "counter.py")
	blobEvery := max(ops/50, 1) // a few dozen distinct blobs, however long
	for i := 0; i < ops; i++ {
		content := fmt.Sprintf("count = %d\n", i/blobEvery)
		if i%blobEvery == 0 {
			must(t, os.WriteFile(fp, []byte(content), 0o644))
			_, err := w.Blobs().PutBytes([]byte(content))
			must(t, err)
		}
		app(journal.Record{Op: journal.OpWrite, Path: "src/counter.py", PID: 4242, UID: 1000,
			Comm: "python3", Size: int64(len(content)), Decision: journal.Allowed})
		sha := journal.HashBytes([]byte(content))
		app(journal.Record{Op: journal.OpRelease, Path: "src/counter.py", PID: 4242, UID: 1000,
			Comm: "python3", Size: int64(len(content)), Decision: journal.Allowed, SHA256: sha})
	}
	app(journal.Record{Op: journal.OpUnlink, Path: "tests/test_counter.py", PID: 4242, UID: 1000,
		Comm: "rm", Result: "EACCES", Decision: journal.Denied})
	tree, err = journal.SnapshotTree(ws, w.Blobs())
	must(t, err)
	app(journal.Record{Op: journal.OpUnmount, SHA256: tree.ManifestHash()})
	must(t, w.Close())
	return path, recs
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustCreate creates attempt a or fails the test.
func mustCreate(t testing.TB, s *Store, a apitype.Attempt) {
	t.Helper()
	if err := s.CreateAttempt(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

// wantErr checks err against want (nil: no error).
func wantErr(t testing.TB, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("got error %v, want none", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("got error %v, want one matching %v", err, want)
	}
}

// A backend is one of the databases the store runs on.
type backend struct {
	name string
	// open opens a new, empty store, closed at the end of the test.
	open func(t testing.TB) *Store
}

// backends are SQLite and PostgreSQL; the store's tests run on each.
var backends = []backend{
	{"sqlite", openTest},
	{"postgres", openPostgresTest},
}

// eachBackend runs fn as a subtest per backend.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// openPostgresTest opens a store on a new database of the test binary's
// PostgreSQL cluster (skipping the test where PostgreSQL is missing),
// with its blob cache in a new temporary directory.
func openPostgresTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Dir: t.TempDir(), Database: pgtest.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pgtest.StopShared(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		code = 1
	}
	os.Exit(code)
}

// stepIndex is the index of the migration step named name in steps: a
// database migrated to that version has the steps before it.
func stepIndex(t testing.TB, steps []migration, name string) int {
	t.Helper()
	for i, m := range steps {
		if m.name == name {
			return i
		}
	}
	t.Fatalf("no migration step %q", name)
	return 0
}

// insertOld inserts attempt a into db as schema version 1 stored it
// (the columns every version has), for migration tests; db is a
// *sql.DB or the store's db, which rebinds placeholders.
func insertOld(t testing.TB, db interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}, a apitype.Attempt) {
	t.Helper()
	row, err := toRow(a)
	must(t, err)
	_, err = db.ExecContext(context.Background(), `INSERT INTO attempts (`+attemptColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		a.ID, row.run, a.Task, a.State, row.created, row.data)
	must(t, err)
}

// infraEnd is an ending as the daemon sets it (its end), for the store's
// own endings (MarkInFlightInfraError, Rescue): infra_error with reason,
// finished now, no verdict, the phase kept.
func infraEnd(reason string) func(*apitype.Attempt) {
	return func(a *apitype.Attempt) {
		now := time.Now().UTC()
		a.State, a.InfraError, a.Finished, a.Pass, a.Reward = apitype.StateInfraError, reason, &now, false, 0
	}
}
