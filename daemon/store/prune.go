package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

// PruneFilter selects the attempts Prune deletes: ended ones (done,
// infra_error or canceled) created before Before, of one of Purposes
// (empty: every purpose), with one of IDs (empty: any id). Queued and
// running attempts are never selected; with KeepReviewed, neither is an
// attempt whose verdict is left to review (outcome review) or that a
// person has reviewed (a dispute decided): the retention of a state
// budget never drops one.
type PruneFilter struct {
	Before       time.Time
	Purposes     []string
	IDs          []string
	KeepReviewed bool
	// DryRun finds what would go, and deletes nothing.
	DryRun bool
}

// Pruned is what Prune deleted (or, DryRun, would delete).
type Pruned struct {
	Attempts []string // ids, oldest first
	Runs     int      // runs left without attempts, deleted
	Blobs    int      // blobs no remaining journal names, deleted
	// BlobBytes is the size of those blobs; RecordBytes that of the
	// journals, transcripts, signatures and requests deleted.
	BlobBytes   int64
	RecordBytes int64
	// KeptForRetries are attempts selected but kept because a kept
	// attempt retries them (its signed statement names them).
	KeptForRetries []string
}

// endedStates are the states of the attempts a prune may delete.
var endedStates = []string{apitype.StateDone, apitype.StateInfraError, apitype.StateCanceled}

// errDryRun rolls back a dry run's transaction.
var errDryRun = errors.New("dry run")

// Prune deletes, in one transaction, the attempts f selects with their
// journals, transcripts, signatures, requests and reviews, the retry
// links to and from them (but an attempt whose retry is kept stays, and
// is listed in KeptForRetries: the retry's signed statement names it
// as the attempt it retries), the runs left without attempts (a run that
// keeps some has the others taken off its list), and the blobs no
// remaining journal names: on SQLite the files in STATE/blobs (removed
// once the transaction is committed: a crash in between leaves files
// nothing names, never a journal naming a missing file), on PostgreSQL
// their rows, and this host's cached copies. A zero Before without IDs
// is an error matching ErrInvalid, as is an unknown purpose.
//
// A journal ingested before the store kept the blobs of each journal
// (SQLite schema version 6) has its blobs listed from its records, and
// recorded, the first time Prune runs.
func (s *Store) Prune(ctx context.Context, f PruneFilter) (Pruned, error) {
	if f.Before.IsZero() && len(f.IDs) == 0 {
		return Pruned{}, fmt.Errorf("unable to prune: %w: no time to prune before", ErrInvalid)
	}
	where, args, err := Filter{States: endedStates, Purposes: f.Purposes, Until: f.Before, IDs: f.IDs}.where(s.d)
	if err != nil {
		return Pruned{}, fmt.Errorf("unable to prune: %w", err)
	}
	if f.KeepReviewed {
		where += " AND COALESCE(" + s.d.jsonText("a.data", "outcome") + ", '') <> 'review'" +
			" AND NOT EXISTS (SELECT 1 FROM reviews r WHERE r.attempt = a.n)"
	}
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	_, pg := s.d.(postgresDialect)
	var p *pruning
	err = s.writeTx(ctx, func(tx *tx) error {
		p = &pruning{s: s, tx: tx, pg: pg, where: where, args: args}
		if err := p.run(ctx); err != nil {
			return err
		}
		if f.DryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		return p.out, nil
	}
	if err != nil {
		return Pruned{}, fmt.Errorf("unable to prune: %w", err)
	}
	return p.out, p.removeFiles()
}

// pruning is one prune's transaction: what it selected, and what it
// found and deleted so far.
type pruning struct {
	s       *Store
	tx      *tx
	pg      bool
	where   string // the attempts selected (Filter.where)
	args    []any
	victims []victim
	out     Pruned
	files   []string // SQLite: the blob files to remove once committed
	local   []string // PostgreSQL: the blobs to drop from this host's cache
}

// victim is an attempt a prune deletes.
type victim struct {
	n   int64
	id  string
	run string
}

// run is the prune in its transaction: select, keep what a kept retry
// names, measure, delete the records, the attempts, their runs and the
// blobs no journal names any more.
func (p *pruning) run(ctx context.Context) error {
	if err := p.selectVictims(ctx); err != nil || len(p.victims) == 0 {
		return err
	}
	if err := p.keepRetried(ctx); err != nil || len(p.victims) == 0 {
		return err
	}
	ns := make([]int64, len(p.victims))
	for i, v := range p.victims {
		ns[i] = v.n
	}
	if !p.pg {
		if err := p.s.listLegacyBlobs(ctx, p.tx); err != nil {
			return err
		}
	}
	shas, err := p.measure(ctx, ns)
	if err != nil {
		return err
	}
	if err := p.deleteRecords(ctx, ns); err != nil {
		return err
	}
	if err := p.deleteRuns(ctx); err != nil {
		return err
	}
	return p.dropBlobs(ctx, shas)
}

// selectVictims lists the attempts selected, oldest first.
func (p *pruning) selectVictims(ctx context.Context) error {
	rows, err := p.tx.QueryContext(ctx, `SELECT a.n, a.id, a.run FROM attempts a WHERE `+p.where+` ORDER BY a.created, a.n`, p.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v victim
		var run *string
		if err := rows.Scan(&v.n, &v.id, &run); err != nil {
			return err
		}
		if run != nil {
			v.run = *run
		}
		p.victims = append(p.victims, v)
	}
	return rows.Err()
}

// keepRetried keeps the victims a kept retry retries: its signed
// statement names the attempt it retries (retry_of), so an attempt goes
// only with its retry.
func (p *pruning) keepRetried(ctx context.Context) error {
	sub := `(SELECT a.n FROM attempts a WHERE ` + p.where + `)`
	retriedBy := map[int64]int64{}
	rows, err := p.tx.QueryContext(ctx, `SELECT r.retry_of, r.attempt FROM retries r WHERE r.retry_of IN `+sub, p.args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var of, by int64
		if err := rows.Scan(&of, &by); err != nil {
			rows.Close()
			return err
		}
		retriedBy[of] = by
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	gone := map[int64]bool{}
	for _, v := range p.victims {
		gone[v.n] = true
	}
	for changed := true; changed; {
		changed = false
		for of, by := range retriedBy {
			if gone[of] && !gone[by] {
				gone[of], changed = false, true
			}
		}
	}
	selected := p.victims
	p.victims = nil
	for _, v := range selected {
		if gone[v.n] {
			p.victims = append(p.victims, v)
		} else {
			p.out.KeptForRetries = append(p.out.KeptForRetries, v.id)
		}
	}
	return nil
}

// measure adds the bytes of the victims' records to RecordBytes and
// returns the blobs their journals name, sorted.
func (p *pruning) measure(ctx context.Context, ns []int64) ([]string, error) {
	named := map[string]bool{}
	err := inBatches(ns, func(in string, args []any) error {
		for _, q := range []string{
			`SELECT coalesce(sum(bytes), 0) FROM journals WHERE attempt IN ` + in,
			`SELECT coalesce(sum(length(stdout) + length(stderr)), 0) FROM transcripts WHERE attempt IN ` + in,
			`SELECT coalesce(sum(length(envelope)), 0) FROM signatures WHERE attempt IN ` + in,
			`SELECT coalesce(sum(length(request)), 0) FROM requests WHERE attempt IN ` + in,
			`SELECT coalesce(sum(length(call) + length(request) + length(response)), 0) FROM model_calls WHERE attempt IN ` + in,
		} {
			var n int64
			if err := p.tx.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
				return err
			}
			p.out.RecordBytes += n
		}
		rows, err := p.tx.QueryContext(ctx, `SELECT DISTINCT sha FROM journal_blobs WHERE attempt IN `+in, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var sha string
			if err := rows.Scan(&sha); err != nil {
				return err
			}
			named[sha] = true
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	shas := make([]string, 0, len(named))
	for sha := range named {
		shas = append(shas, sha)
	}
	slices.Sort(shas)
	return shas, nil
}

// deleteRecords deletes the victims' journal lines and every row that
// refers to them, then the attempts.
func (p *pruning) deleteRecords(ctx context.Context, ns []int64) error {
	for _, v := range p.victims {
		if _, err := p.tx.ExecContext(ctx, `DELETE FROM journal_lines WHERE k BETWEEN ? AND ?`, lineKey(v.n, 0), lineKey(v.n, maxSeq)); err != nil {
			return err
		}
	}
	err := inBatches(ns, func(in string, args []any) error {
		for _, q := range []string{
			`DELETE FROM journal_blobs WHERE attempt IN ` + in,
			`DELETE FROM model_calls WHERE attempt IN ` + in,
			`DELETE FROM journals WHERE attempt IN ` + in,
			`DELETE FROM transcripts WHERE attempt IN ` + in,
			`DELETE FROM signatures WHERE attempt IN ` + in,
			`DELETE FROM requests WHERE attempt IN ` + in,
			`DELETE FROM reviews WHERE attempt IN ` + in,
			`DELETE FROM scored WHERE attempt IN ` + in,
			`DELETE FROM scored WHERE root IN ` + in,
			`DELETE FROM retries WHERE attempt IN ` + in,
			`DELETE FROM retries WHERE retry_of IN ` + in,
		} {
			if _, err := p.tx.ExecContext(ctx, q, args...); err != nil {
				return translate(err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The attempts last: the rows above refer to them.
	return inBatches(ns, func(in string, args []any) error {
		_, err := p.tx.ExecContext(ctx, `DELETE FROM attempts WHERE n IN `+in, args...)
		return translate(err)
	})
}

// deleteRuns lists the victims as pruned and deletes the runs left
// without attempts (pruneRuns).
func (p *pruning) deleteRuns(ctx context.Context) error {
	var runs []runPrune
	at := map[string]int{}
	for _, v := range p.victims {
		p.out.Attempts = append(p.out.Attempts, v.id)
		if v.run == "" {
			continue
		}
		i, ok := at[v.run]
		if !ok {
			i = len(runs)
			at[v.run] = i
			runs = append(runs, runPrune{run: v.run})
		}
		runs[i].gone = append(runs[i].gone, v.id)
	}
	var err error
	p.out.Runs, err = pruneRuns(ctx, p.tx, runs)
	return err
}

// dropBlobs drops the blobs of shas that no journal names any more: on
// PostgreSQL their rows (and, once committed, this host's cached copy),
// on SQLite their files once committed.
func (p *pruning) dropBlobs(ctx context.Context, shas []string) error {
	for _, sha := range shas {
		var named int
		if err := p.tx.QueryRowContext(ctx, `SELECT count(*) FROM journal_blobs WHERE sha = ?`, sha).Scan(&named); err != nil {
			return err
		}
		if named > 0 {
			continue
		}
		if p.pg {
			var size int64
			err := p.tx.QueryRowContext(ctx, `SELECT size FROM blobs WHERE sha = ?`, sha).Scan(&size)
			if err != nil {
				return fmt.Errorf("blob %s: %w", sha, translate(err))
			}
			if _, err := p.tx.ExecContext(ctx, `DELETE FROM blob_chunks WHERE sha = ?`, sha); err != nil {
				return err
			}
			if _, err := p.tx.ExecContext(ctx, `DELETE FROM blobs WHERE sha = ?`, sha); err != nil {
				return err
			}
			p.out.Blobs++
			p.out.BlobBytes += size
			p.local = append(p.local, sha)
			continue
		}
		path, err := p.s.blobs.Path(sha)
		if err != nil {
			return err
		}
		st, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		p.out.Blobs++
		p.out.BlobBytes += st.Size()
		p.files = append(p.files, path)
	}
	return nil
}

// removeFiles removes, once the prune is committed, the blob files no
// journal names and this host's cached copies of the blobs dropped.
func (p *pruning) removeFiles() error {
	var errs []error
	for _, path := range p.files {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, sha := range p.local {
		if path, err := p.s.blobs.Path(sha); err == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	out := p.out
	if len(out.Attempts) > 0 {
		p.s.log.Info("attempts pruned", "attempts", len(out.Attempts), "runs", out.Runs, "blobs", out.Blobs,
			"blob_bytes", out.BlobBytes, "record_bytes", out.RecordBytes)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pruned, but unable to remove blob files: %w", err)
	}
	return nil
}

// pruneBatch bounds the row numbers of one statement (SQLite takes
// 32766 parameters, PostgreSQL 65535).
const pruneBatch = 500

// inBatches calls fn for each batch of at most pruneBatch of ns, with
// "(?, ?, ...)" and the batch as arguments.
func inBatches(ns []int64, fn func(in string, args []any) error) error {
	for len(ns) > 0 {
		b := ns[:min(len(ns), pruneBatch)]
		ns = ns[len(b):]
		args := make([]any, len(b))
		for i, n := range b {
			args[i] = n
		}
		if err := fn("("+strings.TrimSuffix(strings.Repeat("?, ", len(b)), ", ")+")", args); err != nil {
			return err
		}
	}
	return nil
}

// runPrune is a run some of whose attempts are pruned.
type runPrune struct {
	run  string
	gone []string // the ids of its pruned attempts
}

// pruneRuns takes the pruned attempts off their runs' lists and
// deletes the runs left with none. It returns how many it deleted.
func pruneRuns(ctx context.Context, tx *tx, runs []runPrune) (int, error) {
	deleted := 0
	for _, r := range runs {
		run, gone := r.run, r.gone
		var ids []byte
		if err := tx.QueryRowContext(ctx, `SELECT attempts FROM runs WHERE id = ?`, run).Scan(&ids); err != nil {
			return 0, fmt.Errorf("run %s: %w", run, translate(err))
		}
		var list []string
		if err := json.Unmarshal(ids, &list); err != nil {
			return 0, fmt.Errorf("run %s: attempts: %w", run, err)
		}
		list = slices.DeleteFunc(list, func(id string) bool { return slices.Contains(gone, id) })
		// Retries are on the run but not on its list: the run goes
		// only when no attempt refers to it.
		var left int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM attempts WHERE run = ?`, run).Scan(&left); err != nil {
			return 0, err
		}
		if left == 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, run); err != nil {
				return 0, err
			}
			deleted++
			continue
		}
		b, err := json.Marshal(list)
		if err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET attempts = ? WHERE id = ?`, b, run); err != nil {
			return 0, err
		}
	}
	return deleted, nil
}

// listLegacyBlobs records the blobs of each SQLite journal that has
// none recorded (one ingested before schema version 6): every hash its
// records name, and for a mount or unmount record the files of the
// manifest it names.
func (s *Store) listLegacyBlobs(ctx context.Context, tx *tx) error {
	var legacy []int64
	rows, err := tx.QueryContext(ctx, `SELECT j.attempt FROM journals j WHERE NOT EXISTS (SELECT 1 FROM journal_blobs b WHERE b.attempt = j.attempt) ORDER BY j.attempt`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var an int64
		if err := rows.Scan(&an); err != nil {
			rows.Close()
			return err
		}
		legacy = append(legacy, an)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, an := range legacy {
		shas, err := s.journalBlobs(ctx, tx, an)
		if err != nil {
			return fmt.Errorf("unable to list the blobs of journal %d: %w", an, err)
		}
		if err := nameBlobs(ctx, tx, an, shas); err != nil {
			return err
		}
	}
	if len(legacy) > 0 {
		s.log.Info("blobs of journals ingested before schema version 6 listed", "journals", len(legacy))
	}
	return nil
}

// journalBlobs returns the blobs the stored journal of attempt row an
// names, sorted.
func (s *Store) journalBlobs(ctx context.Context, tx *tx, an int64) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT line FROM journal_lines WHERE k BETWEEN ? AND ? ORDER BY k`,
		lineKey(an, 1), lineKey(an, maxSeq))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for rows.Next() {
		var line []byte
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return nil, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var recs []journal.Record
	rd := journal.NewReader(&buf)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	// A manifest blob that is gone names nothing more to keep.
	return journal.NamedBlobs(recs, func(sha string) ([]byte, error) {
		b, err := s.blobs.ReadAll(sha)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return b, err
	})
}
