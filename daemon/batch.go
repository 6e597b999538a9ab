package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
)

// A run is one request's attempts: of one task, or of several (a batch,
// apitype.RunRequest.Tasks). What is true of the run as a whole (where
// its attempts are, canceling all of them) is here.

// runSlots returns run id and its slots: one attempt per first attempt
// of the run, in the run's order, followed along its retries to the
// last (the attempt whose verdict counts). An attempt whose end is
// stored but that benchd is still ending shows as running, in phase
// store: its retry may be on its way.
func (s *server) runSlots(ctx context.Context, id string) (apitype.Run, []apitype.Attempt, error) {
	run, err := s.store.GetRun(ctx, id)
	if err != nil {
		return run, nil, fmt.Errorf("run %s: %w", id, err)
	}
	list, err := s.store.ListAttempts(ctx, store.Filter{Run: id})
	if err != nil {
		return run, nil, fmt.Errorf("attempts of run %s: %w", id, err)
	}
	byID := make(map[string]apitype.Attempt, len(list))
	for _, a := range list {
		byID[a.ID] = s.withLive(a)
	}
	var slots []apitype.Attempt
	for _, aid := range run.Attempts {
		a, ok := byID[aid]
		if !ok {
			return run, nil, fmt.Errorf("run %s: attempt %s is missing", id, aid)
		}
		if a.RetryOf != "" {
			continue // a retry: the slot of what it retries follows it
		}
		for seen := 0; a.RetriedBy != "" && seen <= len(list); seen++ {
			next, ok := byID[a.RetriedBy]
			if !ok {
				break
			}
			a = next
		}
		if ended(a) && s.liveOf(a.ID) != nil {
			// Its end is stored, but benchd is still ending it (signing
			// it, queueing the retry of an infra error): not ended yet.
			a.State, a.Phase = apitype.StateRunning, apitype.PhaseStore
		}
		slots = append(slots, a)
	}
	return run, slots, nil
}

// ended reports whether an attempt has ended.
func ended(a apitype.Attempt) bool {
	return a.State != apitype.StateQueued && a.State != apitype.StateRunning
}

func (s *server) handleRunStatus(w http.ResponseWriter, r *http.Request) error {
	run, slots, err := s.runSlots(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	st := apitype.RunStatus{Run: run, Attempts: slots, Ended: true, Concurrency: s.cfg.Concurrency}
	if st.Attempts == nil {
		st.Attempts = []apitype.Attempt{}
	}
	for _, a := range slots {
		if !ended(a) {
			st.Ended = false
		}
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// cancelRounds bounds how often cancelRun looks again for attempts of
// the run to cancel: a running attempt that ends in an infra error as it
// is canceled may have queued its retry.
const cancelRounds = 3

// cancelRun cancels every queued and running attempt of run id: the
// queued ones first, so that none of them starts meanwhile, then the
// running ones together, waiting until each has ended. An attempt that
// ends by itself meanwhile is left out. A run with nothing to cancel is
// a conflict.
func (s *server) cancelRun(ctx context.Context, id string) (apitype.RunCancel, error) {
	out := apitype.RunCancel{Run: id, Canceled: []apitype.Attempt{}}
	if _, err := s.store.GetRun(ctx, id); err != nil {
		return out, fmt.Errorf("run %s: %w", id, err)
	}
	done := map[string]bool{}
	for range cancelRounds {
		list, err := s.store.ListAttempts(ctx, store.Filter{Run: id, States: []string{apitype.StateQueued, apitype.StateRunning}})
		if err != nil {
			return out, fmt.Errorf("attempts of run %s: %w", id, err)
		}
		list = slices.DeleteFunc(list, func(a apitype.Attempt) bool { return done[a.ID] })
		if len(list) == 0 {
			break
		}
		// Queued first (oldest first), then the running.
		slices.SortStableFunc(list, func(a, b apitype.Attempt) int {
			qa, qb := a.State == apitype.StateQueued, b.State == apitype.StateQueued
			switch {
			case qa && !qb:
				return -1
			case qb && !qa:
				return 1
			}
			return a.Created.Compare(b.Created)
		})
		var (
			mu      sync.Mutex
			wg      sync.WaitGroup
			firstEr error
		)
		for _, a := range list {
			done[a.ID] = true
			one := func() {
				b, err := s.cancelAttempt(ctx, a.ID)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					out.Canceled = append(out.Canceled, b)
				case errors.Is(err, errConflict):
					// It ended by itself meanwhile.
				case firstEr == nil:
					firstEr = err
				}
			}
			if a.State == apitype.StateQueued {
				one()
			} else {
				wg.Go(one)
			}
		}
		wg.Wait()
		if firstEr != nil {
			return out, firstEr
		}
	}
	if len(out.Canceled) == 0 {
		return out, fmt.Errorf("run %s has no queued or running attempt: %w", id, errConflict)
	}
	s.log.Info("run canceled", "run", id, "attempts", len(out.Canceled))
	return out, nil
}

func (s *server) handleCancelRun(w http.ResponseWriter, r *http.Request) error {
	out, err := s.cancelRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
