package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
)

// A migration is one step of the schema. Steps are applied in order; the
// database's version is the number of steps applied. A released step is
// never edited: a change is a new step at the end.
type migration struct {
	name string
	sql  string
}

// migrations is the schema, step by step. migrations[i] takes the
// database from version i to version i+1.
var migrations = []migration{
	{
		name: "runs and attempts",
		sql: `
CREATE TABLE runs (
	id       TEXT PRIMARY KEY,
	task     TEXT NOT NULL,
	agent    TEXT NOT NULL,
	attempts TEXT NOT NULL,    -- JSON array of attempt ids, in order
	created  INTEGER NOT NULL  -- ns since the Unix epoch
);
CREATE TABLE attempts (
	n       INTEGER PRIMARY KEY, -- row id: insertion order, the key of the tables below
	id      TEXT NOT NULL UNIQUE,
	run     TEXT REFERENCES runs(id),
	task    TEXT NOT NULL,
	state   TEXT NOT NULL,
	created INTEGER NOT NULL,    -- ns since the Unix epoch
	data    TEXT NOT NULL        -- JSON: apitype.Attempt without the columns above
);
CREATE INDEX attempts_by_created ON attempts(created, n);
CREATE INDEX attempts_by_run ON attempts(run, created, n);
CREATE INDEX attempts_by_task ON attempts(task, created, n);
CREATE INDEX attempts_by_state ON attempts(state, created, n);
`,
	},
	{
		name: "journals and transcripts",
		sql: `
CREATE TABLE journals (
	attempt  INTEGER PRIMARY KEY REFERENCES attempts(n),
	records  INTEGER NOT NULL,
	head     TEXT NOT NULL,    -- hash of the last record
	bytes    INTEGER NOT NULL, -- size of the journal file
	ingested INTEGER NOT NULL  -- ns since the Unix epoch
);
-- A line's key k is the attempt's row number times 2^32 plus the
-- record's seq: one integer key, so the table is a plain rowid table
-- (rows of a few hundred bytes are too big for WITHOUT ROWID to pay off)
-- and a journal's lines are one contiguous range of keys, appended in
-- order.
CREATE TABLE journal_lines (
	k    INTEGER PRIMARY KEY,
	line BLOB NOT NULL        -- the record's line, without its newline
);
CREATE TABLE transcripts (
	attempt          INTEGER PRIMARY KEY REFERENCES attempts(n),
	stdout           BLOB NOT NULL,
	stderr           BLOB NOT NULL,
	stdout_truncated INTEGER NOT NULL,
	stderr_truncated INTEGER NOT NULL
);
`,
	},
	{
		name: "signed statements",
		sql: `
CREATE TABLE signatures (
	attempt  INTEGER PRIMARY KEY REFERENCES attempts(n),
	keyid    TEXT NOT NULL,    -- the signing key's id (internal/dsse.KeyID)
	envelope BLOB NOT NULL,    -- the DSSE envelope of the attempt's statement, JSON
	signed   INTEGER NOT NULL  -- ns since the Unix epoch
);
`,
	},
	{
		name: "retries and requests",
		sql: `
-- A retry of an infra-error attempt: each attempt is retried at most
-- once (retry_of is unique), so a run's slot is a chain.
CREATE TABLE retries (
	attempt  INTEGER PRIMARY KEY REFERENCES attempts(n),    -- the retry
	retry_of INTEGER NOT NULL UNIQUE REFERENCES attempts(n) -- the attempt it retries
);
-- What an attempt was asked to run (the daemon's request, JSON, without
-- the values of environment variables), so that it can be retried.
CREATE TABLE requests (
	attempt INTEGER PRIMARY KEY REFERENCES attempts(n),
	request BLOB NOT NULL
);
`,
	},
	{
		name: "reviews",
		sql: `
CREATE TABLE reviews (
	attempt  INTEGER PRIMARY KEY REFERENCES attempts(n), -- one review per attempt
	outcome  TEXT NOT NULL CHECK (outcome IN ('pass', 'fail')),
	why      TEXT NOT NULL,
	uid      INTEGER NOT NULL, -- the reviewer, from the socket's peer credentials
	reviewed INTEGER NOT NULL, -- ns since the Unix epoch
	graded   TEXT NOT NULL     -- JSON: the grader's verdict, left to review (apitype.Verdict)
);
`,
	},
	{
		name: "the tasks of a run",
		sql: `
-- A run's tasks, in order (JSON array of task ids). A run stored before
-- runs had several tasks has '[]': its one task is runs.task.
ALTER TABLE runs ADD COLUMN tasks TEXT NOT NULL DEFAULT '[]';
`,
	},
	{
		name: "purposes and the blobs of each journal",
		sql: `
-- What an attempt was made for (apitype.Purpose*). Attempts made before
-- this step read as runs, except those of the built-in agents
-- builtin:attempt:NAME, which only benchctl tasks check submitted.
ALTER TABLE attempts ADD COLUMN purpose TEXT NOT NULL DEFAULT 'run';
UPDATE attempts SET purpose = 'check' WHERE json_extract(data, '$.agent.spec') LIKE 'builtin:attempt:%';
CREATE INDEX attempts_by_purpose ON attempts(purpose, created, n);
-- The blobs of each journal (its blob directory when it was ingested),
-- so that a prune knows which blobs no journal names any more. A
-- journal ingested before this step has no rows: Prune lists its blobs
-- from its records the first time it runs.
CREATE TABLE journal_blobs (
	attempt INTEGER NOT NULL REFERENCES journals(attempt),
	sha     TEXT NOT NULL,
	PRIMARY KEY (attempt, sha)
);
CREATE INDEX journal_blobs_by_sha ON journal_blobs(sha);
`,
	},
	{
		name: "hosts and scores",
		sql:  hostsAndScores("INTEGER"),
	},
	{
		name: "model calls",
		sql:  modelCalls("INTEGER", "BLOB"),
	},
}

// SchemaVersion is the schema version this package writes to SQLite
// (PostgreSQL's migrations are a list of their own).
func SchemaVersion() int { return len(migrations) }

// schemaVersion returns the version recorded in db, 0 for a new database.
func schemaVersion(ctx context.Context, d dialect, q querier) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, d.hasVersionTable()).Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v int
	if err := q.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("unable to read schema version: %w", translate(err))
	}
	return v, nil
}

// migrate brings raw, a database of dialect d, up to len(steps), one
// transaction per step. It refuses a database newer than len(steps).
func migrate(ctx context.Context, d dialect, raw *sql.DB, steps []migration, log *slog.Logger) error {
	for {
		done, err := migrateOne(ctx, db{DB: raw, d: d}, steps, log)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next missing step, if any, and reports whether
// the schema is up to date.
func migrateOne(ctx context.Context, db db, steps []migration, log *slog.Logger) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("unable to migrate: %w", err)
	}
	defer tx.Rollback()
	// On PostgreSQL, benchd hosts starting at once queue here, and each
	// step is applied by one of them.
	if err := db.d.lockWrite(ctx, tx.Tx); err != nil {
		return false, fmt.Errorf("unable to migrate: %w", err)
	}
	v, err := schemaVersion(ctx, db.d, tx)
	if err != nil {
		return false, err
	}
	switch {
	case v > len(steps):
		return false, fmt.Errorf("%w: the database is at schema version %d, this benchd knows versions up to %d (upgrade benchd, or use a new state directory)",
			ErrSchemaTooNew, v, len(steps))
	case v == len(steps):
		return true, nil
	case v == 0:
		if _, err := tx.ExecContext(ctx, `CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return false, fmt.Errorf("unable to create schema_version: %w", err)
		}
	}
	step := steps[v]
	// As written, not rebound: a step has no placeholders, and its
	// comments may hold what rebind would misread.
	if _, err := tx.Tx.ExecContext(ctx, step.sql); err != nil {
		return false, fmt.Errorf("unable to migrate to schema version %d (%s): %w", v+1, step.name, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, v+1); err != nil {
		return false, fmt.Errorf("unable to migrate to schema version %d: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("unable to migrate to schema version %d: %w", v+1, err)
	}
	log.Info("schema migrated", "version", v+1, "step", step.name)
	return v+1 == len(steps), nil
}
