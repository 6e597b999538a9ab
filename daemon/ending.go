package daemon

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
)

// end sets attempt a's ending: the one place an attempt's end is written
// (docs/design.md, "Endings"), whichever site ends it. It is done,
// canceled or infra_error (why is then its InfraError); it finished now,
// by this benchd's Version. An attempt that did not end done has no
// verdict (pass false, reward 0) and keeps the phase it was in, where it
// stopped; a done one, or one that never ran, has none.
func end(a *apitype.Attempt, state, why string) {
	now := time.Now().UTC()
	if state == apitype.StateDone || a.State == apitype.StateQueued {
		a.Phase = ""
	}
	a.State, a.Finished, a.BenchdVersion = state, &now, Version
	a.InfraError = ""
	if state != apitype.StateDone {
		a.Pass, a.Reward = false, 0
	}
	if state == apitype.StateInfraError {
		a.InfraError = why
	}
	if a.Reasons == nil {
		a.Reasons = []apitype.Reason{}
	}
	if a.Changeset == nil {
		a.Changeset = []apitype.Change{}
	}
}

// ender is end as a function of the attempt, for the store's own
// endings (store.Rescue, MarkHostInFlightInfraError).
func ender(state, why string) func(*apitype.Attempt) {
	return func(a *apitype.Attempt) { end(a, state, why) }
}

// closing is one ended attempt on its way to the store: its record, with
// its ending set (end), how its site writes it, and what follows.
type closing struct {
	a apitype.Attempt
	// write stores a: its site's write, which holds only while the
	// attempt is still as the site found it (queued, running here).
	write func(ctx context.Context, a apitype.Attempt) error
	// infra is the metrics' reason of an infra error.
	infra string
	// policy is the edit policy signed with it; nil: the task's now.
	policy *apitype.TaskPolicy
	// phases are the times of its phases, for the metrics of a grade.
	phases []runs.PhaseTime
	// retry, when set, is the live attempt whose request an infra error
	// is retried with (at most Config.Retries in a chain).
	retry *liveAttempt
}

// finish is the one path of an ended attempt after its site set its
// ending: store it, sign it, count it, retry an infra error once (when
// c.retry says so), and keep the state budget. It returns the attempt as stored, or, when it
// could not be stored, as the store has it and the error.
func (s *server) finish(ctx context.Context, c *closing) (apitype.Attempt, error) {
	log := s.log.With("attempt", c.a.ID)
	if err := c.write(ctx, c.a); err != nil {
		if b, gerr := s.store.GetAttempt(ctx, c.a.ID); gerr == nil {
			return b, err
		}
		return c.a, err
	}
	a, err := s.signAttempt(ctx, c.a.ID, c.policy)
	if err != nil {
		log.Error("unable to sign the attempt's statement", "err", err)
		a = c.a
	}
	s.metrics.end(a, c.infra)
	if a.State == apitype.StateDone {
		s.metrics.graded(c.phases)
	}
	if c.retry != nil && a.State == apitype.StateInfraError {
		s.retryAuto(ctx, log, a, c.retry)
		if b, err := s.store.GetAttempt(ctx, a.ID); err == nil {
			a = b // with retried_by
		}
	}
	s.keepStateBudget(ctx)
	return a, nil
}

// logUnstored logs an ending finish could not store.
func logUnstored(log *slog.Logger, err error) {
	if errors.Is(err, store.ErrConflict) {
		log.Error("the end of the attempt is not recorded: the fleet gave it up, or it is scored already", "err", err)
		return
	}
	log.Error("unable to record the end of an attempt", "err", err)
}
