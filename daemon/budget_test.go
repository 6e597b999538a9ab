package daemon

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
)

// budgetState makes five ended attempts, oldest first, each with a work
// directory of 1 MiB: the two oldest are left to review and reviewed
// (the first an oldest-first rule would take), then three plain ones.
func budgetState(t *testing.T, s *server) {
	t.Helper()
	ctx := t.Context()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i, a := range []apitype.Attempt{
		{ID: "a-review", Outcome: apitype.OutcomeReview},
		{ID: "a-reviewed", Outcome: apitype.OutcomeReview},
		{ID: "a-old", Outcome: apitype.OutcomePass, Pass: true},
		{ID: "a-mid", Outcome: apitype.OutcomeFail},
		{ID: "a-new", Outcome: apitype.OutcomeFail},
	} {
		a.Task, a.State, a.Created = "rt-01", apitype.StateQueued, t0.Add(time.Duration(i)*time.Hour)
		if err := s.store.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		a.State = apitype.StateDone
		if err := s.store.UpdateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		dir := s.attemptDir(a.ID)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stdout"), bytes.Repeat([]byte("x"), 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rv := apitype.Review{Outcome: apitype.OutcomePass, Why: "checked by hand", UID: 1000, Time: t0}
	if _, err := s.store.ReviewAttempt(ctx, "a-reviewed", rv); err != nil {
		t.Fatal(err)
	}
}

// TestStateBudget: over its budget, the state loses the oldest ended
// attempts' work directories first, then the attempts themselves, and
// never one left to review or reviewed, however tiny the budget.
func TestStateBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		// budget is the state's size less this many bytes.
		over                 int64
		wantWork, wantRecord map[string]bool
	}{
		{
			name: "the oldest work directory is enough", over: 512 << 10,
			wantWork:   map[string]bool{"a-review": true, "a-reviewed": true, "a-old": false, "a-mid": true, "a-new": true},
			wantRecord: map[string]bool{"a-review": true, "a-reviewed": true, "a-old": true, "a-mid": true, "a-new": true},
		},
		{
			name: "a budget of nothing", over: 1 << 40,
			wantWork:   map[string]bool{"a-review": true, "a-reviewed": true, "a-old": false, "a-mid": false, "a-new": false},
			wantRecord: map[string]bool{"a-review": true, "a-reviewed": true, "a-old": false, "a-mid": false, "a-new": false},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStoreServer(t)
			budgetState(t, s)
			s.cfg.MaxStateSize = max(1, stateSize(s.cfg.StateDir)-tc.over)
			s.keepStateBudget(t.Context())
			for id, want := range tc.wantWork {
				_, err := os.Stat(s.attemptDir(id))
				if got := err == nil; got != want {
					t.Errorf("work directory of %s: got kept %v, want %v", id, got, want)
				}
			}
			for id, want := range tc.wantRecord {
				_, err := s.store.GetAttempt(t.Context(), id)
				if got := err == nil; got != want {
					t.Errorf("record of %s: got kept %v (%v), want %v", id, got, err, want)
				}
			}
			if tc.over < 1<<30 {
				if used := stateSize(s.cfg.StateDir); used > s.cfg.MaxStateSize {
					t.Errorf("state size %d over its budget %d", used, s.cfg.MaxStateSize)
				}
			}
		})
	}
}

// TestPruneKeepsReviewed: the store's prune with KeepReviewed refuses an
// attempt left to review and a reviewed one even when named by id, the
// one guard every caller of a budget goes through.
func TestPruneKeepsReviewed(t *testing.T) {
	s := newStoreServer(t)
	budgetState(t, s)
	pr, err := s.store.Prune(t.Context(), store.PruneFilter{IDs: []string{"a-review", "a-reviewed", "a-old"}, KeepReviewed: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Attempts) != 1 || pr.Attempts[0] != "a-old" {
		t.Errorf("pruned %v, want [a-old]", pr.Attempts)
	}
	for _, id := range []string{"a-review", "a-reviewed"} {
		if _, err := s.store.GetAttempt(t.Context(), id); err != nil {
			t.Errorf("%s: got %v, want it kept", id, err)
		}
	}
	if _, err := s.store.GetAttempt(t.Context(), "a-old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a-old: got %v, want it pruned", err)
	}
}

// TestNoBudget: without a budget nothing goes, however full the state.
func TestNoBudget(t *testing.T) {
	s := newStoreServer(t)
	budgetState(t, s)
	s.keepStateBudget(t.Context())
	for _, id := range []string{"a-review", "a-reviewed", "a-old", "a-mid", "a-new"} {
		if _, err := os.Stat(s.attemptDir(id)); err != nil {
			t.Errorf("work directory of %s: %v, want it kept", id, err)
		}
	}
}
