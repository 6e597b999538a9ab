package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/fsmon/journal"
	"benchd.dev/tasks"
)

// sealedAtStart is the cause in the interrupted record of a journal that
// start-up recovery sealed.
const sealedAtStart = "benchd stopped while the attempt ran (killed, crashed or lost power); the journal was sealed at the next start"

// recoverJournals is the journal half of start-up recovery. Every
// attempt work directory (STATE/attempts/ID) with a journal file the
// store does not hold belongs to an attempt whose benchd died before it
// stored the journal (kill -9, a crash, power loss, or a shutdown that
// gave up waiting for it). Its journal is sealed (journal.Recover: cut
// at the last complete record, an interrupted record, the unmount of the
// tree the records account for) and stored, and the attempt gets its
// journal head, changeset and counts from it, its transcript, and the
// model calls its HTTP gateways recorded with their sum. It
// runs after in-flight attempts were marked infra_error and before any
// attempt runs; an attempt still queued or running is left alone. A
// journal that cannot be sealed is logged and left on disk; the
// transcript and model calls beside it are stored all the same. It returns
// the attempts it updated: their statements must be signed again.
func recoverJournals(ctx context.Context, st *store.Store, cfg Config, log *slog.Logger) (updated []string) {
	dirs, err := os.ReadDir(runs.AttemptsDir(cfg.StateDir))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			log.Warn("unable to look for unsealed journals", "err", err)
		}
		return nil
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		id := d.Name()
		jpath := runs.AttemptDirOf(cfg.StateDir, id).Journal()
		if _, err := os.Stat(jpath); err != nil {
			continue
		}
		if _, err := st.Journal(ctx, id); !errors.Is(err, store.ErrNotFound) {
			continue // stored already (or the store cannot say: leave it)
		}
		a, err := st.GetAttempt(ctx, id)
		if err != nil || a.State == apitype.StateQueued || a.State == apitype.StateRunning {
			continue
		}
		if err := sealLeftJournal(ctx, st, cfg, a, jpath, log); err != nil {
			log.Error("unable to seal the journal of an interrupted attempt", "attempt", id, "err", err)
			// What else it left is kept all the same.
			if keepLeftOutput(ctx, st, cfg, &a, runs.AttemptDirOf(cfg.StateDir, id), log) {
				if err := st.UpdateAttempt(ctx, a); err != nil {
					log.Error("unable to store the model calls' sum of an interrupted attempt", "attempt", id, "err", err)
					continue
				}
				updated = append(updated, id)
			}
			continue
		}
		updated = append(updated, id)
	}
	return updated
}

// sealLeftJournal seals, stores and attaches the journal jpath of the
// ended attempt a.
func sealLeftJournal(ctx context.Context, st *store.Store, cfg Config, a apitype.Attempt, jpath string, log *slog.Logger) error {
	// The backing directory is benchd's: only the view wrote it, and
	// Cleanup has ended every process that used the view and unmounted
	// the attempt's disk, which is mounted again, read-only, to read it.
	dir := runs.AttemptDir(filepath.Dir(jpath))
	backing := dir.Backing()
	unmount, err := runs.MountDiskReadOnly(dir.Path())
	if err != nil {
		return err
	}
	res, err := journal.Recover(jpath, backing, sealedAtStart, time.Now())
	if uerr := unmount(); err == nil && uerr != nil {
		return uerr
	}
	if err != nil {
		return err
	}
	head, _, err := st.IngestJournal(ctx, a.ID, jpath)
	if err != nil {
		return err
	}
	if err := dir.DropFinalTree(); err != nil {
		log.Warn("unable to drop the disk of an interrupted attempt", "attempt", a.ID, "err", err)
	}
	a.JournalHead = head
	var pol journal.Policy
	if t, err := tasks.Find(cfg.TasksDir, a.Task); err == nil {
		pol = t.Policy
	}
	if err := attachJournalFacts(&a, jpath, pol); err != nil {
		log.Warn("unable to read the facts of a sealed journal", "attempt", a.ID, "err", err)
	}
	if err := dir.DropJournal(); err != nil {
		log.Warn("unable to drop the journal file of an interrupted attempt", "attempt", a.ID, "err", err)
	}
	keepLeftOutput(ctx, st, cfg, &a, dir, log)
	if err := st.UpdateAttempt(ctx, a); err != nil {
		return err
	}
	log.Warn("journal of an interrupted attempt sealed and stored", "attempt", a.ID,
		"records_kept", res.Kept, "bytes_cut", res.Cut, "cut_because", res.Why, "observed_at_recovery", res.Observed, "sealed_before", res.Sealed)
	return nil
}

// keepLeftOutput stores what interrupted attempt a left in its work
// directory dir beside its journal, unless the store holds it already:
// its transcript, and the calls its HTTP gateways recorded (those in
// progress at the crash ending as cut short) with their sum in a.Model.
// It reports whether it set a.Model. Failures are logged: one lost
// piece does not keep the others from the store.
func keepLeftOutput(ctx context.Context, st *store.Store, cfg Config, a *apitype.Attempt, dir runs.AttemptDir, log *slog.Logger) (model bool) {
	if _, err := st.Transcript(ctx, a.ID); errors.Is(err, store.ErrNotFound) {
		stdout, stderr := dir.Stdout(), dir.Stderr()
		if err := st.SaveTranscriptFiles(ctx, a.ID, stdout, stderr, capped(stdout), capped(stderr)); err != nil {
			log.Warn("unable to store the transcript of an interrupted attempt", "attempt", a.ID, "err", err)
		}
	}
	stored, err := st.ModelCalls(ctx, a.ID)
	if err != nil || len(stored) > 0 {
		return false
	}
	recs, usage, err := loadModelCalls(dir.Path(), cfg.Prices)
	if err != nil {
		log.Warn("unable to read the model calls of an interrupted attempt", "attempt", a.ID, "err", err)
		return false
	}
	if len(recs) == 0 {
		return false
	}
	if err := st.SaveModelCalls(ctx, a.ID, recs); err != nil {
		log.Warn("unable to store the model calls of an interrupted attempt", "attempt", a.ID, "err", err)
		return false
	}
	a.Model = usage
	return true
}

// attachJournalFacts sets what the sealed journal at jpath says of an
// attempt that ended without a verdict: its changeset (under the task's
// policy pol) when the attempt has none, and its edit and denied counts.
func attachJournalFacts(a *apitype.Attempt, jpath string, pol journal.Policy) error {
	recs, err := journal.Read(jpath)
	if err != nil {
		return err
	}
	cs, err := journal.ChangesetOf(recs, &journal.Blobs{Dir: journal.BlobsDir(jpath)}, pol)
	if err != nil {
		return fmt.Errorf("changeset: %w", err)
	}
	if len(a.Changeset) == 0 {
		a.Changeset = append([]apitype.Change{}, cs...)
	}
	c := journal.CountsOf(recs)
	a.Edits, a.Denied = c.Edits, c.Denied
	return nil
}
