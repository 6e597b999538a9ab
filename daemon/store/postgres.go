package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"

	"benchd.dev/fsmon/journal"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// blobChunk is the size of one row of blob_chunks.
const blobChunk = 1 << 20

// pgMaxConns bounds the PostgreSQL pool of one benchd.
const pgMaxConns = 8

// pgMigrations is the PostgreSQL schema, step by step, as migrations is
// SQLite's. The first step is the schema SQLite reached in its five,
// plus the blob tables.
var pgMigrations = []migration{
	{
		name: "the schema of SQLite version 5, and blobs",
		sql: `
CREATE TABLE runs (
	id       TEXT COLLATE "C" PRIMARY KEY,
	task     TEXT NOT NULL,
	agent    TEXT NOT NULL,
	attempts TEXT NOT NULL,   -- JSON array of attempt ids, in order
	created  BIGINT NOT NULL  -- ns since the Unix epoch
);
CREATE TABLE attempts (
	n       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id      TEXT COLLATE "C" NOT NULL UNIQUE, -- byte order: AttemptIDs scans a prefix range
	run     TEXT COLLATE "C" REFERENCES runs(id),
	task    TEXT NOT NULL,
	state   TEXT NOT NULL,
	created BIGINT NOT NULL, -- ns since the Unix epoch
	data    TEXT NOT NULL    -- JSON: apitype.Attempt without the columns above
);
CREATE INDEX attempts_by_created ON attempts(created, n);
CREATE INDEX attempts_by_run ON attempts(run, created, n);
CREATE INDEX attempts_by_task ON attempts(task, created, n);
CREATE INDEX attempts_by_state ON attempts(state, created, n);
CREATE TABLE journals (
	attempt  BIGINT PRIMARY KEY REFERENCES attempts(n),
	records  BIGINT NOT NULL,
	head     TEXT NOT NULL,   -- hash of the last record
	bytes    BIGINT NOT NULL, -- size of the journal file
	ingested BIGINT NOT NULL  -- ns since the Unix epoch
);
CREATE TABLE journal_lines (
	k    BIGINT PRIMARY KEY, -- attempts.n << 32 | seq
	line BYTEA NOT NULL      -- the record's line, without its newline
);
CREATE TABLE transcripts (
	attempt          BIGINT PRIMARY KEY REFERENCES attempts(n),
	stdout           BYTEA NOT NULL,
	stderr           BYTEA NOT NULL,
	stdout_truncated BOOLEAN NOT NULL,
	stderr_truncated BOOLEAN NOT NULL
);
CREATE TABLE signatures (
	attempt  BIGINT PRIMARY KEY REFERENCES attempts(n),
	keyid    TEXT NOT NULL,
	envelope BYTEA NOT NULL,
	signed   BIGINT NOT NULL
);
CREATE TABLE retries (
	attempt  BIGINT PRIMARY KEY REFERENCES attempts(n),
	retry_of BIGINT NOT NULL UNIQUE REFERENCES attempts(n)
);
CREATE TABLE requests (
	attempt BIGINT PRIMARY KEY REFERENCES attempts(n),
	request BYTEA NOT NULL
);
CREATE TABLE reviews (
	attempt  BIGINT PRIMARY KEY REFERENCES attempts(n),
	outcome  TEXT NOT NULL CHECK (outcome IN ('pass', 'fail')),
	why      TEXT NOT NULL,
	uid      BIGINT NOT NULL,
	reviewed BIGINT NOT NULL,
	graded   TEXT NOT NULL
);
-- Blobs, content-addressed: a blob is stored once, whichever journals
-- name it, in chunks of 1 MiB.
CREATE TABLE blobs (
	sha  TEXT COLLATE "C" PRIMARY KEY, -- sha256 of the content, hex
	size BIGINT NOT NULL
);
CREATE TABLE blob_chunks (
	sha  TEXT COLLATE "C" NOT NULL REFERENCES blobs(sha),
	i    INTEGER NOT NULL, -- chunk number from 0
	data BYTEA NOT NULL,
	PRIMARY KEY (sha, i)
);
-- The blobs of each journal (its blob directory when it was ingested).
CREATE TABLE journal_blobs (
	attempt BIGINT NOT NULL REFERENCES journals(attempt),
	sha     TEXT COLLATE "C" NOT NULL REFERENCES blobs(sha),
	PRIMARY KEY (attempt, sha)
);
`,
	},
	{
		name: "the tasks of a run",
		sql: `
-- A run's tasks, in order (JSON array of task ids); '[]' for a run
-- stored before: its one task is runs.task.
ALTER TABLE runs ADD COLUMN tasks TEXT NOT NULL DEFAULT '[]';
`,
	},
	{
		name: "purposes",
		sql: `
-- As SQLite's step 6 (whose journal_blobs this schema had from the
-- start).
ALTER TABLE attempts ADD COLUMN purpose TEXT NOT NULL DEFAULT 'run';
UPDATE attempts SET purpose = 'check' WHERE (data::jsonb #>> '{agent,spec}') LIKE 'builtin:attempt:%';
CREATE INDEX attempts_by_purpose ON attempts(purpose, created, n);
CREATE INDEX journal_blobs_by_sha ON journal_blobs(sha);
`,
	},
	{
		name: "hosts and scores",
		sql:  hostsAndScores("BIGINT"),
	},
	{
		name: "model calls",
		sql:  modelCalls("BIGINT", "BYTEA"),
	},
}

// redact returns database with its password left out, for messages.
func redact(database string) string {
	u, err := url.Parse(database)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

// openPostgres opens and migrates the PostgreSQL database at database.
func (s *Store) openPostgres(ctx context.Context, database string) error {
	raw, err := sql.Open("pgx", database)
	if err != nil {
		return fmt.Errorf("unable to open store %s: %w", redact(database), err)
	}
	raw.SetMaxOpenConns(pgMaxConns)
	raw.SetMaxIdleConns(pgMaxConns)
	s.w, s.r = db{DB: raw, d: s.d}, db{DB: raw, d: s.d}
	if err := raw.PingContext(ctx); err != nil {
		raw.Close()
		return fmt.Errorf("unable to open store %s: %w", redact(database), err)
	}
	if err := migrate(ctx, s.d, raw, pgMigrations, s.log); err != nil {
		raw.Close()
		return fmt.Errorf("unable to open store %s: %w", redact(database), err)
	}
	return nil
}

// insertBlobs stores the blobs shas (in the local cache, s.blobs) in the
// database as the blobs of journal an, in tx: a blob stored already is
// only named. A blob whose content does not hash to its name is an
// error matching ErrInvalid.
func (s *Store) insertBlobs(ctx context.Context, tx *tx, an int64, shas []string) error {
	buf := make([]byte, blobChunk)
	for _, sha := range shas {
		// The blob row first (the chunks refer to it), and only when
		// the database lacks it. Writers hold the writers' lock, so no
		// other ingest is between this insert and the chunks; the
		// ON CONFLICT does not depend on it.
		res, err := tx.ExecContext(ctx, `INSERT INTO blobs (sha, size) VALUES (?, 0) ON CONFLICT (sha) DO NOTHING`, sha)
		if err != nil {
			return fmt.Errorf("unable to store blob %s: %w", sha, translate(err))
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("unable to store blob %s: %w", sha, err)
		} else if n == 1 {
			if err := insertChunks(ctx, tx, s.blobs, sha, buf); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO journal_blobs (attempt, sha) VALUES (?, ?)`, an, sha); err != nil {
			return fmt.Errorf("unable to store blob %s: %w", sha, translate(err))
		}
	}
	return nil
}

// insertChunks copies the content of blob sha of blobs into the
// database, chunk by chunk through buf, checks its hash and sets its
// size.
func insertChunks(ctx context.Context, tx *tx, blobs *journal.Blobs, sha string, buf []byte) error {
	f, err := blobs.Open(sha)
	if err != nil {
		return fmt.Errorf("unable to store blob %s: %w", sha, err)
	}
	defer f.Close()
	h := sha256.New()
	var size int64
	for i := 0; ; i++ {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 || i == 0 {
			h.Write(buf[:n])
			size += int64(n)
			if _, err := tx.ExecContext(ctx, `INSERT INTO blob_chunks (sha, i, data) VALUES (?, ?, ?)`, sha, i, buf[:n]); err != nil {
				return fmt.Errorf("unable to store blob %s: %w", sha, translate(err))
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("unable to store blob %s: %w", sha, rerr)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("%w: blob %s: %w (content hashes to %s)", ErrInvalid, sha, journal.ErrBlobCorrupt, got)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE blobs SET size = ? WHERE sha = ?`, size, sha); err != nil {
		return fmt.Errorf("unable to store blob %s: %w", sha, err)
	}
	return nil
}

// BlobsFor returns the blob store (the local STATE/blobs) with every
// blob of the journal of attempt attemptID in it. With SQLite the blobs
// are there since the ingest. With PostgreSQL this host may not have
// ingested the journal: each blob missing from the local cache is
// fetched from the database and placed by journal.Blobs, which hashes
// it, and a blob whose content does not match its name is an error
// matching journal.ErrBlobCorrupt (and is not placed). An attempt
// without a journal has no blobs.
func (s *Store) BlobsFor(ctx context.Context, attemptID string) (*journal.Blobs, error) {
	if _, ok := s.d.(postgresDialect); !ok {
		return s.blobs, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT b.sha FROM journal_blobs b JOIN attempts a ON a.n = b.attempt WHERE a.id = ? ORDER BY b.sha`, attemptID)
	if err != nil {
		return nil, fmt.Errorf("unable to fetch the blobs of attempt %s: %w", attemptID, err)
	}
	var missing []string
	for rows.Next() {
		var sha string
		if err := rows.Scan(&sha); err != nil {
			rows.Close()
			return nil, fmt.Errorf("unable to fetch the blobs of attempt %s: %w", attemptID, err)
		}
		if !s.blobs.Has(sha) {
			missing = append(missing, sha)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unable to fetch the blobs of attempt %s: %w", attemptID, err)
	}
	for _, sha := range missing {
		if err := s.fetchBlob(ctx, sha); err != nil {
			return nil, fmt.Errorf("unable to fetch the blobs of attempt %s: %w", attemptID, err)
		}
	}
	if len(missing) > 0 {
		s.log.Info("blobs fetched", "attempt", attemptID, "blobs", len(missing))
	}
	return s.blobs, nil
}

// fetchBlob copies blob sha from the database into the local cache.
func (s *Store) fetchBlob(ctx context.Context, sha string) error {
	tmp, err := os.CreateTemp(s.blobs.Dir, ".fetch-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	// One snapshot: the chunks and the size agree.
	tx, err := s.r.BeginTx(ctx, s.d.readTx())
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var size int64
	if err := tx.QueryRowContext(ctx, `SELECT size FROM blobs WHERE sha = ?`, sha).Scan(&size); err != nil {
		return fmt.Errorf("blob %s: %w", sha, translate(err))
	}
	rows, err := tx.QueryContext(ctx, `SELECT data FROM blob_chunks WHERE sha = ? ORDER BY i`, sha)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		chunk []byte
		n     int64
	)
	for rows.Next() {
		if err := rows.Scan(&chunk); err != nil {
			return err
		}
		if _, err := tmp.Write(chunk); err != nil {
			return err
		}
		n += int64(len(chunk))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("blob %s: %d bytes stored, want %d", sha, n, size)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	got, _, err := s.blobs.PutOpenFile(tmp)
	if err != nil {
		return err
	}
	if got != sha {
		// Not ErrInvalid: the caller asked for nothing wrong, the
		// database holds a corrupt blob.
		return fmt.Errorf("blob %s: %w (the stored content hashes to %s)", sha, journal.ErrBlobCorrupt, got)
	}
	return nil
}
