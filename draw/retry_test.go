package draw

import (
	"testing"

	"benchd.dev/client/apitype"
)

// retried marks a[i] as retried by a[i+1], as the store links a chain.
func retried(as []apitype.Attempt, i int) []apitype.Attempt {
	as[i].RetriedBy, as[i+1].RetryOf = as[i+1].ID, as[i].ID
	return as
}

// TestRetriedNotCounted: an infra error that was retried is its slot's
// past, not an outcome: boards, gates, streaks and scorecards count the
// end of each chain only, and a run of retried attempts alone is no pass.
func TestRetriedNotCounted(t *testing.T) {
	t.Run("row", func(t *testing.T) {
		tests := []struct {
			name string
			run  []apitype.Attempt
			want string
		}{
			{"retried then passed", retried(hist(agentA, "IP"), 0), RowPass},
			{"retried then failed", retried(hist(agentA, "IF"), 0), RowFail},
			{"retried, the retry not yet ended", retried(hist(agentA, "IR"), 0), RowInfra},
			{"a chain of retries only", func() []apitype.Attempt {
				as := hist(agentA, "II")
				as[0].RetriedBy, as[1].RetriedBy = "x", "y" // retries not in the run given
				return as
			}(), RowInfra},
			{"an infra error not retried", hist(agentA, "IP"), RowInfra},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := rowStatus(tt.run); got != tt.want {
					t.Errorf("got %s, want %s", got, tt.want)
				}
			})
		}
	})
	t.Run("gate", func(t *testing.T) {
		if !GatePassed(retried(hist(agentA, "IP"), 0)) {
			t.Error("got gate not passed after an infra error retried into a pass, want passed")
		}
		as := hist(agentA, "I")
		as[0].RetriedBy = "x"
		if GatePassed(as) {
			t.Error("got gate passed with only a retried infra error, want not passed")
		}
	})
	t.Run("streak", func(t *testing.T) {
		// Newest first: a pass, its retried infra error, a pass.
		h := hist(agentA, "PIP")
		h[1].RetriedBy, h[0].RetryOf = h[0].ID, h[1].ID
		s := StreakFor(h, IdentityOf(agentA))
		if s.Passes != 2 || s.Skipped != 0 {
			t.Errorf("got %d passes, %d skipped; want 2, 0", s.Passes, s.Skipped)
		}
	})
	t.Run("scorecard", func(t *testing.T) {
		as := []apitype.Attempt{
			attempt("i-1", "rt-01", agentA, "infra", "v1-rt-01", 1),
			attempt("p-1", "rt-01", agentA, "pass", "v1-rt-01", 2),
			attempt("i-2", "rt-02", agentA, "infra", "v1-rt-02", 3),
		}
		as = retried(as, 0)
		suite := BuiltinSeries()
		suite.Pin(map[string]string{"rt-01": "v1-rt-01", "rt-02": "v1-rt-02"}, as)
		card := Score([]Series{suite}, as, ScoreConfig{}).Series[0]
		if len(card.Agents) != 1 {
			t.Fatalf("got %d agents, want 1", len(card.Agents))
		}
		a := card.Agents[0]
		if a.Scored != 1 || a.Passes != 1 || a.InfraErrors != 1 || card.Retried != 1 {
			t.Errorf("got %d scored, %d passes, %d infra errors, %d retried; want 1, 1, 1 (i-2, not retried), 1", a.Scored, a.Passes, a.InfraErrors, card.Retried)
		}
		for _, to := range card.Tasks {
			for _, ao := range to.Agents {
				for _, o := range ao.Attempts {
					if o.ID == "i-1" {
						t.Errorf("task %s lists the retried infra error i-1 among its outcomes", to.Task)
					}
				}
			}
		}
	})
}
