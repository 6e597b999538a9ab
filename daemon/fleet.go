package daemon

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
)

// A fleet is what makes this benchd one worker of many: with the store on
// PostgreSQL, attempts are queued as River jobs in the same database, and
// every benchd pointed at it works them (MaxWorkers = --concurrency).
//
// How an attempt is scored exactly once:
//   - A job names one attempt. The host that works it starts the attempt
//     only while it is still queued (store.StartAttempt), and records its
//     end (journal, blobs, verdict) and the job's completion in one
//     transaction (store.Finish with river.JobCompleteTx), only while the
//     attempt is still running on that host.
//   - A running host says so every Config.Heartbeat (store.Heartbeat).
//     A host that dies leaves its job running in River; River's rescuer
//     hands it on after Config.RescueAfter, and the host that gets it
//     gives the attempt up only when its host has been silent for
//     heartbeatsLost heartbeats: in one transaction the attempt becomes an
//     infra error naming the silent host and a new attempt (its retry)
//     is queued (store.Rescue). A host still alive keeps its attempt, and
//     the job comes back later (snoozed) to check again.
//   - Whatever a given-up host records afterwards is refused by the store,
//     and a second done attempt of one retry chain is refused by the
//     scored table's key: a convention is not what stops a double score.
//
// Attempts with --env values run on the host they were submitted to (its
// own queue): the values live only in that host's memory.
type fleet struct {
	s      *server
	client *river.Client[*sql.Tx]
	// own is this host's queue; sharedQueue every host's.
	own string
	// slots bounds the attempts this host runs at once, across both
	// queues.
	slots chan struct{}
	// rescueAfter is River's RescueStuckJobsAfter; heartbeat the interval
	// of this host's heartbeat.
	rescueAfter, heartbeat time.Duration

	mu  sync.Mutex
	env map[string][]apitype.EnvVar // values of own-queue attempts, memory only
}

// sharedQueue is the River queue every host of the fleet works.
const sharedQueue = "benchd"

// heartbeatsLost is how many heartbeats a host may miss before another
// host gives its running attempts up.
const heartbeatsLost = 5

// Defaults of the fleet's Config fields.
const (
	DefaultRescueAfter = 15 * time.Minute
	DefaultHeartbeat   = 2 * time.Second
)

// attemptArgs is the job of one attempt.
type attemptArgs struct {
	Attempt string `json:"attempt"`
}

// Kind is the River job kind of an attempt.
func (attemptArgs) Kind() string { return "benchd_attempt" }

type attemptWorker struct {
	river.WorkerDefaults[attemptArgs]
	f *fleet
}

// Timeout is RescueAfter: River's rescuer hands on only a job past its
// timeout. Past it River cancels the job's context, which the attempt
// does not run under (it has its own deadline and benchd's shutdown).
func (w *attemptWorker) Timeout(*river.Job[attemptArgs]) time.Duration { return w.f.rescueAfter }

func (w *attemptWorker) Work(ctx context.Context, job *river.Job[attemptArgs]) error {
	return w.f.work(ctx, job)
}

// queueName is the River queue of host: its name in lower case, each
// run of other characters one hyphen.
func queueName(host string) string {
	var b strings.Builder
	b.WriteString("host-")
	dash := false
	for _, r := range strings.ToLower(host) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-")
	if len(name) > 64 {
		name = strings.TrimRight(name[:64], "-")
	}
	return name
}

// newFleet migrates River's tables (under the store's migration lock, so
// hosts starting together migrate once) and makes the River client.
func newFleet(ctx context.Context, s *server) (*fleet, error) {
	drv := riverdatabasesql.New(s.store.DB())
	quiet := slog.New(slogDiscard{})
	mig, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: quiet})
	if err != nil {
		return nil, fmt.Errorf("unable to prepare River's migrations: %w", err)
	}
	err = s.store.WithMigrateLock(ctx, func() error {
		_, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("unable to migrate River's tables: %w", err)
	}
	f := &fleet{
		s:           s,
		own:         queueName(s.cfg.Host),
		slots:       make(chan struct{}, s.cfg.Concurrency),
		rescueAfter: s.cfg.RescueAfter,
		heartbeat:   s.cfg.Heartbeat,
		env:         map[string][]apitype.EnvVar{},
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &attemptWorker{f: f}); err != nil {
		return nil, err
	}
	f.client, err = river.NewClient(drv, &river.Config{
		Queues: map[string]river.QueueConfig{
			sharedQueue: {MaxWorkers: s.cfg.Concurrency},
			f.own:       {MaxWorkers: s.cfg.Concurrency},
		},
		Workers: workers,
		// database/sql has no LISTEN: River polls.
		PollOnly:             true,
		FetchCooldown:        50 * time.Millisecond,
		FetchPollInterval:    200 * time.Millisecond,
		JobTimeout:           f.rescueAfter,
		RescueStuckJobsAfter: f.rescueAfter,
		MaxAttempts:          100,
		Logger:               s.log.With("component", "river"),
	})
	if err != nil {
		return nil, fmt.Errorf("unable to make the River client: %w", err)
	}
	return f, nil
}

// slogDiscard is a slog.Handler that drops everything.
type slogDiscard struct{}

func (slogDiscard) Enabled(context.Context, slog.Level) bool  { return false }
func (slogDiscard) Handle(context.Context, slog.Record) error { return nil }
func (d slogDiscard) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d slogDiscard) WithGroup(string) slog.Handler           { return d }

// start starts the River client and the heartbeat, which ends when
// s.closing is closed.
func (f *fleet) start(ctx context.Context) error {
	if err := f.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("unable to start the River client: %w", err)
	}
	go f.beat()
	return nil
}

// beat is the heartbeat: it says this host runs its attempts, and cancels
// those another host asked to cancel.
func (f *fleet) beat() {
	t := time.NewTicker(f.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-f.s.closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.heartbeat*heartbeatsLost)
		ids, err := f.s.store.Heartbeat(ctx, f.s.cfg.Host)
		cancel()
		if err != nil {
			f.s.log.Warn("heartbeat failed", "err", err)
			continue
		}
		for _, id := range ids {
			if la := f.s.liveOf(id); la != nil {
				f.s.mu.Lock()
				if la.cancel != nil {
					la.cancel(errUserCanceled)
				}
				f.s.mu.Unlock()
			}
		}
	}
}

// stop stops fetching jobs and returns when every job this host works
// has returned.
func (f *fleet) stop() {
	if err := f.client.Stop(context.Background()); err != nil {
		f.s.log.Warn("River client stopped with an error", "err", err)
	}
}

// enqueue inserts the jobs of the new queued attempts ids: on this host's
// own queue when they have environment values (env, kept in memory
// here), else on the shared one.
func (f *fleet) enqueue(ctx context.Context, ids []string, env []apitype.EnvVar) error {
	queue := sharedQueue
	if len(env) > 0 {
		queue = f.own
		f.mu.Lock()
		for _, id := range ids {
			f.env[id] = env
		}
		f.mu.Unlock()
	}
	params := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		params[i] = river.InsertManyParams{Args: attemptArgs{Attempt: id}, InsertOpts: &river.InsertOpts{Queue: queue}}
	}
	err := f.s.store.InTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := f.client.InsertManyTx(ctx, tx, params)
		return err
	})
	if err != nil {
		return fmt.Errorf("unable to queue the attempts' jobs: %w", err)
	}
	return nil
}

// takeEnv returns (and forgets) the environment values of attempt id.
func (f *fleet) takeEnv(id string) []apitype.EnvVar {
	f.mu.Lock()
	defer f.mu.Unlock()
	env := f.env[id]
	delete(f.env, id)
	return env
}

// work is one job: run its attempt when it is queued, rescue it when its
// host went silent, and otherwise complete the job.
func (f *fleet) work(ctx context.Context, job *river.Job[attemptArgs]) error {
	s := f.s
	id := job.Args.Attempt
	// A job fetched while this host is full goes back to the queue, for
	// another host or a later fetch.
	select {
	case f.slots <- struct{}{}:
	default:
		return river.JobSnooze(time.Second)
	}
	defer func() { <-f.slots }()
	bg := context.WithoutCancel(ctx)
	a, err := s.store.GetAttempt(bg, id)
	if errors.Is(err, store.ErrNotFound) {
		s.log.Warn("job of an attempt that does not exist", "attempt", id, "job", job.ID)
		return nil
	}
	if err != nil {
		return err
	}
	switch a.State {
	case apitype.StateQueued:
		if s.isStopping() {
			return river.JobSnooze(0)
		}
		return f.run(ctx, job, a)
	case apitype.StateRunning:
		return f.rescue(bg, job, a)
	}
	return nil // ended: nothing to do
}

// run runs queued attempt a of job here.
func (f *fleet) run(ctx context.Context, job *river.Job[attemptArgs], a apitype.Attempt) error {
	s := f.s
	env := f.takeEnv(a.ID)
	spec, err := s.storedRequest(ctx, a.ID)
	var why string
	switch {
	case err != nil:
		why = fmt.Sprintf("its request was lost: %v", err)
	case len(spec.EnvNames) > 0 && len(env) == 0:
		why = fmt.Sprintf("the values of its environment variables (%s) are kept only in the memory of the benchd it was submitted to, which restarted; submit it again", strings.Join(spec.EnvNames, ", "))
	}
	if why != "" {
		s.log.Warn("queued attempt cannot go on", "attempt", a.ID, "why", why)
		s.endUnrun(ctx, a, apitype.StateInfraError, why)
		return nil
	}
	la := newLive(a.ID, spec, env)
	// JobCompleteTx finds the River client in the work context.
	jobCtx := context.WithoutCancel(ctx)
	la.complete = func(_ context.Context, tx *sql.Tx) error {
		_, err := river.JobCompleteTx[*riverdatabasesql.Driver](jobCtx, tx, job)
		if errors.Is(err, river.ErrNotFound) {
			return nil // the job is no longer running: rescued or snoozed
		}
		return err
	}
	s.mu.Lock()
	s.live[a.ID] = la
	actx, cancel := context.WithCancelCause(s.workCtx)
	la.cancel = cancel
	s.mu.Unlock()
	s.secrets.add(a.ID, env)
	s.metrics.start()
	s.execute(actx, la)
	return f.settle(context.WithoutCancel(ctx), a.ID)
}

// settle checks that attempt id, which this host just ran, is recorded
// as started and ended. One the store still holds queued (its start
// could not be written) is an error, so that River offers the job again;
// one still running here (its end could not be written) is recorded as
// an infra error, or else an error too, for the same reason. Left so,
// the job would be complete and the attempt would wait forever.
func (f *fleet) settle(ctx context.Context, id string) error {
	a, err := f.s.store.GetAttempt(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case a.State == apitype.StateQueued:
		return fmt.Errorf("attempt %s was not started", id)
	case a.State == apitype.StateRunning && a.Host == f.s.cfg.Host:
		end(&a, apitype.StateInfraError, "host "+f.s.cfg.Host+" was unable to record the end of the attempt")
		if _, err := f.s.finish(ctx, &closing{a: a, write: f.s.store.UpdateRunning, infra: infraEngine}); err != nil {
			return fmt.Errorf("attempt %s: its end is not recorded: %w", id, err)
		}
	}
	return nil
}

// errNotRescued is a rescue that found the attempt's host alive or the
// attempt ended: nothing was written.
var errNotRescued = errors.New("attempt not given up")

// rescue is a job whose attempt is running on some host: River's rescuer
// handed it on. The attempt is given up when its host is silent, and the
// job snoozed while the host lives.
func (f *fleet) rescue(ctx context.Context, job *river.Job[attemptArgs], a apitype.Attempt) error {
	s := f.s
	if s.liveOf(a.ID) != nil {
		return river.JobSnooze(f.rescueAfter) // ours, still running
	}
	request, err := s.store.Request(ctx, a.ID)
	if err == nil {
		err = json.Unmarshal(request, &runs.Request{})
	}
	if err != nil {
		request = nil
	}
	retry := apitype.Attempt{
		ID: newID("a-"), Run: a.Run, Task: a.Task, Agent: a.Agent,
		State: apitype.StateQueued, Reasons: []apitype.Reason{}, Changeset: []apitype.Change{},
		ExitCode: -1, Created: time.Now().UTC(),
	}
	silent := f.heartbeat * heartbeatsLost
	why := fmt.Sprintf("host %q stopped while the attempt ran (no heartbeat for %v); host %q gave it up and queued %s in its place",
		a.Host, silent, s.cfg.Host, retry.ID)
	// The store sets the ending in the transaction that queues the
	// retry; finish signs and counts it.
	got := store.RescueEnded
	_, err = s.finish(ctx, &closing{a: a, infra: infraRescued, write: func(ctx context.Context, _ apitype.Attempt) error {
		var err error
		got, err = s.store.Rescue(ctx, a.ID, time.Now().Add(-silent), ender(apitype.StateInfraError, why), retry, request,
			func(ctx context.Context, tx *sql.Tx) error {
				if _, err := f.client.InsertTx(ctx, tx, attemptArgs{Attempt: retry.ID}, &river.InsertOpts{Queue: sharedQueue}); err != nil {
					return err
				}
				_, err := river.JobCompleteTx[*riverdatabasesql.Driver](ctx, tx, job)
				return err
			})
		if err == nil && got != store.RescueDone {
			return errNotRescued
		}
		return err
	}})
	switch {
	case got == store.RescueAlive:
		return river.JobSnooze(f.rescueAfter)
	case errors.Is(err, errNotRescued):
		return nil
	case err != nil:
		return err
	}
	s.log.Warn("attempt of a silent host given up", "attempt", a.ID, "host", a.Host, "retry", retry.ID)
	return nil
}
