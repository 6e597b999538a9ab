package store

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"benchd.dev/client/apitype"
)

// end sets attempt id's state, as the daemon does when it ends.
func end(t *testing.T, s *Store, id, state string) {
	t.Helper()
	a, err := s.GetAttempt(context.Background(), id)
	must(t, err)
	a.State = state
	if state == apitype.StateInfraError {
		a.InfraError = "gateway model: unable to reach 127.0.0.1:9"
	}
	must(t, s.UpdateAttempt(context.Background(), a))
}

// TestRetryChain: a run's slot is a chain of attempts linked by
// retry_of and retried_by, with at most one graded attempt: only an infra
// error of the same run is retried, and only once.
func TestRetryChain(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Attempts: []string{"a1", "done", "canceled", "queued"}, Created: base}))
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r2", Task: "rt-01", Attempts: []string{"other"}, Created: base}))
		for _, id := range []string{"a1", "done", "canceled", "queued"} {
			mustCreate(t, s, apitype.Attempt{ID: id, Run: "r1", Task: "rt-01", Created: base})
		}
		mustCreate(t, s, apitype.Attempt{ID: "other", Run: "r2", Task: "rt-01", Created: base})
		mustCreate(t, s, apitype.Attempt{ID: "loose", Task: "rt-01", Created: base})
		end(t, s, "a1", apitype.StateInfraError)
		end(t, s, "done", apitype.StateDone)
		end(t, s, "canceled", apitype.StateCanceled)
		end(t, s, "other", apitype.StateInfraError)
		end(t, s, "loose", apitype.StateInfraError)

		retry := func(id, run string) apitype.Attempt {
			return apitype.Attempt{ID: id, Run: run, Task: "rt-01", Created: base}
		}
		// The first retry of a1 is taken, with its request.
		must(t, s.CreateRetry(ctx, retry("a2", "r1"), "a1", []byte(`{"task":"rt-01"}`)))

		tests := []struct {
			name string
			a    apitype.Attempt
			of   string
			want error
		}{
			{"a second retry of the same attempt", retry("a2b", "r1"), "a1", ErrConflict},
			{"a retry of a graded attempt", retry("x1", "r1"), "done", ErrConflict},
			{"a retry of a canceled attempt", retry("x2", "r1"), "canceled", ErrConflict},
			{"a retry of an attempt still queued", retry("x3", "r1"), "queued", ErrConflict},
			{"a retry of an attempt not yet ended (the retry)", retry("x4", "r1"), "a2", ErrConflict},
			{"a retry in another run", retry("x5", "r1"), "other", ErrInvalid},
			{"a retry in no run", retry("x6", ""), "a1", ErrInvalid},
			{"a retry of an attempt of no run", retry("x7", ""), "loose", ErrInvalid},
			{"a retry of an attempt that does not exist", retry("x8", "r1"), "nope", ErrNotFound},
			{"a retry that is not queued", apitype.Attempt{ID: "x9", Run: "r1", Task: "rt-01", State: apitype.StateDone}, "a1", ErrInvalid},
			{"a retry whose id exists", retry("done", "r1"), "a1", ErrConflict},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				wantErr(t, s.CreateRetry(ctx, tt.a, tt.of, nil), tt.want)
				if _, err := s.GetAttempt(ctx, tt.a.ID); tt.a.ID != "done" && !errors.Is(err, ErrNotFound) {
					t.Errorf("refused retry %s: got %v on GetAttempt, want it not stored", tt.a.ID, err)
				}
			})
		}
		t.Run("CreateAttempt refuses a retry", func(t *testing.T) {
			a := retry("x10", "r1")
			a.RetryOf = "a1"
			wantErr(t, s.CreateAttempt(ctx, a), ErrInvalid)
		})

		// The chain goes on from the retry once it is an infra error too.
		end(t, s, "a2", apitype.StateInfraError)
		must(t, s.CreateRetry(ctx, retry("a3", "r1"), "a2", nil))
		end(t, s, "a3", apitype.StateDone)
		wantErr(t, s.CreateRetry(ctx, retry("a4", "r1"), "a3", nil), ErrConflict)

		links := map[string][2]string{"a1": {"", "a2"}, "a2": {"a1", "a3"}, "a3": {"a2", ""}, "done": {"", ""}}
		for id, want := range links {
			a, err := s.GetAttempt(ctx, id)
			must(t, err)
			if a.RetryOf != want[0] || a.RetriedBy != want[1] {
				t.Errorf("%s: got retry_of %q retried_by %q, want %q %q", id, a.RetryOf, a.RetriedBy, want[0], want[1])
			}
		}
		list, err := s.ListAttempts(ctx, Filter{Run: "r1"})
		must(t, err)
		for _, a := range list {
			if w, ok := links[a.ID]; ok && (a.RetryOf != w[0] || a.RetriedBy != w[1]) {
				t.Errorf("listed %s: got retry_of %q retried_by %q, want %q %q", a.ID, a.RetryOf, a.RetriedBy, w[0], w[1])
			}
		}
		// An update of an attempt (its data has no links) keeps them.
		end(t, s, "a2", apitype.StateInfraError)
		if a, _ := s.GetAttempt(ctx, "a2"); a.RetryOf != "a1" || a.RetriedBy != "a3" {
			t.Errorf("a2 after an update: got retry_of %q retried_by %q, want a1 a3", a.RetryOf, a.RetriedBy)
		}
		run, err := s.GetRun(ctx, "r1")
		must(t, err)
		if want := []string{"a1", "done", "canceled", "queued", "a2", "a3"}; !slices.Equal(run.Attempts, want) {
			t.Errorf("run's attempts: got %v, want %v", run.Attempts, want)
		}
		if b, err := s.Request(ctx, "a2"); err != nil || string(b) != `{"task":"rt-01"}` {
			t.Errorf("request of a2: got %s, %v", b, err)
		}
		if _, err := s.Request(ctx, "a3"); !errors.Is(err, ErrNotFound) {
			t.Errorf("request of a3 (none given): got %v, want ErrNotFound", err)
		}
		must(t, s.SaveRequest(ctx, "done", []byte("{}")))
		wantErr(t, s.SaveRequest(ctx, "done", []byte("{}")), ErrConflict)
		wantErr(t, s.SaveRequest(ctx, "nope", []byte("{}")), ErrNotFound)
	})
}

// TestRetryRace: many callers retry one infra error at once; exactly one
// retry is stored.
func TestRetryRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Attempts: []string{"a1"}, Created: base}))
		mustCreate(t, s, apitype.Attempt{ID: "a1", Run: "r1", Task: "rt-01", Created: base})
		end(t, s, "a1", apitype.StateInfraError)
		const n = 16
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				errs[i] = s.CreateRetry(ctx, apitype.Attempt{ID: "r" + string(rune('a'+i)), Run: "r1", Task: "rt-01", Created: base}, "a1", nil)
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, ErrConflict):
				t.Errorf("got %v, want success or ErrConflict", err)
			}
		}
		if ok != 1 {
			t.Errorf("got %d retries stored, want 1", ok)
		}
		run, err := s.GetRun(ctx, "r1")
		must(t, err)
		if len(run.Attempts) != 2 {
			t.Errorf("got run attempts %v, want a1 and one retry", run.Attempts)
		}
	})
}
