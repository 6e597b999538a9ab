package daemon

import (
	"context"
	"sync"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
)

// attemptQueue is where queued attempts wait and who works them: this
// process's queue (localQueue), or, with the store on PostgreSQL, the
// fleet's River queue (fleet), which every host on the database works.
// The server asks its queue (server.attempts), never which one it is.
type attemptQueue interface {
	// startWorkers starts working the queue, adding to workers what shutdown
	// waits for.
	startWorkers(ctx context.Context, workers *sync.WaitGroup) error
	// add puts the new queued attempts ids, ids[i] of request reqs[i],
	// with the environment values env (memory only), on the queue.
	add(ctx context.Context, ids []string, reqs []runs.Request, env []apitype.EnvVar) error
	// closeIntake stops taking attempts off the queue, at shutdown.
	closeIntake()
	// shared reports whether other hosts work the queue too: an attempt
	// queued or running that this process does not hold may be another
	// host's, and the store is the one that knows of it.
	shared() bool
}

// attempts is s's queue: the fleet's, or this process's.
func (s *server) attempts() attemptQueue {
	if s.fleet != nil {
		return s.fleet
	}
	return localQueue{s}
}

// localQueue is this process's queue: server.queue, worked by
// Config.Concurrency workers (server.work), kept across a restart by
// the store (server.requeue).
type localQueue struct{ s *server }

func (q localQueue) startWorkers(_ context.Context, workers *sync.WaitGroup) error {
	for range q.s.cfg.Concurrency {
		workers.Go(q.s.work)
	}
	return nil
}

func (q localQueue) add(_ context.Context, ids []string, reqs []runs.Request, env []apitype.EnvVar) error {
	s := q.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range ids {
		s.live[id] = newLive(id, reqs[i], env)
		s.secrets.add(id, env)
		s.queue = append(s.queue, id)
	}
	s.cond.Broadcast()
	return nil
}

// closeIntake: shutdown's stopping and its broadcast end the workers.
func (localQueue) closeIntake() {}

func (localQueue) shared() bool { return false }

// startWorkers starts the River client and the heartbeat; River stops with
// closeIntake.
func (f *fleet) startWorkers(ctx context.Context, workers *sync.WaitGroup) error {
	if err := f.start(ctx); err != nil {
		return err
	}
	workers.Go(func() {
		<-f.s.stopFleet
		f.stop()
	})
	return nil
}

func (f *fleet) add(ctx context.Context, ids []string, _ []runs.Request, env []apitype.EnvVar) error {
	return f.enqueue(ctx, ids, env) // River reads the requests from the store
}

// closeIntake has River stop fetching; it returns once its running jobs
// have.
func (f *fleet) closeIntake() { close(f.s.stopFleet) }

func (*fleet) shared() bool { return true }
