package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

func ids(list []apitype.Attempt) []string {
	out := []string{}
	for _, a := range list {
		out = append(out, a.ID)
	}
	return out
}

func TestListAttempts(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r2", Task: "rt-02", Created: base}))
		// Created in this order; "tie1" and "tie2" have the same time, so the
		// one created later comes first.
		setup := []struct {
			id, run, task, state string
			at                   time.Duration
		}{
			{"a1", "r1", "rt-01", apitype.StateDone, 1 * time.Second},
			{"a2", "r1", "rt-01", apitype.StateRunning, 2 * time.Second},
			{"b1", "r2", "rt-02", apitype.StateQueued, 3 * time.Second},
			{"old", "", "rt-01", apitype.StateInfraError, 0},
			{"tie1", "r2", "rt-02", apitype.StateDone, 4 * time.Second},
			{"tie2", "r2", "rt-02", apitype.StateCanceled, 4 * time.Second},
		}
		for _, a := range setup {
			mustCreate(t, s, apitype.Attempt{ID: a.id, Run: a.run, Task: a.task, Created: base.Add(a.at)})
			if a.state != apitype.StateQueued {
				must(t, s.UpdateAttempt(ctx, apitype.Attempt{ID: a.id, Run: a.run, Task: a.task, State: a.state, Created: base.Add(a.at)}))
			}
		}
		tests := []struct {
			name    string
			f       Filter
			want    []string
			wantErr error
		}{
			{name: "all, newest first", f: Filter{}, want: []string{"tie2", "tie1", "b1", "a2", "a1", "old"}},
			{name: "run", f: Filter{Run: "r1"}, want: []string{"a2", "a1"}},
			{name: "task", f: Filter{Task: "rt-01"}, want: []string{"a2", "a1", "old"}},
			{name: "one state", f: Filter{States: []string{apitype.StateDone}}, want: []string{"tie1", "a1"}},
			{name: "two states", f: Filter{States: []string{apitype.StateQueued, apitype.StateRunning}}, want: []string{"b1", "a2"}},
			{name: "limit", f: Filter{Limit: 2}, want: []string{"tie2", "tie1"}},
			{name: "limit above count", f: Filter{Limit: 100}, want: []string{"tie2", "tie1", "b1", "a2", "a1", "old"}},
			{name: "run and state", f: Filter{Run: "r2", States: []string{apitype.StateDone, apitype.StateQueued}}, want: []string{"tie1", "b1"}},
			{name: "task, state and limit", f: Filter{Task: "rt-01", States: []string{apitype.StateDone, apitype.StateRunning, apitype.StateInfraError}, Limit: 2}, want: []string{"a2", "a1"}},
			{name: "no match", f: Filter{Run: "r9"}, want: []string{}},
			{name: "run and other task", f: Filter{Run: "r1", Task: "rt-02"}, want: []string{}},
			{name: "unknown state", f: Filter{States: []string{"sleeping"}}, wantErr: ErrInvalid},
			{name: "negative limit", f: Filter{Limit: -1}, wantErr: ErrInvalid},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				list, err := s.ListAttempts(ctx, tt.f)
				wantErr(t, err, tt.wantErr)
				if tt.wantErr != nil {
					return
				}
				if got := ids(list); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %v, want %v", got, tt.want)
				}
				unlimited := tt.f
				unlimited.Limit = 0
				all, err := s.ListAttempts(ctx, unlimited)
				must(t, err)
				if n, err := s.CountAttempts(ctx, tt.f); err != nil || n != len(all) {
					t.Errorf("count: got %d, %v; want %d, the attempts matching without the limit", n, err, len(all))
				}
				for _, a := range list {
					if tt.f.Run != "" && a.Run != tt.f.Run || tt.f.Task != "" && a.Task != tt.f.Task {
						t.Errorf("got attempt %s of run %q task %q, want run %q task %q", a.ID, a.Run, a.Task, tt.f.Run, tt.f.Task)
					}
				}
			})
		}
		t.Run("listed equals got", func(t *testing.T) {
			list, err := s.ListAttempts(ctx, Filter{Run: "r1"})
			must(t, err)
			for _, a := range list {
				got, err := s.GetAttempt(ctx, a.ID)
				must(t, err)
				if !reflect.DeepEqual(got, a) {
					t.Errorf("got %+v from GetAttempt, %+v from ListAttempts", got, a)
				}
			}
		})
	})
}

func TestMarkInFlightInfraError(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		started := base.Add(time.Second)
		states := map[string]string{
			"q": apitype.StateQueued, "r1": apitype.StateRunning, "r2": apitype.StateRunning,
			"d": apitype.StateDone, "c": apitype.StateCanceled, "i": apitype.StateInfraError,
		}
		before := map[string]apitype.Attempt{}
		for i, id := range []string{"q", "r1", "r2", "d", "c", "i"} {
			a := apitype.Attempt{ID: id, Task: "rt-01", Purpose: apitype.PurposeRun, Created: base.Add(time.Duration(i) * time.Second)}
			mustCreate(t, s, a)
			a.State = states[id]
			if a.State == apitype.StateRunning {
				a.Phase, a.Started = apitype.PhaseRun, &started
			}
			must(t, s.UpdateAttempt(ctx, a))
			before[id] = a
		}
		now := time.Now()
		got, err := s.MarkInFlightInfraError(ctx, infraEnd("benchd stopped while the attempt ran"))
		must(t, err)
		if want := []string{"r1", "r2"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("got ids %v, want %v", got, want)
		}
		for id, b := range before {
			t.Run(id, func(t *testing.T) {
				a, err := s.GetAttempt(ctx, id)
				must(t, err)
				if b.State != apitype.StateRunning {
					if !reflect.DeepEqual(a, b) {
						t.Errorf("got %+v, want it unchanged: %+v", a, b)
					}
					return
				}
				if a.State != apitype.StateInfraError || a.InfraError != "benchd stopped while the attempt ran" {
					t.Errorf("got state %q infra error %q, want %q with the reason", a.State, a.InfraError, apitype.StateInfraError)
				}
				if a.Phase != apitype.PhaseRun || a.Started == nil || !a.Started.Equal(started) {
					t.Errorf("got phase %q started %v, want them kept (%q, %v)", a.Phase, a.Started, apitype.PhaseRun, started)
				}
				if a.Finished == nil || a.Finished.Before(now.Add(-time.Second)) {
					t.Errorf("got Finished %v, want about %v", a.Finished, now)
				}
				if a.Pass {
					t.Error("got Pass true, want false")
				}
			})
		}
		again, err := s.MarkInFlightInfraError(ctx, infraEnd("again"))
		must(t, err)
		if len(again) != 0 {
			t.Errorf("second call: got %v, want no attempt", again)
		}
	})
}
