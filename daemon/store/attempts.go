package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"benchd.dev/client/apitype"
)

// states are the attempt states the store accepts.
var states = map[string]bool{
	apitype.StateQueued:     true,
	apitype.StateRunning:    true,
	apitype.StateDone:       true,
	apitype.StateInfraError: true,
	apitype.StateCanceled:   true,
}

// nanos and fromNanos convert times to and from their column form.
func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// CreateRun stores a new run, its Attempts (the ids, in order) and its
// Tasks included: GetRun returns them as given. Created is set to now
// when zero. A run whose id exists already is an error matching
// ErrConflict.
func (s *Store) CreateRun(ctx context.Context, r apitype.Run) error {
	if r.ID == "" {
		return fmt.Errorf("unable to create run: %w: empty id", ErrInvalid)
	}
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	ids, err := json.Marshal(r.Attempts)
	if err != nil {
		return fmt.Errorf("unable to create run %s: %w", r.ID, err)
	}
	if r.Tasks == nil {
		r.Tasks = []string{}
	}
	taskIDs, err := json.Marshal(r.Tasks)
	if err != nil {
		return fmt.Errorf("unable to create run %s: %w", r.ID, err)
	}
	err = s.writeTx(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO runs (id, task, agent, attempts, created, tasks) VALUES (?, ?, ?, ?, ?, ?)`,
			r.ID, r.Task, r.Agent, ids, nanos(r.Created), taskIDs)
		return err
	})
	if err != nil {
		return fmt.Errorf("unable to create run %s: %w", r.ID, translate(err))
	}
	return nil
}

// GetRun returns run id, or an error matching ErrNotFound. A run stored
// without Tasks (one stored before runs had several tasks) has Tasks
// [Task], or none when Task is "".
func (s *Store) GetRun(ctx context.Context, id string) (apitype.Run, error) {
	r := apitype.Run{ID: id}
	var ids, taskIDs []byte
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT task, agent, attempts, created, tasks FROM runs WHERE id = ?`, id).
		Scan(&r.Task, &r.Agent, &ids, &created, &taskIDs)
	if err != nil {
		return apitype.Run{}, fmt.Errorf("unable to get run %s: %w", id, translate(err))
	}
	if err := json.Unmarshal(ids, &r.Attempts); err != nil {
		return apitype.Run{}, fmt.Errorf("unable to get run %s: attempts: %w", id, err)
	}
	if err := json.Unmarshal(taskIDs, &r.Tasks); err != nil {
		return apitype.Run{}, fmt.Errorf("unable to get run %s: tasks: %w", id, err)
	}
	if len(r.Tasks) == 0 {
		r.Tasks = []string{}
		if r.Task != "" {
			r.Tasks = []string{r.Task}
		}
	}
	r.Created = fromNanos(created)
	return r, nil
}

// attemptRow is an Attempt split into the stored columns.
type attemptRow struct {
	run     sql.NullString
	created int64
	purpose string
	data    []byte
}

// purposeOf returns the stored purpose of p: PurposeRun when empty.
func purposeOf(p string) (string, error) {
	if p == "" {
		return apitype.PurposeRun, nil
	}
	if !apitype.ValidPurpose(p) {
		return "", fmt.Errorf("%w: unknown purpose %q", ErrInvalid, p)
	}
	return p, nil
}

// toRow validates a and splits it into columns: data is the JSON of a
// with the column fields zeroed.
func toRow(a apitype.Attempt) (attemptRow, error) {
	if a.ID == "" {
		return attemptRow{}, fmt.Errorf("%w: empty attempt id", ErrInvalid)
	}
	if !states[a.State] {
		return attemptRow{}, fmt.Errorf("%w: unknown state %q", ErrInvalid, a.State)
	}
	purpose, err := purposeOf(a.Purpose)
	if err != nil {
		return attemptRow{}, err
	}
	row := attemptRow{
		run:     sql.NullString{String: a.Run, Valid: a.Run != ""},
		created: nanos(a.Created),
		purpose: purpose,
	}
	rest := a
	rest.ID, rest.Run, rest.Task, rest.State, rest.Created = "", "", "", "", time.Time{}
	rest.Purpose = ""
	rest.RetryOf, rest.RetriedBy = "", ""
	rest.Review = nil // the reviews table's
	row.data, err = json.Marshal(rest)
	return row, err
}

// scanAttempt reads the columns of attemptSelect: id, run, task, state,
// created, purpose, data, the two links of the retries table, and the review's
// columns (NULL without one).
func scanAttempt(sc interface{ Scan(...any) error }) (apitype.Attempt, error) {
	var (
		a                        apitype.Attempt
		id, task, state, purpose string
		run, retryOf, retriedBy  sql.NullString
		created                  int64
		data                     []byte
		rvOutcome, why           sql.NullString
		uid, reviewed            sql.NullInt64
		graded                   []byte
	)
	if err := sc.Scan(&id, &run, &task, &state, &created, &purpose, &data, &retryOf, &retriedBy, &rvOutcome, &why, &uid, &reviewed, &graded); err != nil {
		return apitype.Attempt{}, translate(err)
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return apitype.Attempt{}, fmt.Errorf("attempt %s: stored data: %w", id, err)
	}
	a.ID, a.Run, a.Task, a.State, a.Created = id, run.String, task, state, fromNanos(created)
	a.Purpose = purpose
	a.RetryOf, a.RetriedBy = retryOf.String, retriedBy.String
	a.Review = nil
	if rvOutcome.Valid {
		rv := &apitype.Review{Outcome: rvOutcome.String, Why: why.String, UID: int(uid.Int64), Time: fromNanos(reviewed.Int64)}
		if err := json.Unmarshal(graded, &rv.Graded); err != nil {
			return apitype.Attempt{}, fmt.Errorf("attempt %s: stored review: %w", id, err)
		}
		a.Review = rv
	}
	return a, nil
}

// attemptColumns are the columns of attempts that every schema version
// has; an insert sets them, purpose and host.
const attemptColumns = `id, run, task, state, created, data`

// attemptSelect selects what scanAttempt reads: each attempt (as a) with
// the two links of the retries table (retry_of, retried_by) and its
// review (as v), if any.
const attemptSelect = `SELECT a.id, a.run, a.task, a.state, a.created, a.purpose, a.data,
	(SELECT o.id FROM retries r JOIN attempts o ON o.n = r.retry_of WHERE r.attempt = a.n),
	(SELECT b.id FROM retries r JOIN attempts b ON b.n = r.attempt WHERE r.retry_of = a.n),
	v.outcome, v.why, v.uid, v.reviewed, v.graded
	FROM attempts a LEFT JOIN reviews v ON v.attempt = a.n`

// CreateAttempt stores a new attempt in state queued (an empty State is
// taken as queued; any other is an error matching ErrInvalid). Created is
// set to now when zero. Its Run, when not empty, must exist (else
// ErrNotFound); an attempt whose id exists already is an error matching
// ErrConflict.
//
// A retry is made with CreateRetry: an attempt with RetryOf set is an
// error matching ErrInvalid here.
func (s *Store) CreateAttempt(ctx context.Context, a apitype.Attempt) error {
	if a.RetryOf != "" {
		return fmt.Errorf("unable to create attempt %s: %w: a retry (of %s) is made with CreateRetry", a.ID, ErrInvalid, a.RetryOf)
	}
	row, err := newRow(&a)
	if err != nil {
		return fmt.Errorf("unable to create attempt %s: %w", a.ID, err)
	}
	err = s.writeTx(ctx, func(tx *tx) error {
		_, err := insertAttempt(ctx, tx, a, row)
		return err
	})
	if err != nil {
		return fmt.Errorf("unable to create attempt %s: %w", a.ID, err)
	}
	return nil
}

// newRow checks that a is a new attempt (queued; an empty State is taken
// as queued), sets Created to now when zero, and splits it into columns.
func newRow(a *apitype.Attempt) (attemptRow, error) {
	if a.State == "" {
		a.State = apitype.StateQueued
	}
	if a.State != apitype.StateQueued {
		return attemptRow{}, fmt.Errorf("%w: state %q, want %q", ErrInvalid, a.State, apitype.StateQueued)
	}
	if a.Created.IsZero() {
		a.Created = time.Now()
	}
	return toRow(*a)
}

// insertAttempt inserts the new attempt a (split into row) and returns
// its row number; its run, when given, must exist.
func insertAttempt(ctx context.Context, tx *tx, a apitype.Attempt, row attemptRow) (int64, error) {
	if row.run.Valid {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, a.Run).Scan(&one)
		if err != nil {
			return 0, fmt.Errorf("run %s: %w", a.Run, translate(err))
		}
	}
	var n int64
	err := tx.QueryRowContext(ctx,
		`INSERT INTO attempts (`+attemptColumns+`, purpose, host) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING n`,
		a.ID, row.run, a.Task, a.State, row.created, row.data, row.purpose, a.Host).Scan(&n)
	if err != nil {
		return 0, translate(err)
	}
	return n, nil
}

// UpdateAttempt replaces the stored attempt a.ID with a, every field
// (Created too: pass back what GetAttempt returned) but Purpose, which
// is what the attempt was created for and stays so (a.Purpose is not
// read, so an attempt rebuilt from the engine's outcome keeps its
// purpose). An attempt that does not exist, or a Run that does not
// exist, is an error matching ErrNotFound; an unknown State is an error
// matching ErrInvalid. An attempt that becomes done is scored (see
// Finish): a second done attempt of one retry chain is an error matching
// ErrConflict.
func (s *Store) UpdateAttempt(ctx context.Context, a apitype.Attempt) error {
	return s.updateIf(ctx, a, "", "")
}

// GetAttempt returns attempt id, or an error matching ErrNotFound.
func (s *Store) GetAttempt(ctx context.Context, id string) (apitype.Attempt, error) {
	a, err := scanAttempt(s.r.QueryRowContext(ctx, attemptSelect+` WHERE a.id = ?`, id))
	if err != nil {
		return apitype.Attempt{}, fmt.Errorf("unable to get attempt %s: %w", id, err)
	}
	return a, nil
}

// AttemptIDs returns the ids of the attempts whose id starts with
// prefix, newest first, at most limit of them (limit >= 1); an empty
// prefix matches every attempt, so AttemptIDs(ctx, "", 1) is the newest.
func (s *Store) AttemptIDs(ctx context.Context, prefix string, limit int) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("unable to look up attempt ids: %w: limit %d", ErrInvalid, limit)
	}
	// Ids are ASCII: every one that starts with prefix sorts from prefix
	// to prefix+"\x7f", which the id's index answers.
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM attempts WHERE id >= ? AND id < ? ORDER BY created DESC, n DESC LIMIT ?`,
		prefix, prefix+"\x7f", limit)
	if err != nil {
		return nil, fmt.Errorf("unable to look up attempt ids: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("unable to look up attempt ids: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unable to look up attempt ids: %w", err)
	}
	return ids, nil
}

// Filter selects attempts for ListAttempts. Zero fields select all;
// the fields that are set all apply.
type Filter struct {
	Run      string    // attempts of this run
	Task     string    // attempts of this task
	Tasks    []string  // attempts of one of these tasks
	States   []string  // attempts in one of these states
	Agent    string    // attempts whose agent was given as this (Agent.Spec)
	Model    string    // attempts whose agent identity names this model
	Purposes []string  // attempts of one of these purposes
	Since    time.Time // attempts created at or after this
	Until    time.Time // attempts created before this
	IDs      []string  // attempts with one of these ids
	Limit    int       // at most this many; 0 means no limit
}

// where returns f's conditions on the attempts a, joined by AND (empty
// for none), and their arguments. An unknown state or purpose is an
// error matching ErrInvalid.
func (f Filter) where(d dialect) (string, []any, error) {
	var (
		where []string
		args  []any
	)
	in := func(col string, vals []string, valid func(string) bool, what string) error {
		marks := make([]string, len(vals))
		for i, v := range vals {
			if valid != nil && !valid(v) {
				return fmt.Errorf("%w: unknown %s %q", ErrInvalid, what, v)
			}
			marks[i] = "?"
			args = append(args, v)
		}
		where = append(where, col+" IN ("+strings.Join(marks, ", ")+")")
		return nil
	}
	if f.Run != "" {
		where, args = append(where, "a.run = ?"), append(args, f.Run)
	}
	if f.Task != "" {
		where, args = append(where, "a.task = ?"), append(args, f.Task)
	}
	if len(f.Tasks) > 0 {
		if err := in("a.task", f.Tasks, nil, "task"); err != nil {
			return "", nil, err
		}
	}
	if len(f.States) > 0 {
		if err := in("a.state", f.States, func(s string) bool { return states[s] }, "state"); err != nil {
			return "", nil, err
		}
	}
	if len(f.Purposes) > 0 {
		if err := in("a.purpose", f.Purposes, apitype.ValidPurpose, "purpose"); err != nil {
			return "", nil, err
		}
	}
	if len(f.IDs) > 0 {
		if err := in("a.id", f.IDs, nil, "id"); err != nil {
			return "", nil, err
		}
	}
	if f.Agent != "" {
		where, args = append(where, d.jsonText("a.data", "agent", "spec")+" = ?"), append(args, f.Agent)
	}
	if f.Model != "" {
		where, args = append(where, d.jsonText("a.data", "agent", "model")+" = ?"), append(args, f.Model)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "a.created >= ?"), append(args, nanos(f.Since))
	}
	if !f.Until.IsZero() {
		where, args = append(where, "a.created < ?"), append(args, nanos(f.Until))
	}
	return strings.Join(where, " AND "), args, nil
}

// ListAttempts returns the attempts that match f, newest first (by
// Created, then by the order they were created in). A negative Limit or
// an unknown state or purpose is an error matching ErrInvalid.
func (s *Store) ListAttempts(ctx context.Context, f Filter) ([]apitype.Attempt, error) {
	where, args, err := f.where(s.d)
	if err != nil {
		return nil, fmt.Errorf("unable to list attempts: %w", err)
	}
	if f.Limit < 0 {
		return nil, fmt.Errorf("unable to list attempts: %w: negative limit %d", ErrInvalid, f.Limit)
	}
	q := attemptSelect
	if where != "" {
		q += ` WHERE ` + where
	}
	q += ` ORDER BY a.created DESC, a.n DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("unable to list attempts: %w", err)
	}
	defer rows.Close()
	list := []apitype.Attempt{}
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, fmt.Errorf("unable to list attempts: %w", err)
		}
		list = append(list, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unable to list attempts: %w", err)
	}
	return list, nil
}

// CountAttempts returns how many attempts match f, its Limit aside: the
// total of which ListAttempts returns a page.
func (s *Store) CountAttempts(ctx context.Context, f Filter) (int, error) {
	where, args, err := f.where(s.d)
	if err != nil {
		return 0, fmt.Errorf("unable to count attempts: %w", err)
	}
	q := `SELECT COUNT(*) FROM attempts a`
	if where != "" {
		q += ` WHERE ` + where
	}
	var n int
	if err := s.r.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("unable to count attempts: %w", err)
	}
	return n, nil
}

// MarkInFlightInfraError is start-up recovery: every attempt in state
// running (in flight when benchd stopped) gets its ending from end (the
// daemon's one ending: infra_error, its phase kept, where it stopped).
// Queued attempts are left queued. It returns the ids changed, oldest
// first.
func (s *Store) MarkInFlightInfraError(ctx context.Context, end func(*apitype.Attempt)) ([]string, error) {
	return s.MarkHostInFlightInfraError(ctx, end, "")
}

// MarkHostInFlightInfraError is MarkInFlightInfraError of the attempts
// running on host only (every host's when host is empty): on a fleet a
// starting benchd recovers its own, and leaves the others' to their
// hosts and to Rescue.
func (s *Store) MarkHostInFlightInfraError(ctx context.Context, end func(*apitype.Attempt), host string) ([]string, error) {
	ids := []string{}
	err := s.writeTx(ctx, func(tx *tx) error {
		q, args := attemptSelect+` WHERE a.state = ?`, []any{apitype.StateRunning}
		if host != "" {
			q, args = q+` AND a.host = ?`, append(args, host)
		}
		rows, err := tx.QueryContext(ctx, q+` ORDER BY a.created, a.n`, args...)
		if err != nil {
			return err
		}
		var inflight []apitype.Attempt
		for rows.Next() {
			a, err := scanAttempt(rows)
			if err != nil {
				rows.Close()
				return err
			}
			inflight = append(inflight, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, a := range inflight {
			end(&a)
			row, err := toRow(a)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE attempts SET state = ?, data = ? WHERE id = ?`,
				a.State, row.data, a.ID); err != nil {
				return err
			}
			ids = append(ids, a.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("unable to mark in-flight attempts: %w", err)
	}
	if len(ids) > 0 {
		s.log.Warn("in-flight attempts marked infra_error", "attempts", ids)
	}
	return ids, nil
}
