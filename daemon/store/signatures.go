package store

import (
	"context"
	"fmt"
	"time"
)

// SaveEnvelope stores the signed statement of attempt id, replacing an
// earlier one. An attempt that does not exist is an error matching
// ErrNotFound; an empty envelope or key id one matching ErrInvalid.
func (s *Store) SaveEnvelope(ctx context.Context, id, keyID string, envelope []byte) error {
	if len(envelope) == 0 || keyID == "" {
		return fmt.Errorf("unable to save the signature of attempt %s: %w: empty envelope or key id", id, ErrInvalid)
	}
	err := s.writeTx(ctx, func(tx *tx) error {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT n FROM attempts WHERE id = ?`, id).Scan(&n); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO signatures (attempt, keyid, envelope, signed) VALUES (?, ?, ?, ?)
			 ON CONFLICT (attempt) DO UPDATE SET keyid = excluded.keyid, envelope = excluded.envelope, signed = excluded.signed`,
			n, keyID, envelope, nanos(time.Now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("unable to save the signature of attempt %s: %w", id, err)
	}
	return nil
}

// Envelope returns the signed statement of attempt id, or an error
// matching ErrNotFound when the attempt does not exist or has none.
func (s *Store) Envelope(ctx context.Context, id string) ([]byte, error) {
	var env []byte
	err := s.r.QueryRowContext(ctx,
		`SELECT s.envelope FROM signatures s JOIN attempts a ON a.n = s.attempt WHERE a.id = ?`, id).Scan(&env)
	if err != nil {
		return nil, fmt.Errorf("signature of attempt %s: %w", id, translate(err))
	}
	return env, nil
}
