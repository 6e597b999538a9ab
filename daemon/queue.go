package daemon

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/tasks"
)

// storedRequest is attempt id's request as the store keeps it, the one
// form kept of it (runs.Request).
func (s *server) storedRequest(ctx context.Context, id string) (runs.Request, error) {
	var req runs.Request
	b, err := s.store.Request(ctx, id)
	if err != nil {
		return req, err
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return req, fmt.Errorf("request of attempt %s: %w", id, err)
	}
	return req, nil
}

// liveAttempt is an attempt queued or running in this process: its
// request, its cancel function and its latest event.
type liveAttempt struct {
	id  string
	req runs.Request
	env []apitype.EnvVar // values: memory only
	// cancel is set (under server.mu) when a worker takes the attempt.
	cancel context.CancelCauseFunc
	// complete, on a fleet, completes the attempt's job in the
	// transaction that records its end (store.Finish.InTx).
	complete func(ctx context.Context, tx *sql.Tx) error

	mu      sync.Mutex
	ev      apitype.Event
	changed chan struct{} // closed and replaced at each change
	final   *apitype.Attempt
	done    chan struct{} // closed when final is set
}

func newLive(id string, req runs.Request, env []apitype.EnvVar) *liveAttempt {
	return &liveAttempt{
		id: id, req: req, env: env,
		ev:      apitype.Event{Attempt: id, State: apitype.StateQueued},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
}

func (l *liveAttempt) publish(ev apitype.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final != nil {
		return
	}
	l.ev = ev
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *liveAttempt) finish(a apitype.Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final != nil {
		return
	}
	l.final = &a
	l.ev = finalEvent(a)
	close(l.changed)
	close(l.done)
}

func (l *liveAttempt) snapshot() (apitype.Event, <-chan struct{}, *apitype.Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ev, l.changed, l.final
}

// finalEvent is the last event of an attempt's stream.
func finalEvent(a apitype.Attempt) apitype.Event {
	return apitype.Event{
		Attempt:     a.ID,
		State:       a.State,
		ElapsedMS:   a.WallMS,
		MemoryBytes: a.PeakMemoryBytes,
		Edits:       a.Edits,
		Denied:      a.Denied,
		Done:        true,
		Final:       &a,
	}
}

// requeue puts the attempts left queued by the last run back on the
// queue, oldest first.
func (s *server) requeue(ctx context.Context) error {
	list, err := s.store.ListAttempts(ctx, store.Filter{States: []string{apitype.StateQueued}})
	if err != nil {
		return fmt.Errorf("unable to list queued attempts: %w", err)
	}
	slices.SortStableFunc(list, func(a, b apitype.Attempt) int { return a.Created.Compare(b.Created) })
	for _, a := range list {
		req, err := s.storedRequest(ctx, a.ID)
		var why string
		switch {
		case err != nil:
			why = fmt.Sprintf("its request was lost: %v", err)
		case len(req.EnvNames) > 0:
			why = fmt.Sprintf("the values of its environment variables (%s) are not kept across a restart of benchd; submit it again", strings.Join(req.EnvNames, ", "))
		}
		if why != "" {
			s.log.Warn("queued attempt cannot go on", "attempt", a.ID, "why", why)
			s.endUnrun(ctx, a, apitype.StateInfraError, why)
			continue
		}
		s.mu.Lock()
		s.live[a.ID] = newLive(a.ID, req, nil)
		s.queue = append(s.queue, a.ID)
		s.mu.Unlock()
		s.log.Info("queued attempt goes on", "attempt", a.ID, "task", req.Task)
	}
	return nil
}

// endUnrun ends an attempt that never ran, as canceled or infra_error
// (why), while it is still queued.
func (s *server) endUnrun(ctx context.Context, a apitype.Attempt, state, why string) apitype.Attempt {
	end(&a, state, why)
	b, err := s.finish(ctx, &closing{a: a, write: s.store.UpdateQueued, infra: infraRequeue})
	if err != nil {
		s.log.Error("unable to record the end of an attempt", "attempt", a.ID, "err", err)
	}
	return b
}

// submitted is a validated RunRequest: n attempts of each of its tasks.
type submitted struct {
	tasks   []submittedTask // in the request's order
	env     []apitype.EnvVar
	n       int
	purpose string
}

// submittedTask is one task of a submitted request: the plan its
// attempts run.
type submittedTask struct {
	task *tasks.Task
	plan *runs.Plan
}

// submit records a validated request as a run of queued attempts and
// queues them, task by task. The queue's limit holds for the whole run:
// it is queued entirely or not at all.
func (s *server) submit(ctx context.Context, req submitted) (apitype.Run, error) {
	total := req.n * len(req.tasks)
	queuedNow, _ := s.counts()
	s.mu.Lock()
	stopping := s.stopping
	waiting := queuedNow + s.reserved
	full := waiting+total > s.cfg.MaxQueued
	if !stopping && !full {
		s.reserved += total
	}
	s.mu.Unlock()
	if stopping {
		return apitype.Run{}, fmt.Errorf("not taking new runs (running attempts drain, queued ones wait for the next start): %w", errBusy)
	}
	if full {
		return apitype.Run{}, fmt.Errorf("%d attempts queued and %d asked for, beyond the limit of %d (benchd --max-queued): %w",
			waiting, total, s.cfg.MaxQueued, errQueueFull)
	}
	queued := false
	defer func() {
		if !queued {
			s.mu.Lock()
			s.reserved -= total
			s.mu.Unlock()
		}
	}()
	now := time.Now().UTC()
	run := apitype.Run{ID: newID("r-"), Agent: req.tasks[0].plan.Request.Agent, Tasks: []string{}, Created: now}
	if len(req.tasks) == 1 {
		run.Task = req.tasks[0].task.ID
	}
	slot := make([]*submittedTask, 0, total) // the task of each attempt
	for i := range req.tasks {
		run.Tasks = append(run.Tasks, req.tasks[i].task.ID)
		for range req.n {
			run.Attempts = append(run.Attempts, newID("a-"))
			slot = append(slot, &req.tasks[i])
		}
	}
	if err := s.store.CreateRun(ctx, run); err != nil {
		return apitype.Run{}, fmt.Errorf("unable to record the run: %w", err)
	}
	for i, id := range run.Attempts {
		st := slot[i]
		request, err := json.Marshal(st.plan.Request)
		if err != nil {
			return apitype.Run{}, err
		}
		a := apitype.Attempt{
			ID: id, Run: run.ID, Task: st.task.ID, Agent: st.plan.Identity,
			State: apitype.StateQueued, Reasons: []apitype.Reason{}, Changeset: []apitype.Change{},
			ExitCode: -1, Created: now, Purpose: req.purpose,
		}
		if err := s.store.CreateAttempt(ctx, a); err != nil {
			return apitype.Run{}, fmt.Errorf("unable to record attempt %s: %w", id, err)
		}
		if err := s.store.SaveRequest(ctx, id, request); err != nil {
			return apitype.Run{}, err
		}
	}
	specs := make([]runs.Request, len(run.Attempts))
	for i := range run.Attempts {
		specs[i] = slot[i].plan.Request
	}
	if err := s.enqueue(ctx, run.Attempts, specs, req.env); err != nil {
		for _, id := range run.Attempts {
			if a, gerr := s.store.GetAttempt(ctx, id); gerr == nil {
				s.endUnrun(context.WithoutCancel(ctx), a, apitype.StateInfraError, err.Error())
			}
		}
		return apitype.Run{}, err
	}
	s.mu.Lock()
	s.reserved -= total
	queued = true
	s.mu.Unlock()
	s.log.Info("run queued", "run", run.ID, "tasks", strings.Join(run.Tasks, ","), "agent", run.Agent, "attempts", len(run.Attempts))
	return run, nil
}

// enqueue puts the new queued attempts ids, ids[i] of request specs[i],
// with environment values env, on the queue: this process's, or the
// fleet's River queue (which reads the requests from the store).
func (s *server) enqueue(ctx context.Context, ids []string, specs []runs.Request, env []apitype.EnvVar) error {
	return s.attempts().add(ctx, ids, specs, env)
}

// isStopping reports whether intake has stopped.
func (s *server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// work serves the queue until shutdown.
func (s *server) work() {
	for {
		la, ctx, ok := s.next()
		if !ok {
			return
		}
		s.execute(ctx, la)
	}
}

// next takes the oldest queued attempt and gives it its context.
func (s *server) next() (*liveAttempt, context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 && !s.stopping {
		s.cond.Wait()
	}
	if s.stopping {
		return nil, nil, false
	}
	id := s.queue[0]
	s.queue = s.queue[1:]
	la := s.live[id]
	ctx, cancel := context.WithCancelCause(s.workCtx)
	la.cancel = cancel
	s.metrics.start()
	return la, ctx, true
}

// execute runs one attempt and records how it ended: start it, run its
// plan, compose its record from the outcome, and finish it (the one
// ending path, ending.go).
func (s *server) execute(ctx context.Context, la *liveAttempt) {
	defer la.cancel(nil)
	bg := context.WithoutCancel(ctx)
	log := s.log.With("attempt", la.id)
	a, ok := s.startAttempt(bg, log, la)
	if !ok {
		return
	}
	ph := s.recordPhases(bg, log, la, a)
	plan, err := s.plan(la)
	var out runs.Outcome
	if err == nil {
		out, err = s.runner(ctx, la.id, plan, ph.progress)
	}
	a.Phase = ph.close()
	c := s.compose(bg, log, la, a, plan, out, err, context.Cause(ctx))
	final, err := s.finish(bg, c)
	if err != nil {
		logUnstored(log, err)
	}
	log.Info("attempt ended", "state", final.State, "pass", final.Pass, "wall_ms", final.WallMS, "infra_error", final.InfraError)
	s.retire(la, final)
}

// startAttempt marks la's attempt running on this host, if it is still
// queued; else it retires la, and ok is false.
func (s *server) startAttempt(ctx context.Context, log *slog.Logger, la *liveAttempt) (a apitype.Attempt, ok bool) {
	a, err := s.store.GetAttempt(ctx, la.id)
	if err != nil {
		log.Error("queued attempt vanished", "err", err)
		s.retire(la, apitype.Attempt{ID: la.id, State: apitype.StateInfraError, InfraError: err.Error()})
		return a, false
	}
	if a.State != apitype.StateQueued {
		s.retire(la, a)
		return a, false
	}
	start := time.Now().UTC()
	a.State, a.Phase, a.Started = apitype.StateRunning, apitype.PhasePrepare, &start
	a.Host, a.HostKeyID = s.cfg.Host, PublicHostKey(s.key).KeyID
	if err := s.store.StartAttempt(ctx, a); err != nil {
		// Canceled, or taken by another host, since it was fetched.
		log.Warn("attempt not started", "err", err)
		if b, gerr := s.store.GetAttempt(ctx, la.id); gerr == nil {
			a = b
		}
		s.retire(la, a)
		return a, false
	}
	la.publish(apitype.Event{Attempt: la.id, State: apitype.StateRunning, Phase: apitype.PhasePrepare})
	log.Info("attempt started", "task", la.req.Task, "agent", la.req.Agent)
	return a, true
}

// phaseRecorder publishes a running attempt's progress and stores its
// phase changes off the attempt's path, latest first, so that recovery
// can say where an attempt stopped.
type phaseRecorder struct {
	la     *liveAttempt
	start  time.Time
	writer sync.WaitGroup
	phases chan string

	mu     sync.Mutex
	last   string
	closed bool
}

// recordPhases starts the phase recorder of running attempt a.
func (s *server) recordPhases(ctx context.Context, log *slog.Logger, la *liveAttempt, a apitype.Attempt) *phaseRecorder {
	r := &phaseRecorder{la: la, start: *a.Started, phases: make(chan string, 1), last: apitype.PhasePrepare}
	r.writer.Go(func() {
		for p := range r.phases {
			rec := a
			rec.Phase = p
			if err := s.store.UpdateRunning(ctx, rec); err != nil {
				log.Warn("unable to record the phase", "phase", p, "err", err)
			}
		}
	})
	return r
}

// progress is the engine's progress callback.
func (r *phaseRecorder) progress(ev apitype.Event) {
	ev.Attempt, ev.State = r.la.id, apitype.StateRunning
	if ev.ElapsedMS == 0 {
		ev.ElapsedMS = time.Since(r.start).Milliseconds()
	}
	r.la.publish(ev)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || ev.Phase == "" || ev.Phase == r.last {
		return
	}
	r.last = ev.Phase
	select {
	case <-r.phases: // replaced by the newer phase
	default:
	}
	r.phases <- ev.Phase
}

// close stops the recorder (a late progress call sends nothing) once
// the stored phase is the last, and returns that phase.
func (r *phaseRecorder) close() string {
	r.mu.Lock()
	close(r.phases)
	r.closed = true
	r.mu.Unlock()
	r.writer.Wait()
	return r.last
}

// compose makes the record of running attempt a from what its run
// returned (out, err, the cause its context was canceled with), sets its
// ending (end) and says how finish stores it: with its journal, its
// model calls and (on a fleet) its job's completion in one transaction.
// The transcript is stored here, scrubbed of the attempt's --env values.
func (s *server) compose(ctx context.Context, log *slog.Logger, la *liveAttempt, a apitype.Attempt, plan *runs.Plan, out runs.Outcome, err, cause error) *closing {
	final := s.outcomeRecord(a, plan, out)
	state, why, infra := endingOf(err, cause)
	end(&final, state, why)
	journalPath := ""
	if out.JournalPath != "" {
		if _, serr := os.Stat(out.JournalPath); serr == nil {
			journalPath = out.JournalPath
			// An attempt cut short has no verdict, but its journal
			// says what it changed.
			if final.State != apitype.StateDone && plan != nil {
				if err := attachJournalFacts(&final, out.JournalPath, plan.Task.Policy); err != nil {
					log.Warn("unable to read the facts of the journal", "err", err)
				}
			}
		}
	}
	scrub := newScrubber(la.env)
	if err := s.saveTranscript(ctx, la.id, out, scrub); err != nil {
		log.Warn("unable to store the transcript", "err", err)
	}
	scrub.attempt(&final)
	// The model calls were scrubbed as the gateway stored them; their
	// sum and cost are the attempt's, signed with it.
	calls := s.attachModelCalls(&final, out.ModelDir)
	c := &closing{a: final, infra: infra, phases: out.Phases}
	if plan != nil && final.TaskSHA256 != "" {
		c.policy = &apitype.TaskPolicy{Allow: plan.Task.Policy.Allow, Ignore: plan.Task.Policy.Ignore}
	}
	// An attempt cut short by this host's shutdown is retried only on a
	// fleet, where another host takes the retry (unless its --env
	// values, in this host's memory only, go with it); a canceled one
	// never.
	handBack := s.attempts().shared() && len(la.env) == 0
	if !errors.Is(cause, errUserCanceled) && (!errors.Is(cause, errShutdown) || handBack) {
		c.retry = la
	}
	c.write = func(ctx context.Context, a apitype.Attempt) error {
		return s.storeEnd(ctx, log, c, a, journalPath, calls, la.complete)
	}
	return c
}

// storeEnd stores the end of attempt a with its journal and model calls
// (store.Finish), then drops its disk, whose tree the journal's blobs
// hold, and its journal file. A journal that cannot be stored leaves a verdict
// without its record: a done attempt is then an infra error.
func (s *server) storeEnd(ctx context.Context, log *slog.Logger, c *closing, a apitype.Attempt, journalPath string, calls []store.ModelCall, inTx func(context.Context, *sql.Tx) error) error {
	err := s.store.Finish(ctx, store.Finish{Attempt: a, JournalPath: journalPath, ModelCalls: calls, InTx: inTx})
	if err == nil && journalPath != "" {
		// The journal's blobs hold the final tree now: the disk goes,
		// and the journal file, which the store holds too.
		dir := runs.AttemptDir(filepath.Dir(journalPath))
		if derr := dir.DropFinalTree(); derr != nil {
			log.Warn("unable to drop the attempt's disk", "err", derr)
		}
		if derr := dir.DropJournal(); derr != nil {
			log.Warn("unable to drop the attempt's journal file", "err", derr)
		}
	}
	if !errors.Is(err, store.ErrJournal) {
		return err
	}
	if a.State == apitype.StateDone {
		end(&a, apitype.StateInfraError, err.Error())
		c.infra = infraJournal
	} else {
		log.Warn("unable to store the journal", "err", err)
	}
	c.a = a
	return s.store.Finish(ctx, store.Finish{Attempt: a, ModelCalls: calls, InTx: inTx})
}

// outcomeRecord is running attempt a's record as the engine's outcome
// has it, with what the store knew of it (ids, times, host, identity)
// and the plan's limits and bundle hash.
func (s *server) outcomeRecord(a apitype.Attempt, plan *runs.Plan, out runs.Outcome) apitype.Attempt {
	final := out.Attempt
	final.ID, final.Run, final.Task, final.Created, final.Started = a.ID, a.Run, a.Task, a.Created, a.Started
	final.Host, final.HostKeyID, final.State, final.Phase, final.Purpose = a.Host, a.HostKeyID, a.State, a.Phase, a.Purpose
	if final.Agent.Spec == "" {
		final.Agent = a.Agent
	}
	if final.Agent.Model == "" {
		final.Agent.Model = a.Agent.Model
	}
	if len(final.Agent.Env) == 0 {
		final.Agent.Env = a.Agent.Env
	}
	if plan != nil {
		final.Limits = plan.Limits()
		if final.TaskSHA256 == "" {
			final.TaskSHA256, _ = bundleSHA256(plan.Task)
		}
	}
	return final
}

// endingOf is how an attempt whose run returned err, its context
// canceled with cause, ended, and an infra error's reason for the
// metrics.
func endingOf(err, cause error) (state, why, infra string) {
	switch {
	case err == nil:
		return apitype.StateDone, "", ""
	case errors.Is(cause, errUserCanceled):
		return apitype.StateCanceled, "", ""
	case errors.Is(cause, errShutdown):
		return apitype.StateInfraError, fmt.Sprintf("%v: %v", errShutdown, err), infraShutdown
	}
	return apitype.StateInfraError, err.Error(), infraEngine
}

// plan resolves la's request, as the store keeps it, with its
// environment values, on this host (runs.Engine.Plan): the task's bundle
// found again, the agent resolved here.
func (s *server) plan(la *liveAttempt) (*runs.Plan, error) {
	task, err := tasks.Find(s.cfg.TasksDir, la.req.Task)
	if err != nil {
		return nil, err
	}
	spec, err := la.req.Spec(task, la.env)
	if err != nil {
		return nil, err
	}
	return s.engine.Plan(spec)
}

// retire removes la from the live attempts and ends its event streams.
func (s *server) retire(la *liveAttempt, final apitype.Attempt) {
	s.mu.Lock()
	delete(s.live, la.id)
	s.mu.Unlock()
	la.finish(final)
	s.secrets.remove(la.id)
}

// cancel ends a queued or running attempt. A queued one is canceled at
// once; a running one is stopped and cancel waits until it has ended.
func (s *server) cancelAttempt(ctx context.Context, id string) (apitype.Attempt, error) {
	s.mu.Lock()
	la := s.live[id]
	queued := false
	if la != nil {
		if i := slices.Index(s.queue, id); i >= 0 {
			s.queue = slices.Delete(s.queue, i, i+1)
			delete(s.live, id)
			queued = true
		} else if la.cancel != nil {
			la.cancel(errUserCanceled)
		}
	}
	s.mu.Unlock()

	if la == nil {
		a, err := s.store.GetAttempt(ctx, id)
		if err != nil {
			return apitype.Attempt{}, fmt.Errorf("attempt %s: %w", id, err)
		}
		if s.attempts().shared() && (a.State == apitype.StateQueued || a.State == apitype.StateRunning) {
			return s.cancelElsewhere(ctx, a)
		}
		return apitype.Attempt{}, fmt.Errorf("attempt %s already ended (%s): %w", id, a.State, errConflict)
	}
	if queued {
		a, err := s.store.GetAttempt(ctx, id)
		if err != nil {
			return apitype.Attempt{}, fmt.Errorf("attempt %s: %w", id, err)
		}
		a = s.endUnrun(context.WithoutCancel(ctx), a, apitype.StateCanceled, "")
		la.finish(a)
		s.secrets.remove(id)
		s.log.Info("queued attempt canceled", "attempt", id)
		return a, nil
	}
	select {
	case <-la.done:
		_, _, final := la.snapshot()
		return *final, nil
	case <-ctx.Done():
		return apitype.Attempt{}, ctx.Err()
	}
}

// cancelElsewhere cancels attempt a of the fleet that this host does
// not run: a queued one at once (unless a host takes it first), a
// running one by asking its host, which learns of it at its next
// heartbeat. It waits until the attempt has ended.
func (s *server) cancelElsewhere(ctx context.Context, a apitype.Attempt) (apitype.Attempt, error) {
	if a.State == apitype.StateQueued {
		b := a
		end(&b, apitype.StateCanceled, "")
		b, err := s.finish(context.WithoutCancel(ctx), &closing{a: b, write: s.store.UpdateQueued})
		if err == nil {
			s.log.Info("queued attempt canceled", "attempt", a.ID)
			return b, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return apitype.Attempt{}, err
		}
		// A host took it meanwhile: ask that host.
	}
	if err := s.store.RequestCancel(ctx, a.ID); err != nil && !errors.Is(err, store.ErrConflict) {
		return apitype.Attempt{}, err
	}
	s.log.Info("cancel asked of the attempt's host", "attempt", a.ID)
	return s.awaitStored(ctx, a.ID)
}

// awaitStored waits, polling the store, until attempt id has ended.
func (s *server) awaitStored(ctx context.Context, id string) (apitype.Attempt, error) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		a, err := s.store.GetAttempt(ctx, id)
		if err != nil {
			return a, fmt.Errorf("attempt %s: %w", id, err)
		}
		if a.State != apitype.StateQueued && a.State != apitype.StateRunning {
			return a, nil
		}
		select {
		case <-ctx.Done():
			return apitype.Attempt{}, ctx.Err()
		case <-s.closing:
			return apitype.Attempt{}, fmt.Errorf("attempt %s did not end: %w", id, errBusy)
		case <-t.C:
		}
	}
}

// counts returns how many attempts are queued (on a fleet, in the whole
// fleet) and running here.
func (s *server) counts() (queued, running int) {
	if s.attempts().shared() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n, err := s.store.CountStates(ctx)
		cancel()
		if err == nil {
			queued = n[apitype.StateQueued]
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, la := range s.live {
		if la.cancel != nil {
			running++
		}
	}
	return queued + len(s.queue), running
}

// liveOf returns the live attempt id, or nil.
func (s *server) liveOf(id string) *liveAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id]
}
