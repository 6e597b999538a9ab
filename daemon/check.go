package daemon

import (
	"context"
	"encoding/json"
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
// and compares each verdict with the one the bundle expects. The answer
// is one TaskCheck; with ?stream=1 it is newline-delimited
// apitype.CheckEvents instead, one as each attempt ends, then the
// TaskCheck. A request that is refused before any attempt is submitted
// gets an error response in either form; in the stream, an error after
// that is an "error" event, as the status was sent with the first line.
func (s *server) handleCheck(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	stream := r.URL.Query().Get("stream")
	if stream != "" && stream != "1" {
		return fmt.Errorf("stream=%q: want 1: %w", stream, errInvalid)
	}
	c, err := s.startCheck(ctx, r.URL.Query().Get("task"))
	if err != nil {
		return err
	}
	if stream == "" {
		out, err := s.awaitCheck(ctx, c, nil)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	send := ndjsonSender(w)
	send(c.start(s.cfg.Concurrency))
	out, err := s.awaitCheck(ctx, c, send)
	if err != nil {
		status, body := httpError(err)
		if status == http.StatusInternalServerError {
			s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		send(apitype.CheckEvent{Type: apitype.CheckError, Error: &body})
		return nil
	}
	send(apitype.CheckEvent{Type: apitype.CheckEnd, Check: &out})
	return nil
}

// ndjsonSender starts a 200 response of newline-delimited JSON on w and
// returns what sends one event of it, flushed.
func ndjsonSender(w http.ResponseWriter) func(apitype.CheckEvent) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flusher, _ := w.(http.Flusher)
	return func(ev apitype.CheckEvent) {
		enc.Encode(ev)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// check is a check under way: its known attempts, each submitted as
// attempt ids[i].
type check struct {
	items []checkItem
	ids   []string
}

// start is the check's first event, naming each attempt.
func (c *check) start(concurrency int) apitype.CheckEvent {
	ev := apitype.CheckEvent{Type: apitype.CheckStart, Concurrency: concurrency}
	for _, it := range c.items {
		ev.Attempts = append(ev.Attempts, it.res)
	}
	return ev
}

// startCheck validates every known attempt of the task of id (every
// task when id is empty), then submits them; when one is refused none
// stays queued.
func (s *server) startCheck(ctx context.Context, id string) (*check, error) {
	list, err := s.checkTasks(id)
	if err != nil {
		return nil, err
	}
	items, err := s.checkItems(list)
	if err != nil {
		return nil, err
	}
	c := &check{items: items}
	for i, it := range items {
		run, err := s.submit(ctx, it.sub)
		if err != nil {
			s.cancelCheck(ctx, c)
			return nil, err
		}
		c.ids = append(c.ids, run.Attempts[0])
		c.items[i].res.Attempt = run.Attempts[0]
	}
	return c, nil
}

// cancelCheck cancels every attempt c submitted.
func (s *server) cancelCheck(ctx context.Context, c *check) {
	for _, id := range c.ids {
		s.cancelAttempt(context.WithoutCancel(ctx), id)
	}
}

// awaitCheck waits for every attempt of c, together, so that each one's
// end is known (and sent, when send is not nil) when it comes, whatever
// the order; on an error it cancels them all.
func (s *server) awaitCheck(ctx context.Context, c *check, send func(apitype.CheckEvent)) (apitype.TaskCheck, error) {
	type ended struct {
		i   int
		a   apitype.Attempt
		err error
	}
	ch := make(chan ended, len(c.ids))
	for i, id := range c.ids {
		go func() {
			a, err := s.await(ctx, id)
			ch <- ended{i, a, err}
		}()
	}
	out := apitype.TaskCheck{OK: true, Results: make([]apitype.CheckResult, len(c.items))}
	for range c.ids {
		e := <-ch
		if e.err != nil {
			s.cancelCheck(ctx, c)
			return apitype.TaskCheck{}, e.err
		}
		res := c.items[e.i].result(e.a)
		out.OK = out.OK && res.OK
		out.Results[e.i] = res
		if send != nil {
			send(apitype.CheckEvent{Type: apitype.CheckAttempt, Result: &res, Ended: &e.a})
		}
	}
	return out, nil
}

// checkTasks are the tasks a check names: the one of id, or every task
// of the store when id is empty.
func (s *server) checkTasks(id string) ([]*tasks.Task, error) {
	if id == "" {
		all, err := tasks.LoadAll(s.cfg.TasksDir)
		if err != nil {
			return nil, fmt.Errorf("unable to load the task store: %w", err)
		}
		return all, nil
	}
	id, err := canonicalTaskID(id)
	if err != nil {
		return nil, err
	}
	t, err := tasks.Find(s.cfg.TasksDir, id)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", id, err)
	}
	return []*tasks.Task{t}, nil
}

// checkItem is one known attempt of a check: what its bundle expects,
// its validated request and its result so far.
type checkItem struct {
	expect tasks.Expect
	sub    submitted
	res    apitype.CheckResult
}

// checkItems validates a run of the reference and of every known attempt
// of each task of list, before any is submitted.
func (s *server) checkItems(list []*tasks.Task) ([]checkItem, error) {
	var items []checkItem
	for _, t := range list {
		known := append([]tasks.Attempt{t.Reference()}, t.Attempts...)
		for _, ka := range known {
			agent := apitype.AgentAttemptPrefix + ka.Name
			if ka.Name == t.Reference().Name {
				agent = apitype.AgentReference
			}
			sub, err := s.validate(apitype.RunRequest{Task: t.ID, Agent: agent, Purpose: apitype.PurposeCheck})
			if err != nil {
				return nil, fmt.Errorf("task %s, %s: %w", t.ID, agent, err)
			}
			res := apitype.CheckResult{Task: t.ID, Agent: agent, WantPass: ka.Expect.Pass, GotCodes: []string{}}
			if !ka.Expect.Pass {
				res.WantCode = ka.Expect.Code
			}
			items = append(items, checkItem{expect: ka.Expect, sub: sub, res: res})
		}
	}
	return items, nil
}

// result is it's result once its attempt a has ended: OK when a is done
// with the pass the bundle expects and, for a failure, its reason code.
func (it checkItem) result(a apitype.Attempt) apitype.CheckResult {
	res := it.res
	res.GotPass = a.Pass
	for _, rs := range a.Reasons {
		res.GotCodes = append(res.GotCodes, rs.Code)
	}
	res.OK = a.State == apitype.StateDone && a.Pass == it.expect.Pass &&
		(it.expect.Pass || slices.Contains(res.GotCodes, it.expect.Code))
	return res
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
	if s.attempts().shared() {
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

// handleRegrade: POST /v1/attempts/{id}/regrade (regrade).
func (s *server) handleRegrade(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	out, err := s.regrade(r.Context(), a)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// regrade grades attempt a's final tree, rebuilt from its stored journal
// and blobs, again, and says whether the verdict is the same.
func (s *server) regrade(ctx context.Context, a apitype.Attempt) (apitype.Regrade, error) {
	if a.State != apitype.StateDone {
		return apitype.Regrade{}, fmt.Errorf("attempt %s is %s: only a graded attempt can be graded again: %w", a.ID, a.State, errConflict)
	}
	task, err := tasks.Find(s.cfg.TasksDir, a.Task)
	if err != nil {
		return apitype.Regrade{}, fmt.Errorf("task %q of attempt %s: %w", a.Task, a.ID, err)
	}
	// The same grader means the same bundle: one that changed since is
	// refused, as verify --regrade and benchd grade --attempt refuse it.
	if sha, err := task.BundleSHA256(); err != nil {
		return apitype.Regrade{}, fmt.Errorf("unable to hash the bundle of %s: %w", a.Task, err)
	} else if a.TaskSHA256 != "" && sha != a.TaskSHA256 {
		return apitype.Regrade{}, fmt.Errorf("attempt %s was graded with bundle %s of %s, but the task store holds bundle %s now: %w", a.ID, a.TaskSHA256, a.Task, sha, errConflict)
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.cfg.StateDir, regradeDir), a.ID+"-")
	if err != nil {
		return apitype.Regrade{}, fmt.Errorf("unable to make a regrade directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	final := filepath.Join(tmp, "final")
	caps, err := s.rebuildFinal(ctx, a.ID, final)
	if err != nil {
		return apitype.Regrade{}, err
	}
	after, err := s.engine.Regrade(ctx, task, a, caps, final)
	if err != nil {
		return apitype.Regrade{}, fmt.Errorf("regrade of attempt %s: %w", a.ID, err)
	}
	// A reviewed attempt is graded again against the grader's verdict,
	// not the reviewer's.
	before := apitype.Verdict{Pass: a.Pass, Reward: a.Reward, Outcome: a.Outcome, Reasons: a.Reasons, Seed: a.GradeSeed}
	if a.Review != nil {
		before = a.Review.Graded
	}
	return apitype.Regrade{Attempt: a.ID, Before: before, After: after, Same: sameVerdict(before, after)}, nil
}

// rebuildFinal makes attempt id's final tree in dst from its stored
// journal and blobs, and returns the caps the journal says it hit. The
// final tree is the unmount record's manifest: the records are streamed
// to find it and the caps, never held (a journal may be 256 MiB).
func (s *server) rebuildFinal(ctx context.Context, id, dst string) (caps []string, err error) {
	finalTree := ""
	if _, err := s.eachStoredRecord(ctx, id, func(r journal.Record) error {
		caps = append(caps, journal.CapsOf([]journal.Record{r})...)
		if r.Op == journal.OpUnmount {
			finalTree = r.SHA256
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if finalTree == "" {
		return nil, fmt.Errorf("the stored journal of attempt %s has no unmount record: no final tree to grade", id)
	}
	blobs, err := s.store.BlobsFor(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := journal.ReplayManifest(blobs, finalTree, dst); err != nil {
		return nil, fmt.Errorf("unable to rebuild the final tree of attempt %s: %w", id, err)
	}
	return caps, nil
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
