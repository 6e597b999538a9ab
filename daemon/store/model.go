package store

import (
	"context"
	"encoding/json"
	"fmt"

	"benchd.dev/client/apitype"
)

// modelCalls is the schema step of the model calls; big and blob are
// the dialect's integer and bytes types.
func modelCalls(big, blob string) string {
	return `
-- Each attempt's calls through its HTTP gateways (package modelgw): the
-- call (JSON, apitype.ModelCall) and its stored request and response,
-- as the gateway stored them (credentials redacted, --env values
-- scrubbed, capped).
CREATE TABLE model_calls (
	attempt  ` + big + ` NOT NULL REFERENCES attempts(n),
	seq      ` + big + ` NOT NULL,
	call     TEXT NOT NULL,
	request  ` + blob + ` NOT NULL,
	response ` + blob + ` NOT NULL,
	PRIMARY KEY (attempt, seq)
);
`
}

// ModelCall is one model call to store with its messages.
type ModelCall struct {
	Call              apitype.ModelCall
	Request, Response []byte
}

// insertModelCalls stores calls as attempt an's; it must have none yet
// (else ErrConflict).
func insertModelCalls(ctx context.Context, tx *tx, an int64, id string, calls []ModelCall) error {
	if len(calls) == 0 {
		return nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM model_calls WHERE attempt = ?`, an).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: attempt %s has its model calls already", ErrConflict, id)
	}
	for _, c := range calls {
		b, err := json.Marshal(c.Call)
		if err != nil {
			return err
		}
		req, resp := c.Request, c.Response
		if req == nil {
			req = []byte{}
		}
		if resp == nil {
			resp = []byte{}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO model_calls (attempt, seq, call, request, response) VALUES (?, ?, ?, ?, ?)`,
			an, c.Call.Seq, string(b), req, resp); err != nil {
			return translate(err)
		}
	}
	return nil
}

// SaveModelCalls stores the model calls of attempt id, which must exist
// (else ErrNotFound) and have none yet (else ErrConflict): what start-up
// recovery does for an attempt whose benchd died; an ending attempt's go
// with Finish.
func (s *Store) SaveModelCalls(ctx context.Context, id string, calls []ModelCall) error {
	err := s.writeTx(ctx, func(tx *tx) error {
		an, err := attemptN(ctx, tx, id)
		if err != nil {
			return err
		}
		return insertModelCalls(ctx, tx, an, id, calls)
	})
	if err != nil {
		return fmt.Errorf("unable to store the model calls of attempt %s: %w", id, err)
	}
	return nil
}

// ModelCalls returns the model calls of attempt id in order, none when
// it has none; an error matching ErrNotFound when the attempt does not
// exist.
func (s *Store) ModelCalls(ctx context.Context, id string) ([]apitype.ModelCall, error) {
	an, err := attemptN(ctx, s.r, id)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT call FROM model_calls WHERE attempt = ? ORDER BY seq`, an)
	if err != nil {
		return nil, fmt.Errorf("unable to get the model calls of attempt %s: %w", id, translate(err))
	}
	defer rows.Close()
	calls := []apitype.ModelCall{}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var c apitype.ModelCall
		if err := json.Unmarshal([]byte(b), &c); err != nil {
			return nil, fmt.Errorf("a stored model call of attempt %s is corrupt: %w", id, err)
		}
		calls = append(calls, c)
	}
	return calls, rows.Err()
}

// ModelMessage returns the stored request (response false) or response
// of call seq of attempt id; an error matching ErrNotFound when the
// attempt or the call does not exist.
func (s *Store) ModelMessage(ctx context.Context, id string, seq int, response bool) ([]byte, error) {
	col := "request"
	if response {
		col = "response"
	}
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT m.`+col+` FROM model_calls m JOIN attempts a ON a.n = m.attempt WHERE a.id = ? AND m.seq = ?`, id, seq).Scan(&b)
	if err != nil {
		return nil, fmt.Errorf("unable to get the %s of model call %d of attempt %s: %w", col, seq, id, translate(err))
	}
	return b, nil
}
