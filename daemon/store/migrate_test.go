package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openAtVersion creates a database in dir with the first v migrations
// applied, as a benchd of that version left it.
func openAtVersion(t *testing.T, dir string, v int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", dsn(filepath.Join(dir, DBName), ""))
	must(t, err)
	db.SetMaxOpenConns(1)
	must(t, migrate(context.Background(), sqliteDialect{}, db, migrations[:v], quiet))
	return db
}

func version(t *testing.T, db *sql.DB) int {
	t.Helper()
	v, err := schemaVersion(context.Background(), sqliteDialect{}, db)
	must(t, err)
	return v
}

func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAtVersion(t, dir, 1)
	if got := version(t, db); got != 1 {
		t.Fatalf("got version %d, want 1", got)
	}
	// Rows as version 1 stored them.
	a := fullAttempt("a1")
	a.Run = ""
	insertOld(t, db, a)
	var n int
	must(t, db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'journal_lines'`).Scan(&n))
	if n != 0 {
		t.Fatalf("version 1 has journal_lines, want it added by version 2")
	}
	must(t, db.Close())

	s, err := Open(ctx, Config{Dir: dir})
	must(t, err)
	defer s.Close()
	if got, want := version(t, s.w.DB), SchemaVersion(); got != want {
		t.Errorf("got version %d after Open, want %d", got, want)
	}
	got, err := s.GetAttempt(ctx, "a1")
	must(t, err)
	if got.ID != a.ID || got.State != a.State || got.JournalHead != a.JournalHead || !got.Created.Equal(a.Created) {
		t.Errorf("got %+v after migration, want %+v", got, a)
	}
	// Version 2's tables work on the migrated database.
	path, _ := testJournal(t, t.TempDir(), 3)
	if _, n, err := s.IngestJournal(ctx, "a1", path); err != nil || n != 9 {
		t.Errorf("ingest after migration: got %d records, %v; want 9, no error", n, err)
	}
	must(t, s.SaveTranscript(ctx, "a1", apitype.Transcript{Stdout: "hi"}))
}

func TestMigrateEachStepOnce(t *testing.T) {
	ctx := context.Background()
	for v := 0; v <= len(migrations); v++ {
		t.Run(fmt.Sprintf("from v%d", v), func(t *testing.T) {
			db := openAtVersion(t, t.TempDir(), v)
			defer db.Close()
			if got := version(t, db); got != v {
				t.Fatalf("got version %d, want %d", got, v)
			}
			must(t, migrate(ctx, sqliteDialect{}, db, migrations, quiet))
			must(t, migrate(ctx, sqliteDialect{}, db, migrations, quiet)) // nothing left to do
			if got := version(t, db); got != len(migrations) {
				t.Errorf("got version %d, want %d", got, len(migrations))
			}
		})
	}
}

func TestMigrateFailedStepRollsBack(t *testing.T) {
	ctx := context.Background()
	db := openAtVersion(t, t.TempDir(), 1)
	defer db.Close()
	steps := append(append([]migration{}, migrations[:1]...),
		migration{name: "broken", sql: `CREATE TABLE half (x INTEGER); THIS IS NOT SQL`})
	err := migrate(ctx, sqliteDialect{}, db, steps, quiet)
	if err == nil || !strings.Contains(err.Error(), "schema version 2 (broken)") {
		t.Fatalf("got %v, want an error naming step 2", err)
	}
	if got := version(t, db); got != 1 {
		t.Errorf("got version %d after a failed step, want 1", got)
	}
	var n int
	must(t, db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'half'`).Scan(&n))
	if n != 0 {
		t.Error("got the failed step's table, want it rolled back")
	}
}

func TestSchemaTooNew(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAtVersion(t, dir, len(migrations))
	newer := len(migrations) + 1
	_, err := db.ExecContext(ctx, `UPDATE schema_version SET version = ?`, newer)
	must(t, err)
	must(t, db.Close())

	_, err = Open(ctx, Config{Dir: dir})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("got %v, want an error matching ErrSchemaTooNew", err)
	}
	for _, want := range []string{fmt.Sprintf("version %d", newer), fmt.Sprintf("up to %d", len(migrations)), "upgrade benchd"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got message %q, want it to contain %q", err, want)
		}
	}
	db, err = sql.Open("sqlite3", dsn(filepath.Join(dir, DBName), ""))
	must(t, err)
	defer db.Close()
	if got := version(t, db); got != newer {
		t.Errorf("got version %d after the refusal, want it untouched (%d)", got, newer)
	}
}

// TestMigrateSignatures: a database of version 2, with an ended attempt
// in it, gains the signatures table; its attempts keep their rows and
// can be signed, and an envelope is kept byte for byte.
func TestMigrateSignatures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAtVersion(t, dir, 2)
	var n int
	must(t, db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'signatures'`).Scan(&n))
	if n != 0 {
		t.Fatalf("version 2 has signatures, want it added by version 3")
	}
	a := fullAttempt("a1")
	a.Run = ""
	insertOld(t, db, a)
	must(t, db.Close())

	s, err := Open(ctx, Config{Dir: dir})
	must(t, err)
	defer s.Close()
	if got := version(t, s.w.DB); got < 3 {
		t.Fatalf("got version %d after Open, want at least 3", got)
	}
	if _, err := s.Envelope(ctx, "a1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("envelope of an attempt never signed: got %v, want ErrNotFound", err)
	}
	env := []byte(`{"payloadType":"application/vnd.benchd.attempt+json","payload":"e30=","signatures":[{"keyid":"k1","sig":"AA=="}]}`)
	must(t, s.SaveEnvelope(ctx, "a1", "k1", env))
	got, err := s.Envelope(ctx, "a1")
	must(t, err)
	if string(got) != string(env) {
		t.Errorf("got envelope %s, want %s", got, env)
	}
	// A second signature replaces the first.
	env2 := []byte(`{"payloadType":"x","payload":"","signatures":[]}`)
	must(t, s.SaveEnvelope(ctx, "a1", "k2", env2))
	if got, err := s.Envelope(ctx, "a1"); err != nil || string(got) != string(env2) {
		t.Errorf("after a second save: got %s, %v; want %s", got, err, env2)
	}
	if err := s.SaveEnvelope(ctx, "nope", "k1", env); !errors.Is(err, ErrNotFound) {
		t.Errorf("signature of a missing attempt: got %v, want ErrNotFound", err)
	}
	if err := s.SaveEnvelope(ctx, "a1", "", env); !errors.Is(err, ErrInvalid) {
		t.Errorf("signature without a key id: got %v, want ErrInvalid", err)
	}
	if got, err := s.GetAttempt(ctx, "a1"); err != nil || got.JournalHead != a.JournalHead {
		t.Errorf("attempt after migration: got %+v, %v", got, err)
	}
}

// TestMigrateRetries: a database of version 3, with an infra-error
// attempt of a run in it, gains retries and requests; the attempt reads
// back with no links, has no request, and can be retried once.
func TestMigrateRetries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAtVersion(t, dir, 3)
	var n int
	must(t, db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name IN ('retries', 'requests')`).Scan(&n))
	if n != 0 {
		t.Fatalf("version 3 has retries or requests, want them added by version 4")
	}
	a := fullAttempt("a1")
	a.State, a.InfraError = apitype.StateInfraError, "mount failed"
	row, err := toRow(a)
	must(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO runs (id, task, agent, attempts, created) VALUES ('r1', 'rt-01', 'x', '["a1"]', 0)`)
	must(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO attempts (`+attemptColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		a.ID, row.run, a.Task, a.State, row.created, row.data)
	must(t, err)
	must(t, db.Close())

	s, err := Open(ctx, Config{Dir: dir})
	must(t, err)
	defer s.Close()
	if got := version(t, s.w.DB); got < 4 {
		t.Fatalf("got version %d after Open, want at least 4", got)
	}
	got, err := s.GetAttempt(ctx, "a1")
	must(t, err)
	if got.RetryOf != "" || got.RetriedBy != "" || got.InfraError != "mount failed" {
		t.Errorf("attempt after migration: got retry_of %q retried_by %q infra %q", got.RetryOf, got.RetriedBy, got.InfraError)
	}
	if _, err := s.Request(ctx, "a1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("request of an attempt made before version 4: got %v, want ErrNotFound", err)
	}
	must(t, s.CreateRetry(ctx, apitype.Attempt{ID: "a2", Run: "r1", Task: "rt-01"}, "a1", nil))
	wantErr(t, s.CreateRetry(ctx, apitype.Attempt{ID: "a3", Run: "r1", Task: "rt-01"}, "a1", nil), ErrConflict)
}
