package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
)

// retryAuto retries the infra-error attempt a, which la ran, if fewer
// than Config.Retries attempts of its chain were retries already. The
// retry runs la's request with la's environment values (kept in memory
// only, so a retry made here has them and one made later need not).
func (s *server) retryAuto(ctx context.Context, log *slog.Logger, a apitype.Attempt, la *liveAttempt) {
	depth, err := s.retryDepth(ctx, a)
	if err != nil {
		log.Warn("unable to follow the attempt's retries", "err", err)
		return
	}
	if depth >= s.cfg.Retries {
		if s.cfg.Retries > 0 {
			log.Info("infra error not retried: its retries are used up", "retries", depth)
		}
		return
	}
	b, err := s.retry(ctx, a, la.req, la.env, true)
	if err != nil {
		log.Warn("unable to retry an infra error", "err", err)
		return
	}
	log.Info("infra error retried", "retry", b.ID, "retry_number", depth+1)
}

// retryDepth is how many retries lead to a: 0 for a first attempt.
func (s *server) retryDepth(ctx context.Context, a apitype.Attempt) (int, error) {
	n := 0
	for a.RetryOf != "" {
		n++
		if n > apitype.MaxAttempts*100 {
			return n, fmt.Errorf("attempt %s: a chain of retries longer than %d", a.ID, n)
		}
		var err error
		if a, err = s.store.GetAttempt(ctx, a.RetryOf); err != nil {
			return n, err
		}
	}
	return n, nil
}

// retry queues a new attempt of a's run that retries a, with request
// spec and environment values env. The store refuses a retry of an
// attempt that is not an infra error, or that was retried already. Once
// benchd stops, a caller's retry is refused as busy; an automatic one
// (auto) of an attempt that ended during the drain is queued, and so
// handed back to the next start like every queued attempt.
func (s *server) retry(ctx context.Context, a apitype.Attempt, spec runs.Request, env []apitype.EnvVar, auto bool) (apitype.Attempt, error) {
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if stopping && !auto {
		return apitype.Attempt{}, fmt.Errorf("not taking new attempts: %w", errBusy)
	}
	request, err := json.Marshal(spec)
	if err != nil {
		return apitype.Attempt{}, err
	}
	b := apitype.Attempt{
		ID: newID("a-"), Run: a.Run, Task: a.Task, Agent: a.Agent, Purpose: a.Purpose,
		State: apitype.StateQueued, Reasons: []apitype.Reason{}, Changeset: []apitype.Change{},
		ExitCode: -1, Created: time.Now().UTC(),
	}
	if err := s.store.CreateRetry(ctx, b, a.ID, request); err != nil {
		return apitype.Attempt{}, err
	}
	b.RetryOf = a.ID
	if err := s.enqueue(ctx, []string{b.ID}, []runs.Request{spec}, env); err != nil {
		s.endUnrun(context.WithoutCancel(ctx), b, apitype.StateInfraError, err.Error())
		return apitype.Attempt{}, err
	}
	return b, nil
}

// retryRun retries each infra-error attempt of run id that no attempt
// retries yet, with the request stored with it. Nothing to retry is an
// error matching errConflict that says why.
func (s *server) retryRun(ctx context.Context, id string) (apitype.Retry, error) {
	run, err := s.store.GetRun(ctx, id)
	if err != nil {
		return apitype.Retry{}, fmt.Errorf("run %s: %w", id, err)
	}
	res := apitype.Retry{Run: run.ID, Retried: []apitype.RetriedPair{}}
	for _, aid := range run.Attempts {
		a, err := s.store.GetAttempt(ctx, aid)
		if err != nil {
			return res, err
		}
		if a.State != apitype.StateInfraError || a.RetriedBy != "" {
			continue
		}
		spec, err := s.storedRequest(ctx, a.ID)
		var why string
		switch {
		case errors.Is(err, store.ErrNotFound):
			why = "its request was not kept (it was made by an older benchd): submit it again"
		case err != nil:
			why = fmt.Sprintf("its request cannot be read: %v", err)
		case len(spec.EnvNames) > 0:
			why = fmt.Sprintf("the values of its environment variables (%s) are kept only while benchd runs the attempt: submit it again", strings.Join(spec.EnvNames, ", "))
		}
		if why == "" {
			r, err := s.retry(ctx, a, spec, nil, false)
			switch {
			case err == nil:
				res.Retried = append(res.Retried, apitype.RetriedPair{Of: a.ID, Attempt: r.ID})
				continue
			case errors.Is(err, errBusy):
				return res, err
			}
			why = err.Error() // e.g. retried by a concurrent request
		}
		res.Skipped = append(res.Skipped, apitype.SkippedRetry{Attempt: a.ID, Why: why})
	}
	if len(res.Retried) == 0 {
		msg := fmt.Sprintf("run %s: nothing to retry: no attempt of it ended in an infra error that is not retried yet", run.ID)
		if len(res.Skipped) > 0 {
			var whys []string
			for _, sk := range res.Skipped {
				whys = append(whys, sk.Attempt+": "+sk.Why)
			}
			msg = fmt.Sprintf("run %s: nothing could be retried: %s", run.ID, strings.Join(whys, "; "))
		}
		return res, fmt.Errorf("%s: %w", msg, errConflict)
	}
	for _, r := range res.Retried {
		s.log.Info("infra error retried on request", "run", run.ID, "attempt", r.Of, "retry", r.Attempt)
	}
	return res, nil
}

func (s *server) handleRetry(w http.ResponseWriter, r *http.Request) error {
	res, err := s.retryRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
