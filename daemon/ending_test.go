package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
)

// TestEndingsAgree: every site that ends an attempt sets its ending the
// one way (end) and finishes it on the one path: whichever site, an
// ending is recorded with benchd's version, a finish time, no verdict
// unless done, the phase it stopped in when it had started and was not
// done (none when it never ran or is done), and a signature.
func TestEndingsAgree(t *testing.T) {
	ctx := t.Context()
	state := t.TempDir()
	st, err := store.Open(ctx, store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key, err := HostKey(state)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cfg: Config{StateDir: state, TasksDir: "../tasks", Host: "h", MaxQueued: 10}, store: st, key: key,
		log: slog.New(slog.DiscardHandler), live: map[string]*liveAttempt{}, secrets: &secretSet{},
		metrics: newMetrics("h", func() (int, int) { return 0, 0 })}
	s.cond = sync.NewCond(&s.mu)
	s.workCtx, s.stopWork = context.WithCancelCause(ctx)
	if err := st.CreateRun(ctx, apitype.Run{ID: "r-end", Agent: apitype.AgentNull, Tasks: []string{"rt-01"}, Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	n := 0
	mk := func(running bool) apitype.Attempt {
		n++
		a := apitype.Attempt{ID: "a-end" + string(rune('a'+n)), Run: "r-end", Task: "rt-01", State: apitype.StateQueued, ExitCode: -1,
			Reasons: []apitype.Reason{}, Changeset: []apitype.Change{}, Created: time.Now().UTC()}
		if err := st.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		if running {
			now := time.Now().UTC()
			a.State, a.Phase, a.Started, a.Host = apitype.StateRunning, apitype.PhaseRun, &now, "h"
			if err := st.UpdateAttempt(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	execute := func(runErr error) func() string {
		return func() string {
			a := mk(false)
			req := runs.Request{Task: "rt-01", Agent: apitype.AgentNull, Timeout: "1m0s"}
			if err := st.SaveRequest(ctx, a.ID, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			s.runner = func(_ context.Context, _ string, _ *runs.Plan, progress func(apitype.Event)) (runs.Outcome, error) {
				progress(apitype.Event{Phase: apitype.PhaseRun})
				return runs.Outcome{}, runErr
			}
			la := newLive(a.ID, req, nil)
			actx, cancel := context.WithCancelCause(ctx)
			la.cancel = cancel
			s.live[a.ID] = la
			s.execute(actx, la)
			return a.ID
		}
	}
	sites := []struct {
		name      string
		end       func() string // ends an attempt, returns its id
		state     string
		wantPhase string
	}{
		{"execute done", execute(nil), apitype.StateDone, ""},
		{"execute infra error", execute(errors.New("engine broke")), apitype.StateInfraError, apitype.PhaseRun},
		{"endUnrun", func() string {
			return s.endUnrun(ctx, mk(false), apitype.StateInfraError, "its request was lost").ID
		}, apitype.StateInfraError, ""},
		{"cancelElsewhere", func() string {
			a, err := s.cancelElsewhere(ctx, mk(false))
			if err != nil {
				t.Fatal(err)
			}
			return a.ID
		}, apitype.StateCanceled, ""},
		{"fleet settle", func() string {
			a := mk(true)
			if err := (&fleet{s: s}).settle(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			return a.ID
		}, apitype.StateInfraError, apitype.PhaseRun},
		{"abandonRunning", func() string {
			a := mk(true)
			s.live[a.ID] = &liveAttempt{id: a.ID, cancel: func(error) {}}
			s.abandonRunning()
			delete(s.live, a.ID)
			return a.ID
		}, apitype.StateInfraError, apitype.PhaseRun},
		{"store Rescue", func() string {
			a := mk(true)
			retry := apitype.Attempt{ID: a.ID + "-retry", Run: "r-end", Task: "rt-01", State: apitype.StateQueued, Created: time.Now().UTC()}
			got, err := st.Rescue(ctx, a.ID, time.Now().Add(time.Hour), ender(apitype.StateInfraError, "host went silent"), retry, nil, nil)
			if err != nil || got != store.RescueDone {
				t.Fatalf("rescue: got %v, %v", got, err)
			}
			s.sign(ctx, a.ID, nil)
			return a.ID
		}, apitype.StateInfraError, apitype.PhaseRun},
		{"start-up recovery", func() string {
			a := mk(true)
			if _, err := st.MarkHostInFlightInfraError(ctx, ender(apitype.StateInfraError, "benchd stopped"), "h"); err != nil {
				t.Fatal(err)
			}
			s.sign(ctx, a.ID, nil)
			return a.ID
		}, apitype.StateInfraError, apitype.PhaseRun},
	}
	for _, site := range sites {
		t.Run(site.name, func(t *testing.T) {
			id := site.end()
			a, err := st.GetAttempt(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if a.State != site.state || a.Phase != site.wantPhase || a.BenchdVersion != Version || a.Finished == nil {
				t.Errorf("got state %s, phase %q, version %q, finished %v; want %s, %q, %q, set", a.State, a.Phase, a.BenchdVersion, a.Finished, site.state, site.wantPhase, Version)
			}
			if a.State != apitype.StateDone && (a.Pass || a.Reward != 0) {
				t.Errorf("got pass %v reward %v without a verdict", a.Pass, a.Reward)
			}
			if (a.State == apitype.StateInfraError) != (a.InfraError != "") {
				t.Errorf("got state %s with infra error %q", a.State, a.InfraError)
			}
			if _, err := st.Envelope(ctx, id); err != nil {
				t.Errorf("not signed: %v", err)
			}
		})
	}
}
