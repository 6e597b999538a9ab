package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/pgtest"
)

// openHost opens a store on the PostgreSQL database at url with a blob
// cache of its own, as one benchd host of a fleet.
func openHost(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Dir: t.TempDir(), Database: url})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestBlobsForAnotherHost ingests a journal on one host and reads its
// blobs on another that shares only the database: BlobsFor fetches each
// blob (a big one in several chunks), checked against its name.
func TestBlobsForAnotherHost(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	a, b := openHost(t, url), openHost(t, url)
	mustCreate(t, a, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
	path, _ := testJournal(t, t.TempDir(), 6)
	big := bytes.Repeat([]byte("0123456789abcdef"), (5*blobChunk/2)/16+3) // 2.5 chunks and a bit
	src := &journal.Blobs{Dir: journal.BlobsDir(path)}
	bigSHA, err := src.PutBytes(big)
	must(t, err)
	empty, err := src.PutBytes(nil)
	must(t, err)
	_, _, err = a.IngestJournal(ctx, "a1", path)
	must(t, err)
	shas, _, err := a.placeBlobs(src.Dir) // every blob is in a's cache already
	must(t, err)
	if len(shas) < 3 {
		t.Fatalf("got %d blobs in the journal, want at least 3", len(shas))
	}
	for _, sha := range shas {
		if b.Blobs().Has(sha) {
			t.Fatalf("host b has blob %s before BlobsFor", sha)
		}
	}
	blobs, err := b.BlobsFor(ctx, "a1")
	must(t, err)
	for _, sha := range shas {
		if err := blobs.Verify(sha); err != nil {
			t.Errorf("blob %s on host b: %v", sha, err)
		}
		want, err := src.ReadAll(sha)
		must(t, err)
		got, err := blobs.ReadAll(sha)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("blob %s on host b: got %d bytes, want %d, the same", sha, len(got), len(want))
		}
	}
	var chunks int
	must(t, b.r.QueryRowContext(ctx, `SELECT count(*) FROM blob_chunks WHERE sha = ?`, bigSHA).Scan(&chunks))
	if chunks != 3 {
		t.Errorf("got the big blob in %d chunks, want 3", chunks)
	}
	if !blobs.Has(empty) {
		t.Errorf("got no empty blob on host b, want it fetched")
	}

	// A second journal naming the same blobs stores each blob once.
	mustCreate(t, a, apitype.Attempt{ID: "a2", Task: "rt-01", Created: base})
	path2, _ := testJournal(t, t.TempDir(), 6)
	_, err = (&journal.Blobs{Dir: journal.BlobsDir(path2)}).PutBytes(big)
	must(t, err)
	_, _, err = b.IngestJournal(ctx, "a2", path2)
	must(t, err)
	var rows, named int
	must(t, a.r.QueryRowContext(ctx, `SELECT count(*) FROM blobs WHERE sha = ?`, bigSHA).Scan(&rows))
	must(t, a.r.QueryRowContext(ctx, `SELECT count(*) FROM journal_blobs WHERE sha = ?`, bigSHA).Scan(&named))
	if rows != 1 || named != 2 {
		t.Errorf("got the big blob in %d rows named by %d journals, want 1 row named by 2", rows, named)
	}
}

// TestBlobsForCorrupt: a blob whose stored content does not hash to its
// name is refused and kept out of the cache.
func TestBlobsForCorrupt(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	a, b := openHost(t, url), openHost(t, url)
	mustCreate(t, a, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
	path, _ := testJournal(t, t.TempDir(), 2)
	_, _, err := a.IngestJournal(ctx, "a1", path)
	must(t, err)
	var sha string
	must(t, a.r.QueryRowContext(ctx, `SELECT min(sha) FROM journal_blobs`).Scan(&sha))
	_, err = a.w.ExecContext(ctx, `UPDATE blob_chunks SET data = ? WHERE sha = ? AND i = 0`, []byte("tampered"), sha)
	must(t, err)
	_, err = a.w.ExecContext(ctx, `UPDATE blobs SET size = 8 WHERE sha = ?`, sha)
	must(t, err)
	_, err = b.BlobsFor(ctx, "a1")
	if !errors.Is(err, journal.ErrBlobCorrupt) {
		t.Fatalf("got %v, want an error matching journal.ErrBlobCorrupt", err)
	}
	if b.Blobs().Has(sha) {
		t.Errorf("got blob %s in host b's cache, want the corrupt blob kept out", sha)
	}
}

// TestBlobsForSQLite: with SQLite every blob of an ingested journal is in
// the store's directory, and BlobsFor returns it.
func TestBlobsForSQLite(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	mustCreate(t, s, apitype.Attempt{ID: "a1", Task: "rt-01", Created: base})
	path, _ := testJournal(t, t.TempDir(), 3)
	_, _, err := s.IngestJournal(ctx, "a1", path)
	must(t, err)
	blobs, err := s.BlobsFor(ctx, "a1")
	must(t, err)
	if blobs.Dir != s.Blobs().Dir {
		t.Errorf("got blob directory %s, want %s", blobs.Dir, s.Blobs().Dir)
	}
	shas, _, err := s.placeBlobs(journal.BlobsDir(path))
	must(t, err)
	for _, sha := range shas {
		if err := blobs.Verify(sha); err != nil {
			t.Errorf("blob %s: %v", sha, err)
		}
	}
}

// logLines is a slog handler's output, safe for concurrent writers.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// TestPostgresMigrateOnce opens one new database from several hosts at
// once: each step is applied once, by one of them, and all open.
func TestPostgresMigrateOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	var out logLines
	log := slog.New(slog.NewTextHandler(&out, nil))
	const hosts = 6
	errs := make([]error, hosts)
	var wg sync.WaitGroup
	for i := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, Config{Dir: t.TempDir(), Database: url, Logger: log})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("host %d: %v", i, err)
		}
	}
	if got, want := out.count("schema migrated"), len(pgMigrations); got != want {
		t.Errorf("got %d steps applied, want %d (each once)\n%s", got, want, out.buf.String())
	}
	s := openHost(t, url)
	if got, want := storeVersion(t, s), len(pgMigrations); got != want {
		t.Errorf("got schema version %d, want %d", got, want)
	}
}

// TestPostgresSchemaTooNew: a database a newer benchd migrated is
// refused and left as it is.
func TestPostgresSchemaTooNew(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	s := openHost(t, url)
	newer := len(pgMigrations) + 1
	_, err := s.w.ExecContext(ctx, `UPDATE schema_version SET version = ?`, newer)
	must(t, err)
	_, err = Open(ctx, Config{Dir: t.TempDir(), Database: url})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("got %v, want an error matching ErrSchemaTooNew", err)
	}
	if want := fmt.Sprintf("version %d", newer); !strings.Contains(err.Error(), want) {
		t.Errorf("got message %q, want it to contain %q", err, want)
	}
	if got := storeVersion(t, s); got != newer {
		t.Errorf("got version %d after the refusal, want it untouched (%d)", got, newer)
	}
}

// TestOpenDatabaseURL: Config.Database is empty or a PostgreSQL URL;
// anything else is refused, with the password left out of the message.
func TestOpenDatabaseURL(t *testing.T) {
	tests := []struct {
		database string
		postgres bool
	}{
		{"", false},
		{"postgres://u@h/db", true},
		{"postgresql://u@h/db", true},
		{"mysql://u:secret@h/db", false},
		{"/var/lib/benchd/benchd.db", false},
	}
	for _, tt := range tests {
		t.Run(tt.database, func(t *testing.T) {
			if got := IsPostgres(tt.database); got != tt.postgres {
				t.Errorf("got IsPostgres %v, want %v", got, tt.postgres)
			}
		})
	}
	_, err := Open(context.Background(), Config{Dir: t.TempDir(), Database: "mysql://u:secret@h/db"})
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "secret") {
		t.Errorf("got %v, want an error matching ErrInvalid without the password", err)
	}
}

// storeVersion is the schema version of s's database.
func storeVersion(t *testing.T, s *Store) int {
	t.Helper()
	v, err := schemaVersion(context.Background(), s.d, s.r)
	must(t, err)
	return v
}

// TestPostgresSchema checks what the PostgreSQL schema must keep from
// SQLite's: ids sort by byte (AttemptIDs scans a prefix as a key
// range), and text SQLite would store but PostgreSQL cannot is refused
// as invalid.
func TestPostgresSchema(t *testing.T) {
	ctx := context.Background()
	s := openHost(t, pgtest.Database(t))
	for _, c := range []struct{ table, column string }{
		{"runs", "id"}, {"attempts", "id"}, {"attempts", "run"}, {"blobs", "sha"},
	} {
		t.Run(c.table+"."+c.column, func(t *testing.T) {
			var got string
			must(t, s.r.QueryRowContext(ctx, `SELECT coalesce(collation_name, '') FROM information_schema.columns
				WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`, c.table, c.column).Scan(&got))
			if got != "C" {
				t.Errorf("got collation %q, want \"C\"", got)
			}
		})
	}
	t.Run("NUL in text", func(t *testing.T) {
		err := s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01\x00", Agent: "null"})
		wantErr(t, err, ErrInvalid)
	})
}
