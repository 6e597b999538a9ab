package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

// hostsAndScores is the migration step that lets many benchd hosts share
// one database: which host runs an attempt and when it last said so
// (seen, ns since the Unix epoch: its heartbeat), whether a cancel was
// asked of it from another host, and the table that makes "scored at
// most once" a key rather than a convention. A run's slot is a chain of
// attempts linked by retries; scored holds at most one attempt per
// chain, keyed by the chain's first attempt (root). The attempts done
// before this step are scored by it. big is the dialect's 64-bit
// integer type.
func hostsAndScores(big string) string {
	return `
ALTER TABLE attempts ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN seen ` + big + ` NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
CREATE INDEX attempts_by_host ON attempts(host, state);
CREATE TABLE scored (
	root    ` + big + ` PRIMARY KEY REFERENCES attempts(n),      -- the chain's first attempt
	attempt ` + big + ` NOT NULL UNIQUE REFERENCES attempts(n) -- its one done attempt
);
WITH RECURSIVE chain(n, root) AS (
	SELECT n, n FROM attempts WHERE n NOT IN (SELECT attempt FROM retries)
	UNION ALL
	SELECT r.attempt, c.root FROM retries r JOIN chain c ON r.retry_of = c.n
)
INSERT INTO scored (root, attempt)
	SELECT c.root, c.n FROM chain c JOIN attempts a ON a.n = c.n WHERE a.state = 'done';
`
}

// rootOf is the query of the first attempt of attempt n's retry chain.
const rootOf = `WITH RECURSIVE up(n) AS (
	SELECT CAST(? AS BIGINT)
	UNION ALL
	SELECT r.retry_of FROM retries r JOIN up ON r.attempt = up.n
) SELECT min(n) FROM up`

// score records that attempt n is done. Scoring the same attempt again
// changes nothing; scoring a second attempt of the chain is an error
// matching ErrConflict (the scored table's key).
func score(ctx context.Context, tx *tx, n int64) error {
	var root int64
	if err := tx.QueryRowContext(ctx, rootOf, n).Scan(&root); err != nil {
		return translate(err)
	}
	_, err := tx.ExecContext(ctx,
		`INSERT INTO scored (root, attempt) VALUES (?, ?) ON CONFLICT (attempt) DO NOTHING`, root, n)
	if err != nil {
		return fmt.Errorf("attempt already scored in its chain: %w", translate(err))
	}
	return nil
}

// updateAttempt writes a (split into row) over the stored attempt. When
// from is not empty the stored attempt must be in state from, and when
// host is not empty it must be that host's: else the update is an error
// matching ErrConflict naming what the attempt is now. An attempt that
// becomes done is scored.
func updateAttempt(ctx context.Context, tx *tx, a apitype.Attempt, row attemptRow, from, host string) error {
	var (
		n                 int64
		state, storedHost string
	)
	err := tx.QueryRowContext(ctx, `SELECT n, state, host FROM attempts WHERE id = ?`, a.ID).Scan(&n, &state, &storedHost)
	if err != nil {
		return translate(err)
	}
	if from != "" && state != from {
		return fmt.Errorf("%w: attempt %s is %s, not %s", ErrConflict, a.ID, state, from)
	}
	if host != "" && storedHost != host {
		return fmt.Errorf("%w: attempt %s is run by host %q, not %q", ErrConflict, a.ID, storedHost, host)
	}
	_, err = tx.ExecContext(ctx,
		`UPDATE attempts SET run = ?, task = ?, state = ?, created = ?, data = ?, host = ? WHERE n = ?`,
		row.run, a.Task, a.State, row.created, row.data, a.Host, n)
	if err != nil {
		return translate(err)
	}
	if a.State == apitype.StateDone {
		return score(ctx, tx, n)
	}
	return nil
}

// StartAttempt records that host a.Host (not empty) took queued attempt
// a and runs it: a is stored as given (its State running) only while
// the stored attempt is still queued; one canceled or taken by another
// host meanwhile is an error matching ErrConflict. Its heartbeat starts.
func (s *Store) StartAttempt(ctx context.Context, a apitype.Attempt) error {
	if a.Host == "" || a.State != apitype.StateRunning {
		return fmt.Errorf("unable to start attempt %s: %w: want state running and a host", a.ID, ErrInvalid)
	}
	row, err := toRow(a)
	if err != nil {
		return fmt.Errorf("unable to start attempt %s: %w", a.ID, err)
	}
	err = s.writeTx(ctx, func(tx *tx) error {
		if err := updateAttempt(ctx, tx, a, row, apitype.StateQueued, ""); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE attempts SET seen = ? WHERE id = ?`, nanos(time.Now()), a.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("unable to start attempt %s: %w", a.ID, err)
	}
	return nil
}

// UpdateRunning replaces running attempt a, only while it is still
// running on host a.Host: an attempt another host gave up for it (see
// Rescue) is an error matching ErrConflict.
func (s *Store) UpdateRunning(ctx context.Context, a apitype.Attempt) error {
	return s.updateIf(ctx, a, apitype.StateRunning, a.Host)
}

// UpdateQueued replaces queued attempt a (to end it unrun: canceled or
// infra_error), only while it is still queued: one a host took
// meanwhile is an error matching ErrConflict.
func (s *Store) UpdateQueued(ctx context.Context, a apitype.Attempt) error {
	return s.updateIf(ctx, a, apitype.StateQueued, "")
}

// updateIf is updateAttempt in a write transaction of its own.
func (s *Store) updateIf(ctx context.Context, a apitype.Attempt, from, host string) error {
	a.Purpose = "" // as UpdateAttempt: kept as created
	row, err := toRow(a)
	if err != nil {
		return fmt.Errorf("unable to update attempt %s: %w", a.ID, err)
	}
	err = s.writeTx(ctx, func(tx *tx) error {
		return updateAttempt(ctx, tx, a, row, from, host)
	})
	if err != nil {
		return fmt.Errorf("unable to update attempt %s: %w", a.ID, err)
	}
	return nil
}

// Finish is the end of a running attempt, recorded by Store.Finish.
type Finish struct {
	// Attempt is the ended attempt, its Host the host that ran it.
	Attempt apitype.Attempt
	// JournalPath is the attempt's journal file, or empty for none. Its
	// head becomes Attempt.JournalHead when that is empty.
	JournalPath string
	// ModelCalls are the attempt's model calls with their messages,
	// stored in the same transaction (the attempt must have none yet).
	ModelCalls []ModelCall
	// InTx, when not nil, runs last in the same transaction: River's
	// completion of the attempt's job on a fleet.
	InTx func(ctx context.Context, tx *sql.Tx) error
}

// Finish records the end of running attempt f.Attempt in one
// transaction: its journal and the journal's blobs (when f.JournalPath
// is not empty), the attempt, its model calls, its score when it is
// done, and f.InTx.
// The attempt must still be running on f.Attempt.Host (else ErrConflict:
// another host gave it up, see Rescue); a second scored attempt of its
// retry chain is an error matching ErrConflict; a journal that cannot be
// stored is an error matching ErrJournal. Nothing is committed on error.
func (s *Store) Finish(ctx context.Context, f Finish) (err error) {
	a := f.Attempt
	defer func() {
		if err != nil {
			err = fmt.Errorf("unable to record the end of attempt %s: %w", a.ID, err)
		}
	}()
	var ing *ingest
	if f.JournalPath != "" {
		// As in IngestJournal: no prune between placing the blobs and
		// the commit that names them.
		s.blobMu.RLock()
		defer s.blobMu.RUnlock()
		if ing, err = s.prepareIngest(ctx, a.ID, f.JournalPath); err != nil {
			return errors.Join(ErrJournal, err)
		}
		defer ing.close()
	}
	if ing != nil {
		// The journal's lines went through SQLite's write-ahead log,
		// which would otherwise keep their size on disk as well.
		defer s.shrinkWAL(ctx)
	}
	return s.writeTx(ctx, func(tx *tx) error {
		if ing != nil {
			head, err := ing.run(ctx, s, tx)
			if err != nil {
				return errors.Join(ErrJournal, err)
			}
			if a.JournalHead == "" {
				a.JournalHead = head
			}
		}
		row, err := toRow(a)
		if err != nil {
			return err
		}
		if err := updateAttempt(ctx, tx, a, row, apitype.StateRunning, a.Host); err != nil {
			return err
		}
		if len(f.ModelCalls) > 0 {
			an, err := attemptN(ctx, tx, a.ID)
			if err != nil {
				return err
			}
			if err := insertModelCalls(ctx, tx, an, a.ID, f.ModelCalls); err != nil {
				return err
			}
		}
		if f.InTx != nil {
			return f.InTx(ctx, tx.Tx)
		}
		return nil
	})
}

// shrinkWAL, on SQLite, copies the write-ahead log into the database and
// truncates it, so that a journal's lines stored once in the database
// are not kept a second time in the log (which SQLite otherwise leaves
// at its largest size). A reader still on the log makes it a no-op
// until the next end; an error is logged, never returned: the end is
// committed already.
func (s *Store) shrinkWAL(ctx context.Context) {
	if s.OnPostgres() {
		return
	}
	if _, err := s.w.ExecContext(context.WithoutCancel(ctx), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		s.log.Warn("unable to truncate the write-ahead log", "err", err)
	}
}

// ingest is a journal ready to go into a transaction: its file open
// twice and its blobs placed.
type ingest struct {
	id      string
	f, raw  *os.File
	size    int64
	shas    []string
	path    string
	records int
}

func (in *ingest) close() { in.f.Close(); in.raw.Close() }

// prepareIngest opens journalPath of attempt id and places its blobs,
// outside any transaction (see IngestJournal).
func (s *Store) prepareIngest(ctx context.Context, id, journalPath string) (*ingest, error) {
	f, err := os.Open(journalPath)
	if err != nil {
		return nil, err
	}
	raw, err := os.Open(journalPath)
	if err != nil {
		f.Close()
		return nil, err
	}
	in := &ingest{id: id, f: f, raw: raw, path: journalPath}
	st, err := raw.Stat()
	if err != nil {
		in.close()
		return nil, err
	}
	in.size = st.Size()
	if _, err := noJournalYet(ctx, s.r, id); err != nil {
		in.close()
		return nil, err
	}
	if in.shas, _, err = s.placeBlobs(journal.BlobsDir(journalPath)); err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// Heartbeat says that host is alive and runs its attempts: their seen
// time becomes now. It returns the ids of those of its running attempts
// that another host asked to cancel (RequestCancel).
func (s *Store) Heartbeat(ctx context.Context, host string) ([]string, error) {
	var ids []string
	err := s.writeTx(ctx, func(tx *tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET seen = ? WHERE host = ? AND state = ?`,
			nanos(time.Now()), host, apitype.StateRunning); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM attempts WHERE host = ? AND state = ? AND cancel_requested = 1`,
			host, apitype.StateRunning)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("unable to record the heartbeat of host %s: %w", host, err)
	}
	return ids, nil
}

// RequestCancel asks the host that runs attempt id to cancel it (it
// learns of it at its next Heartbeat). An attempt that is not running is
// an error matching ErrConflict.
func (s *Store) RequestCancel(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx *tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE attempts SET cancel_requested = 1 WHERE id = ? AND state = ?`,
			id, apitype.StateRunning)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("%w: attempt %s is not running", ErrConflict, id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unable to ask for the cancel of attempt %s: %w", id, err)
	}
	return nil
}

// Rescued is what Rescue found.
type Rescued int

const (
	// RescueEnded: the attempt is no longer running; nothing was done.
	RescueEnded Rescued = iota
	// RescueAlive: its host's heartbeat is recent; nothing was done.
	RescueAlive
	// RescueDone: the attempt became an infra error and retry was made.
	RescueDone
)

// Rescue gives up running attempt id when its host has been silent since
// before staleBefore: in one transaction the attempt gets its ending
// from end (the daemon's one ending: an infra error naming the silent
// host) and retry (a new queued attempt of the same run, with
// request) is made as its retry, and inTx runs (queueing the retry).
// Whichever host ran it can no longer record anything of it (its
// updates match ErrConflict).
func (s *Store) Rescue(ctx context.Context, id string, staleBefore time.Time, end func(*apitype.Attempt), retry apitype.Attempt, request []byte, inTx func(ctx context.Context, tx *sql.Tx) error) (Rescued, error) {
	result := RescueEnded
	rrow, err := newRow(&retry)
	if err != nil {
		return result, fmt.Errorf("unable to rescue attempt %s: %w", id, err)
	}
	err = s.writeTx(ctx, func(tx *tx) error {
		result = RescueEnded
		a, err := scanAttempt(tx.QueryRowContext(ctx, attemptSelect+` WHERE a.id = ?`, id))
		if err != nil {
			return err
		}
		var seen int64
		if err := tx.QueryRowContext(ctx, `SELECT seen FROM attempts WHERE id = ?`, id).Scan(&seen); err != nil {
			return translate(err)
		}
		if a.State != apitype.StateRunning {
			return nil
		}
		if seen >= nanos(staleBefore) {
			result = RescueAlive
			return nil
		}
		end(&a)
		row, err := toRow(a)
		if err != nil {
			return err
		}
		if err := updateAttempt(ctx, tx, a, row, apitype.StateRunning, ""); err != nil {
			return err
		}
		if err := createRetry(ctx, tx, retry, rrow, id, request); err != nil {
			return err
		}
		if inTx != nil {
			if err := inTx(ctx, tx.Tx); err != nil {
				return err
			}
		}
		result = RescueDone
		return nil
	})
	if err != nil {
		return RescueEnded, fmt.Errorf("unable to rescue attempt %s: %w", id, err)
	}
	return result, nil
}

// InTx runs fn in a write transaction of the store (on PostgreSQL under
// the writers' lock) and commits it, or rolls it back when fn fails.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return s.writeTx(ctx, func(tx *tx) error { return fn(ctx, tx.Tx) })
}

// DB is the store's database pool on PostgreSQL (for River's driver),
// nil on SQLite.
func (s *Store) DB() *sql.DB {
	if _, ok := s.d.(postgresDialect); ok {
		return s.w.DB
	}
	return nil
}

// OnPostgres reports whether the store is on PostgreSQL.
func (s *Store) OnPostgres() bool { _, ok := s.d.(postgresDialect); return ok }

// CountStates returns how many attempts are in each state.
func (s *Store) CountStates(ctx context.Context) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT state, count(*) FROM attempts GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("unable to count attempts: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("unable to count attempts: %w", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}

// migrateLockKey is the key of the session advisory lock WithMigrateLock
// takes ("benchd" + 1).
const migrateLockKey = writeLockKey + 1

// WithMigrateLock runs fn while this process holds PostgreSQL's session
// advisory lock for migrations of other schemas in the same database
// (River's tables), so that hosts starting together migrate them once.
// Such migrations need their own transactions (a new enum value cannot be
// used in the transaction that adds it), hence a session lock on one
// connection rather than a transaction's. On SQLite fn runs as it is.
func (s *Store) WithMigrateLock(ctx context.Context, fn func() error) error {
	if !s.OnPostgres() {
		return fn()
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("unable to take the migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLockKey)
	return fn()
}
