package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/tasks"
)

// handleCheck runs the reference and every known attempt of one task (or
// of every task) through the whole pipeline, as ordinary queued attempts,
// and compares each verdict with the one the bundle expects.
func (s *server) handleCheck(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	var list []*tasks.Task
	if id := r.URL.Query().Get("task"); id != "" {
		id, err := canonicalTaskID(id)
		if err != nil {
			return err
		}
		t, err := tasks.Find(s.cfg.TasksDir, id)
		if err != nil {
			return fmt.Errorf("task %q: %w", id, err)
		}
		list = []*tasks.Task{t}
	} else {
		all, err := tasks.LoadAll(s.cfg.TasksDir)
		if err != nil {
			return fmt.Errorf("unable to load the task store: %w", err)
		}
		list = all
	}

	type item struct {
		task   string
		agent  string
		expect tasks.Expect
		sub    submitted
	}
	var items []item
	for _, t := range list {
		known := append([]tasks.Attempt{t.Reference()}, t.Attempts...)
		for _, ka := range known {
			agent := apitype.AgentAttemptPrefix + ka.Name
			if ka.Name == t.Reference().Name {
				agent = apitype.AgentReference
			}
			sub, err := s.validate(apitype.RunRequest{Task: t.ID, Agent: agent, Purpose: apitype.PurposeCheck})
			if err != nil {
				return fmt.Errorf("task %s, %s: %w", t.ID, agent, err)
			}
			items = append(items, item{task: t.ID, agent: agent, expect: ka.Expect, sub: sub})
		}
	}
	var ids []string
	cancelAll := func() {
		for _, id := range ids {
			s.cancelAttempt(context.WithoutCancel(ctx), id)
		}
	}
	for _, it := range items {
		run, err := s.submit(ctx, it.sub)
		if err != nil {
			cancelAll()
			return err
		}
		ids = append(ids, run.Attempts[0])
	}
	out := apitype.TaskCheck{OK: true, Results: make([]apitype.CheckResult, 0, len(items))}
	for i, it := range items {
		a, err := s.await(ctx, ids[i])
		if err != nil {
			cancelAll()
			return err
		}
		res := apitype.CheckResult{
			Task: it.task, Agent: it.agent, Attempt: a.ID,
			WantPass: it.expect.Pass, GotPass: a.Pass, GotCodes: []string{},
		}
		if !it.expect.Pass {
			res.WantCode = it.expect.Code
		}
		for _, rs := range a.Reasons {
			res.GotCodes = append(res.GotCodes, rs.Code)
		}
		res.OK = a.State == apitype.StateDone && a.Pass == it.expect.Pass &&
			(it.expect.Pass || slices.Contains(res.GotCodes, it.expect.Code))
		if !res.OK {
			out.OK = false
		}
		out.Results = append(out.Results, res)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// await waits until attempt id has ended and returns it.
func (s *server) await(ctx context.Context, id string) (apitype.Attempt, error) {
	if la := s.liveOf(id); la != nil {
		select {
		case <-la.done:
		case <-ctx.Done():
			return apitype.Attempt{}, ctx.Err()
		case <-s.closing:
			return apitype.Attempt{}, fmt.Errorf("attempt %s did not end: %w", id, errBusy)
		}
	}
	if s.fleet != nil {
		return s.awaitStored(ctx, id) // it may run on another host
	}
	a, err := s.store.GetAttempt(ctx, id)
	if err != nil {
		return a, fmt.Errorf("attempt %s: %w", id, err)
	}
	if a.State == apitype.StateQueued || a.State == apitype.StateRunning {
		return a, fmt.Errorf("attempt %s did not end: %w", id, errBusy)
	}
	return a, nil
}

// handleRegrade grades the attempt's final tree, rebuilt from its stored
// journal and blobs, again, and says whether the verdict is the same.
func (s *server) handleRegrade(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	if a.State != apitype.StateDone {
		return fmt.Errorf("attempt %s is %s: only a graded attempt can be graded again: %w", a.ID, a.State, errConflict)
	}
	task, err := tasks.Find(s.cfg.TasksDir, a.Task)
	if err != nil {
		return fmt.Errorf("task %q of attempt %s: %w", a.Task, a.ID, err)
	}
	// The same grader means the same bundle: one that changed since is
	// refused, as verify --regrade and benchd grade --attempt refuse it.
	if sha, err := task.BundleSHA256(); err != nil {
		return fmt.Errorf("unable to hash the bundle of %s: %w", a.Task, err)
	} else if a.TaskSHA256 != "" && sha != a.TaskSHA256 {
		return fmt.Errorf("attempt %s was graded with bundle %s of %s, but the task store holds bundle %s now: %w", a.ID, a.TaskSHA256, a.Task, sha, errConflict)
	}
	_, recs, err := s.storedJournal(ctx, a.ID)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.cfg.StateDir, regradeDir), a.ID+"-")
	if err != nil {
		return fmt.Errorf("unable to make a regrade directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	final := filepath.Join(tmp, "final")
	blobs, err := s.store.BlobsFor(ctx, a.ID)
	if err != nil {
		return err
	}
	if err := journal.Replay(recs, blobs, ^uint64(0), final); err != nil {
		return fmt.Errorf("unable to rebuild the final tree of attempt %s: %w", a.ID, err)
	}
	after, err := s.engine.Regrade(ctx, task, a, final)
	if err != nil {
		return fmt.Errorf("regrade of attempt %s: %w", a.ID, err)
	}
	// A reviewed attempt is graded again against the grader's verdict,
	// not the reviewer's.
	before := apitype.Verdict{Pass: a.Pass, Reward: a.Reward, Outcome: a.Outcome, Reasons: a.Reasons, Seed: a.GradeSeed}
	if a.Review != nil {
		before = a.Review.Graded
	}
	if after.Reasons == nil {
		after.Reasons = []apitype.Reason{}
	}
	writeJSON(w, http.StatusOK, apitype.Regrade{
		Attempt: a.ID,
		Before:  before,
		After:   after,
		Same:    sameVerdict(before, after),
	})
	return nil
}

// sameVerdict compares pass, reward and the set of reason codes (the
// messages may carry timings).
func sameVerdict(a, b apitype.Verdict) bool {
	if a.Pass != b.Pass || a.Reward != b.Reward {
		return false
	}
	codes := func(v apitype.Verdict) []string {
		var c []string
		for _, r := range v.Reasons {
			c = append(c, r.Code)
		}
		slices.Sort(c)
		return slices.Compact(c)
	}
	return slices.Equal(codes(a), codes(b))
}
