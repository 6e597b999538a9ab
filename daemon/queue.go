package daemon

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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

// endUnrun ends an attempt that never ran, as canceled or infra_error.
func (s *server) endUnrun(ctx context.Context, a apitype.Attempt, state, why string) apitype.Attempt {
	now := time.Now().UTC()
	a.State, a.Phase, a.Pass, a.Reward, a.Finished, a.BenchdVersion = state, "", false, 0, &now, Version
	if state == apitype.StateInfraError {
		a.InfraError = why
	}
	stored := false
	if err := s.store.UpdateQueued(ctx, a); err != nil {
		s.log.Error("unable to record the end of an attempt", "attempt", a.ID, "err", err)
	} else {
		stored = true
		s.sign(ctx, a.ID, nil)
	}
	if b, err := s.store.GetAttempt(ctx, a.ID); err == nil {
		a = b
	}
	if stored {
		s.metrics.end(a, infraRequeue)
	}
	return a
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
	if s.fleet != nil {
		return s.fleet.enqueue(ctx, ids, env)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range ids {
		s.live[id] = newLive(id, specs[i], env)
		s.secrets.add(id, env)
		s.queue = append(s.queue, id)
	}
	s.cond.Broadcast()
	return nil
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

// execute runs one attempt and records how it ended.
func (s *server) execute(ctx context.Context, la *liveAttempt) {
	defer la.cancel(nil)
	bg := context.WithoutCancel(ctx)
	log := s.log.With("attempt", la.id)
	a, err := s.store.GetAttempt(bg, la.id)
	if err != nil {
		log.Error("queued attempt vanished", "err", err)
		s.retire(la, apitype.Attempt{ID: la.id, State: apitype.StateInfraError, InfraError: err.Error()})
		return
	}
	if a.State != apitype.StateQueued {
		s.retire(la, a)
		return
	}
	start := time.Now().UTC()
	a.State, a.Phase, a.Started = apitype.StateRunning, apitype.PhasePrepare, &start
	a.Host, a.HostKeyID = s.cfg.Host, PublicHostKey(s.key).KeyID
	if err := s.store.StartAttempt(bg, a); err != nil {
		// Canceled, or taken by another host, since it was fetched.
		log.Warn("attempt not started", "err", err)
		if b, gerr := s.store.GetAttempt(bg, la.id); gerr == nil {
			a = b
		}
		s.retire(la, a)
		return
	}
	la.publish(apitype.Event{Attempt: la.id, State: apitype.StateRunning, Phase: apitype.PhasePrepare})
	log.Info("attempt started", "task", la.req.Task, "agent", la.req.Agent)

	// Phase changes are stored off the attempt's path, latest first, so
	// that recovery can say where an attempt stopped.
	phases := make(chan string, 1)
	var phaseWriter sync.WaitGroup
	phaseWriter.Go(func() {
		for p := range phases {
			rec := a
			rec.Phase = p
			if err := s.store.UpdateRunning(bg, rec); err != nil {
				log.Warn("unable to record the phase", "phase", p, "err", err)
			}
		}
	})
	var phaseMu sync.Mutex
	lastPhase, phasesClosed := apitype.PhasePrepare, false
	progress := func(ev apitype.Event) {
		ev.Attempt, ev.State = la.id, apitype.StateRunning
		if ev.ElapsedMS == 0 {
			ev.ElapsedMS = time.Since(start).Milliseconds()
		}
		la.publish(ev)
		phaseMu.Lock()
		defer phaseMu.Unlock()
		if phasesClosed || ev.Phase == "" || ev.Phase == lastPhase {
			return
		}
		lastPhase = ev.Phase
		select {
		case <-phases: // replaced by the newer phase
		default:
		}
		phases <- ev.Phase
	}

	var out runs.Outcome
	plan, err := s.plan(la)
	if err == nil {
		out, err = s.runner(ctx, la.id, plan, progress)
	}
	phaseMu.Lock()
	close(phases)
	phasesClosed = true // a late progress call sends nothing
	phaseMu.Unlock()
	phaseWriter.Wait()
	final := out.Attempt
	final.ID, final.Run, final.Task, final.Created, final.Started = a.ID, a.Run, a.Task, a.Created, &start
	final.Host, final.HostKeyID = a.Host, a.HostKeyID
	if final.Agent.Spec == "" {
		final.Agent = a.Agent
	}
	if final.Agent.Model == "" {
		final.Agent.Model = a.Agent.Model
	}
	if len(final.Agent.Env) == 0 {
		final.Agent.Env = a.Agent.Env
	}
	var task *tasks.Task
	if plan != nil {
		task = plan.Task
		final.Limits = plan.Limits()
	}
	if final.TaskSHA256 == "" && task != nil {
		final.TaskSHA256, _ = bundleSHA256(task)
	}
	cause := context.Cause(ctx)
	reason := infraEngine // of an infra error, for the metrics
	switch {
	case err == nil:
		final.State = apitype.StateDone
	case errors.Is(cause, errUserCanceled):
		final.State = apitype.StateCanceled
	case errors.Is(cause, errShutdown):
		final.State = apitype.StateInfraError
		final.InfraError = fmt.Sprintf("%v: %v", errShutdown, err)
		reason = infraShutdown
	default:
		final.State = apitype.StateInfraError
		final.InfraError = err.Error()
	}
	journalPath := ""
	if out.JournalPath != "" {
		if _, serr := os.Stat(out.JournalPath); serr == nil {
			journalPath = out.JournalPath
			// An attempt cut short has no verdict, but its journal
			// says what it changed.
			if final.State != apitype.StateDone && task != nil {
				if err := attachJournalFacts(&final, out.JournalPath, task.Policy); err != nil {
					log.Warn("unable to read the facts of the journal", "err", err)
				}
			}
		}
	}
	// What the attempt's text holds of its --env values is scrubbed
	// here, where it enters the store.
	scrub := newScrubber(la.env)
	if err := s.saveTranscript(bg, la.id, out, scrub); err != nil {
		log.Warn("unable to store the transcript", "err", err)
	}
	if final.State != apitype.StateDone {
		final.Pass, final.Reward = false, 0
	}
	if final.Reasons == nil {
		final.Reasons = []apitype.Reason{}
	}
	if final.Changeset == nil {
		final.Changeset = []apitype.Change{}
	}
	scrub.attempt(&final)
	// The model calls were scrubbed as the gateway stored them; their
	// sum and cost are the attempt's, signed with it.
	calls := s.attachModelCalls(&final, out.ModelDir)
	now := time.Now().UTC()
	final.Phase, final.Finished, final.BenchdVersion = "", &now, Version
	// The journal, the verdict and (on a fleet) the job's completion
	// commit together. A journal that cannot be stored leaves a verdict
	// without its record: the attempt is then an infra error.
	err = s.store.Finish(bg, store.Finish{Attempt: final, JournalPath: journalPath, ModelCalls: calls, InTx: la.complete})
	if errors.Is(err, store.ErrJournal) {
		if final.State == apitype.StateDone {
			final.State = apitype.StateInfraError
			final.InfraError = err.Error()
			final.Pass, final.Reward = false, 0
			reason = infraJournal
		} else {
			log.Warn("unable to store the journal", "err", err)
		}
		err = s.store.Finish(bg, store.Finish{Attempt: final, ModelCalls: calls, InTx: la.complete})
	}
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			log.Error("the end of the attempt is not recorded: the fleet gave it up, or it is scored already", "err", err)
		} else {
			log.Error("unable to record the end of an attempt", "err", err)
		}
		if b, gerr := s.store.GetAttempt(bg, la.id); gerr == nil {
			final = b
		}
	} else {
		var pol *apitype.TaskPolicy
		if task != nil && final.TaskSHA256 != "" {
			pol = &apitype.TaskPolicy{Allow: task.Policy.Allow, Ignore: task.Policy.Ignore}
		}
		s.sign(bg, la.id, pol)
		if a, err := s.store.GetAttempt(bg, la.id); err == nil {
			final = a // as signed
		}
		s.metrics.end(final, reason)
		if final.State == apitype.StateDone {
			s.metrics.graded(out.Phases)
		}
		// An attempt cut short by this host's shutdown is retried only
		// on a fleet, where another host takes the retry (unless its
		// --env values, in this host's memory only, go with it).
		handBack := s.fleet != nil && len(la.env) == 0
		if final.State == apitype.StateInfraError && (!errors.Is(cause, errShutdown) || handBack) && !errors.Is(cause, errUserCanceled) {
			s.retryAuto(bg, log, final, la)
			if a, err := s.store.GetAttempt(bg, la.id); err == nil {
				final = a // with retried_by
			}
		}
	}
	log.Info("attempt ended", "state", final.State, "pass", final.Pass, "wall_ms", final.WallMS, "infra_error", final.InfraError)
	s.retire(la, final)
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
		if s.fleet != nil && (a.State == apitype.StateQueued || a.State == apitype.StateRunning) {
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
		now := time.Now().UTC()
		b := a
		b.State, b.Phase, b.Pass, b.Reward, b.Finished, b.BenchdVersion = apitype.StateCanceled, "", false, 0, &now, Version
		err := s.store.UpdateQueued(context.WithoutCancel(ctx), b)
		if err == nil {
			s.sign(context.WithoutCancel(ctx), a.ID, nil)
			s.log.Info("queued attempt canceled", "attempt", a.ID)
			return s.store.GetAttempt(ctx, a.ID)
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
	if s.fleet != nil {
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
