package daemon

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/tasks"
)

// batchServer is a server with a store, a host key and metrics, and no
// workers: what is queued stays queued.
func batchServer(t *testing.T) *server {
	t.Helper()
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, "queue"), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := HostKey(state)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cfg: Config{StateDir: state, TasksDir: "../tasks", MaxQueued: 100, Concurrency: 3}, store: st, key: key,
		live: map[string]*liveAttempt{}, secrets: &secretSet{}, log: slog.New(slog.DiscardHandler),
		metrics: newMetrics("h", func() (int, int) { return 0, 0 })}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// TestRunStatus: a run's status has one attempt per slot, in order: a
// retried infra error as its retry; an attempt whose end is stored while
// benchd still ends it shows as running; the run has ended once every
// slot has.
func TestRunStatus(t *testing.T) {
	ctx := t.Context()
	s := batchServer(t)
	sub := submitted{n: 1}
	for _, id := range []string{"rt-01", "rt-02", "rt-03"} {
		sub.tasks = append(sub.tasks, submittedTask{task: &tasks.Task{ID: id}, plan: &runs.Plan{Request: runs.Request{Task: id, Agent: apitype.AgentNull, Timeout: "1m0s"}}})
	}
	run, err := s.submit(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	end := func(id, state string) apitype.Attempt {
		a, err := s.store.GetAttempt(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		a.State, a.Finished = state, &now
		if err := s.store.UpdateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	status := func() apitype.RunStatus {
		rec := httptest.NewRecorder()
		s.routes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/runs/"+run.ID+"/status", nil))
		var st apitype.RunStatus
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &st) != nil {
			t.Fatalf("status: got %d %s", rec.Code, rec.Body)
		}
		return st
	}
	// The first is an infra error, retried; the second has ended, but
	// benchd still holds it; the third is done.
	first := end(run.Attempts[0], apitype.StateInfraError)
	retry, err := s.retry(ctx, first, runs.Request{Task: "rt-01", Agent: apitype.AgentNull}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	end(run.Attempts[1], apitype.StateDone)
	end(run.Attempts[2], apitype.StateDone)
	s.mu.Lock()
	delete(s.live, run.Attempts[2])
	s.mu.Unlock()

	st := status()
	var got []string
	for _, a := range st.Attempts {
		got = append(got, a.ID+" "+a.State+" "+a.Phase)
	}
	want := []string{retry.ID + " queued ", run.Attempts[1] + " running store", run.Attempts[2] + " done "}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("got slots %q, want %q", got, want)
	}
	if st.Ended || st.Concurrency != 3 || len(st.Run.Tasks) != 3 {
		t.Errorf("got ended %v, concurrency %d, tasks %v; want not ended, 3, the run's 3 tasks", st.Ended, st.Concurrency, st.Run.Tasks)
	}
	s.mu.Lock()
	delete(s.live, run.Attempts[1])
	s.mu.Unlock()
	end(retry.ID, apitype.StateDone)
	s.mu.Lock()
	delete(s.live, retry.ID)
	s.mu.Unlock()
	if st := status(); !st.Ended || st.Attempts[0].ID != retry.ID || st.Attempts[1].State != apitype.StateDone {
		t.Errorf("got %+v, want ended, the retry in the first slot and the second done", st)
	}
}

// TestCancelRunQueued: canceling a run cancels each of its queued
// attempts, and no other run's; a run with nothing left is a conflict.
func TestCancelRunQueued(t *testing.T) {
	ctx := t.Context()
	s := batchServer(t)
	of := func(ids ...string) submitted {
		sub := submitted{n: 2}
		for _, id := range ids {
			sub.tasks = append(sub.tasks, submittedTask{task: &tasks.Task{ID: id}, plan: &runs.Plan{Request: runs.Request{Task: id, Agent: apitype.AgentNull, Timeout: "1m0s"}}})
		}
		return sub
	}
	run, err := s.submit(ctx, of("rt-01", "rt-02"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.submit(ctx, of("rt-03"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := s.cancelRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Canceled) != 4 {
		t.Errorf("got %d canceled, want 4", len(rc.Canceled))
	}
	for _, id := range run.Attempts {
		if a, _ := s.store.GetAttempt(ctx, id); a.State != apitype.StateCanceled {
			t.Errorf("attempt %s: got %s, want canceled", id, a.State)
		}
	}
	for _, id := range other.Attempts {
		if a, _ := s.store.GetAttempt(ctx, id); a.State != apitype.StateQueued {
			t.Errorf("attempt %s of the other run: got %s, want queued", id, a.State)
		}
	}
	if len(s.queue) != 2 {
		t.Errorf("got %d queued, want the other run's 2", len(s.queue))
	}
	if _, err := s.cancelRun(ctx, run.ID); !errors.Is(err, errConflict) {
		t.Errorf("second cancel: got %v, want a conflict", err)
	}
	if _, err := s.cancelRun(ctx, "r-none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancel of no run: got %v, want not found", err)
	}
}
