package draw

import (
	"fmt"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

// TestStreakUnresolved: an unresolved attempt neither counts nor ends a
// streak, but the count stops at it; once reviewed it is a pass or a
// fail like any other.
func TestStreakUnresolved(t *testing.T) {
	reviewed := func(letters string, i int, pass bool) []apitype.Attempt {
		h := hist(agentA, letters)
		h[i].Pass, h[i].Outcome = pass, apitype.OutcomeFail
		if pass {
			h[i].Outcome = apitype.OutcomePass
		}
		h[i].Review = &apitype.Review{Outcome: h[i].Outcome, Why: "x"}
		return h
	}
	tests := []struct {
		name        string
		history     []apitype.Attempt
		wantPasses  int
		wantPending string
		wantEndedBy string
	}{
		{"newest unresolved", hist(agentA, "UPPP"), 0, "a-0", ""},
		{"unresolved inside", hist(agentA, "PPUPP"), 2, "a-2", ""},
		{"reviewed pass counts", reviewed("PPUPP", 2, true), 5, "", ""},
		{"reviewed fail ends it", reviewed("PPUPP", 2, false), 2, "", "a-2"},
		{"a fail before the unresolved one", hist(agentA, "PFUP"), 1, "", "a-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StreakFor(tt.history, IdentityOf(agentA))
			if got.Passes != tt.wantPasses || got.PendingOn != tt.wantPending || got.EndedBy != tt.wantEndedBy {
				t.Errorf("got passes %d, pending on %q, ended by %q; want %d, %q, %q",
					got.Passes, got.PendingOn, got.EndedBy, tt.wantPasses, tt.wantPending, tt.wantEndedBy)
			}
		})
	}
}

// TestBoardUnresolved: a task whose attempt is left to review is
// neither passed nor failed: its row is unresolved, the board counts it
// and is not green, and says why.
func TestBoardUnresolved(t *testing.T) {
	run := all("P")
	run["rt-06"] = "U"
	before := all("PP")
	b := Evaluate(suiteRun(agentA, run, before))
	var row Row
	for _, r := range b.Rows {
		if r.Task == "rt-06" {
			row = r
		}
	}
	if row.Status != RowUnresolved || strings.Join(row.Outcomes, ",") != OutcomeUnresolved {
		t.Errorf("rt-06: got status %q outcomes %v, want %q and [%s]", row.Status, row.Outcomes, RowUnresolved, OutcomeUnresolved)
	}
	if len(row.Unresolved) != 1 || row.Unresolved[0] != "rt-06-new-a" || b.Unresolved != 1 {
		t.Errorf("got row unresolved %v, board unresolved %d; want [rt-06-new-a] and 1", row.Unresolved, b.Unresolved)
	}
	if row.Streak.Passes != 0 || row.Streak.PendingOn != "rt-06-new-a" || row.Streak.EndedBy != "" || row.Met {
		t.Errorf("got streak %+v met %v, want 0 passes pending on rt-06-new-a, not ended, not met", row.Streak, row.Met)
	}
	if b.Green {
		t.Error("got a green board with an unresolved attempt")
	}
	if !strings.Contains(strings.Join(b.NotGreen, "\n"), "rt-06: streak 0 of 3 (counted up to rt-06-new-a, whose verdict is left to review") {
		t.Errorf("got not green %q, want rt-06's reason naming the unresolved attempt", b.NotGreen)
	}
	// An unresolved attempt of the gate is no pass: the gated tasks are
	// skipped.
	run = all("P")
	run[GateTask] = "U"
	if b := Evaluate(suiteRun(agentA, run, nil)); b.GatePassed {
		t.Error("got the gate passed by an unresolved attempt")
	}
	// Unresolved beside an infra error is unresolved; beside a fail, a
	// fail.
	for _, tc := range []struct{ letters, want string }{{"UI", RowUnresolved}, {"IU", RowUnresolved}, {"UF", RowFail}, {"PU", RowUnresolved}} {
		run := all("P")
		run["rt-02"] = tc.letters
		for _, r := range Evaluate(suiteRun(agentA, run, nil)).Rows {
			if r.Task == "rt-02" && r.Status != tc.want {
				t.Errorf("%s: got status %q, want %q", tc.letters, r.Status, tc.want)
			}
		}
	}
}

// TestScoreUnresolved: an unresolved attempt is not scored (neither a
// pass nor a fail: the rate is over decided attempts only) and is
// counted; reviewed, it scores as decided.
func TestScoreUnresolved(t *testing.T) {
	var as []apitype.Attempt
	for i, task := range SuiteTasks {
		as = append(as, attempt(fmt.Sprintf("p-%d", i), task, agentA, "pass", "v1-"+task, i))
	}
	u := attempt("u-1", "rt-06", agentA, "fail", "v1-rt-06", 20)
	u.Outcome, u.Reasons = apitype.OutcomeReview, []apitype.Reason{{Code: "needs_review", Message: "hedged"}}
	as = append(as, u)
	suite := BuiltinSeries()
	suite.Pin(storeHashes(), as)
	card := Score([]Series{suite}, as, ScoreConfig{Resamples: 200}).Series[0]
	if len(card.Agents) != 1 {
		t.Fatalf("got %d agents, want 1", len(card.Agents))
	}
	a := card.Agents[0]
	if a.Scored != 6 || a.Passes != 6 || a.Unresolved != 1 || card.Unresolved != 1 || a.Rate == nil || *a.Rate != 1 {
		t.Errorf("got scored %d passes %d unresolved %d (card %d) rate %v; want 6, 6, 1 (1), 100%%",
			a.Scored, a.Passes, a.Unresolved, card.Unresolved, a.Rate)
	}
	var outs []string
	for _, to := range card.Tasks {
		if to.Task == "rt-06" {
			for _, at := range to.Agents[0].Attempts {
				outs = append(outs, at.Outcome)
			}
		}
	}
	if strings.Join(outs, ",") != "pass,"+OutcomeUnresolved {
		t.Errorf("rt-06 outcomes: got %v, want pass, unresolved", outs)
	}

	// Reviewed as a fail, it scores as a fail.
	as[len(as)-1].Outcome = apitype.OutcomeFail
	as[len(as)-1].Review = &apitype.Review{Outcome: apitype.OutcomeFail, Why: "x"}
	a = Score([]Series{suite}, as, ScoreConfig{Resamples: 200}).Series[0].Agents[0]
	if a.Scored != 7 || a.Passes != 6 || a.Unresolved != 0 {
		t.Errorf("after review: got scored %d passes %d unresolved %d, want 7, 6, 0", a.Scored, a.Passes, a.Unresolved)
	}
}
