package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"benchd.dev/client/apitype"
)

// CreateRetry stores a, a new queued attempt (as CreateAttempt) that
// retries attempt of, with request (what it runs, as SaveRequest keeps
// it; nil for none), and appends a.ID to its run's attempts, all in one
// transaction. So that no slot of a run is scored twice, a retry is
// accepted only of an attempt that has no verdict because the harness
// failed (state infra_error), of the same run, and only once: a retry of
// an attempt in any other state, or of one retried already, is an error
// matching ErrConflict; a retry of another run's attempt, or of an
// attempt of no run, one matching ErrInvalid; of an attempt that does
// not exist, one matching ErrNotFound.
func (s *Store) CreateRetry(ctx context.Context, a apitype.Attempt, of string, request []byte) error {
	a.RetryOf, a.RetriedBy = "", ""
	row, err := newRow(&a)
	if err != nil {
		return fmt.Errorf("unable to create retry %s of %s: %w", a.ID, of, err)
	}
	err = s.writeTx(ctx, func(tx *tx) error {
		return createRetry(ctx, tx, a, row, of, request)
	})
	if err != nil {
		return fmt.Errorf("unable to create retry %s of %s: %w", a.ID, of, err)
	}
	return nil
}

// SaveRequest keeps request, what attempt id was asked to run, as given
// (the store does not read it). An attempt that does not exist is an
// error matching ErrNotFound; a second request of an attempt one
// matching ErrConflict.
func (s *Store) SaveRequest(ctx context.Context, id string, request []byte) error {
	err := s.writeTx(ctx, func(tx *tx) error {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT n FROM attempts WHERE id = ?`, id).Scan(&n); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO requests (attempt, request) VALUES (?, ?)`, n, request)
		return translate(err)
	})
	if err != nil {
		return fmt.Errorf("unable to save the request of attempt %s: %w", id, err)
	}
	return nil
}

// Request returns what SaveRequest or CreateRetry kept for attempt id,
// or an error matching ErrNotFound when the attempt does not exist or has
// none (made before the store kept requests).
func (s *Store) Request(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx,
		`SELECT q.request FROM requests q JOIN attempts a ON a.n = q.attempt WHERE a.id = ?`, id).Scan(&b)
	if err != nil {
		return nil, fmt.Errorf("request of attempt %s: %w", id, translate(err))
	}
	return b, nil
}

// createRetry makes a (split into row) the retry of attempt of in tx,
// with request when not nil (see CreateRetry).
func createRetry(ctx context.Context, tx *tx, a apitype.Attempt, row attemptRow, of string, request []byte) error {
	var (
		n         int64
		run       sql.NullString
		state     string
		retriedBy sql.NullString
	)
	err := tx.QueryRowContext(ctx, `SELECT n, run, state,
		(SELECT b.id FROM retries r JOIN attempts b ON b.n = r.attempt WHERE r.retry_of = attempts.n)
		FROM attempts WHERE id = ?`, of).Scan(&n, &run, &state, &retriedBy)
	if err != nil {
		return fmt.Errorf("attempt %s: %w", of, translate(err))
	}
	switch {
	case !run.Valid:
		return fmt.Errorf("%w: attempt %s belongs to no run", ErrInvalid, of)
	case run.String != a.Run:
		return fmt.Errorf("%w: attempt %s is of run %s, the retry of run %q", ErrInvalid, of, run.String, a.Run)
	case retriedBy.Valid:
		return fmt.Errorf("%w: attempt %s was retried already, by %s", ErrConflict, of, retriedBy.String)
	case state != apitype.StateInfraError:
		return fmt.Errorf("%w: attempt %s is %s: only an infra error is retried", ErrConflict, of, state)
	}
	an, err := insertAttempt(ctx, tx, a, row)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO retries (attempt, retry_of) VALUES (?, ?)`, an, n); err != nil {
		return translate(err)
	}
	if request != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO requests (attempt, request) VALUES (?, ?)`, an, request); err != nil {
			return translate(err)
		}
	}
	var ids []byte
	if err := tx.QueryRowContext(ctx, `SELECT attempts FROM runs WHERE id = ?`, a.Run).Scan(&ids); err != nil {
		return fmt.Errorf("run %s: %w", a.Run, translate(err))
	}
	var list []string
	if err := json.Unmarshal(ids, &list); err != nil {
		return fmt.Errorf("run %s: attempts: %w", a.Run, err)
	}
	if ids, err = json.Marshal(append(list, a.ID)); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE runs SET attempts = ? WHERE id = ?`, ids, a.Run)
	return err
}
