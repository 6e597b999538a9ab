package draw

import (
	"fmt"
	"slices"
	"testing"

	"benchd.dev/client/apitype"
)

var (
	agentA  = apitype.AgentIdentity{Spec: "agent run", Exe: "/usr/bin/agent", SHA256: "aaaa", Args: []string{"run"}}
	agentA2 = apitype.AgentIdentity{Spec: "agent run", Exe: "/usr/bin/agent", SHA256: "a2a2", Args: []string{"run"}} // rebuilt
	agentAx = apitype.AgentIdentity{Spec: "agent run --x", Exe: "/usr/bin/agent", SHA256: "aaaa", Args: []string{"run", "--x"}}
	agentB  = apitype.AgentIdentity{Spec: "other", Exe: "/usr/bin/other", SHA256: "bbbb"}
)

func withModel(id apitype.AgentIdentity, m string) apitype.AgentIdentity {
	id.Model = m
	id.Args = slices.Clone(id.Args)
	return id
}

// hist builds a history, newest first, from "P" (pass), "F" (fail),
// "I" (infra error), "C" (canceled), "R" (running), "U" (unresolved: a
// verdict left to review) letters, all by agent.
func hist(agent apitype.AgentIdentity, letters string) []apitype.Attempt {
	var out []apitype.Attempt
	for i, l := range letters {
		a := apitype.Attempt{ID: fmt.Sprintf("a-%d", i), Task: "rt-01", Agent: agent, State: apitype.StateDone}
		switch l {
		case 'P':
			a.Pass = true
		case 'F':
		case 'I':
			a.State = apitype.StateInfraError
		case 'C':
			a.State = apitype.StateCanceled
		case 'R':
			a.State = apitype.StateRunning
		case 'U':
			a.Outcome = apitype.OutcomeReview
			a.Reasons = []apitype.Reason{{Code: "needs_review", Message: "hedged"}}
		}
		out = append(out, a)
	}
	return out
}

func TestStreakFor(t *testing.T) {
	mixed := append(hist(agentA, "PP"), hist(agentB, "FF")...)
	mixed = append(mixed, hist(agentA, "P")...)
	mixed[4].ID = "a-x"
	changed := append(hist(agentA2, "P"), hist(agentA, "PPP")...)
	modelM := hist(withModel(agentA, "m1"), "PP")
	modelM = append(modelM, hist(withModel(agentA, "m2"), "F")...)
	modelM = append(modelM, hist(withModel(agentA, "m1"), "P")...)
	modelM[3].ID = "a-y"
	tests := []struct {
		name        string
		history     []apitype.Attempt
		id          Identity
		wantPasses  int
		wantEndedBy string
		wantSkipped int
	}{
		{"empty history", nil, IdentityOf(agentA), 0, "", 0},
		{"three passes", hist(agentA, "PPP"), IdentityOf(agentA), 3, "", 0},
		{"fail ends it", hist(agentA, "PPFPP"), IdentityOf(agentA), 2, "a-2", 0},
		{"newest fails", hist(agentA, "FPPP"), IdentityOf(agentA), 0, "a-0", 0},
		{"infra error neither counts nor breaks", hist(agentA, "PIPP"), IdentityOf(agentA), 3, "", 1},
		{"canceled ends it", hist(agentA, "PCPP"), IdentityOf(agentA), 1, "a-1", 0},
		{"running is skipped", hist(agentA, "RPP"), IdentityOf(agentA), 2, "", 1},
		{"other agents do not touch it", mixed, IdentityOf(agentA), 3, "", 0},
		{"new binary starts at zero passes of the old", changed, IdentityOf(agentA2), 1, "", 0},
		{"old binary keeps its own", changed, IdentityOf(agentA), 3, "", 0},
		{"other arguments are another identity", hist(agentA, "PPP"), IdentityOf(agentAx), 0, "", 0},
		{"the model is part of the identity", modelM, IdentityOf(withModel(agentA, "m1")), 3, "", 0},
		{"another model's fail is its own", modelM, IdentityOf(withModel(agentA, "m2")), 0, "a-0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StreakFor(tt.history, tt.id)
			if got.Passes != tt.wantPasses {
				t.Errorf("got %d passes, want %d", got.Passes, tt.wantPasses)
			}
			if got.EndedBy != tt.wantEndedBy {
				t.Errorf("got ended by %q, want %q", got.EndedBy, tt.wantEndedBy)
			}
			if got.Skipped != tt.wantSkipped {
				t.Errorf("got %d skipped, want %d", got.Skipped, tt.wantSkipped)
			}
			if len(got.Attempts) != got.Passes {
				t.Errorf("got %d attempt ids for %d passes", len(got.Attempts), got.Passes)
			}
		})
	}
}

func TestIdentity(t *testing.T) {
	ref1 := apitype.AgentIdentity{Spec: apitype.AgentReference, SHA256: "overlay-rt01"}
	ref2 := apitype.AgentIdentity{Spec: apitype.AgentReference, SHA256: "overlay-rt02"}
	tests := []struct {
		name          string
		a, b          apitype.AgentIdentity
		wantEqual     bool
		wantSameSuite bool
	}{
		{"same command", agentA, agentA, true, true},
		{"same command spelled otherwise", agentA, apitype.AgentIdentity{Spec: "/usr/bin/agent run", SHA256: "aaaa", Args: []string{"run"}}, true, true},
		{"rebuilt executable", agentA, agentA2, false, false},
		{"other arguments", agentA, agentAx, false, false},
		{"other model", withModel(agentA, "m1"), withModel(agentA, "m2"), false, false},
		{"built-in on two tasks", ref1, ref2, false, true},
		{"built-in with another model", ref1, withModel(ref2, "m"), false, false},
		{"built-in and command", ref1, agentA, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := IdentityOf(tt.a), IdentityOf(tt.b)
			if got := a.Equal(b); got != tt.wantEqual {
				t.Errorf("got Equal %v, want %v", got, tt.wantEqual)
			}
			if got := a.SuiteKey() == b.SuiteKey(); got != tt.wantSameSuite {
				t.Errorf("got same suite key %v, want %v (%q, %q)", got, tt.wantSameSuite, a.SuiteKey(), b.SuiteKey())
			}
		})
	}
}
