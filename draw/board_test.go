package draw

import (
	"slices"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

// suiteRun makes a board input where each task's letters give this run
// (one letter per attempt, in order) and before gives the older history
// (newest first), every attempt by agent.
func suiteRun(agent apitype.AgentIdentity, run map[string]string, before map[string]string) BoardInput {
	in := BoardInput{Runs: map[string][]apitype.Attempt{}, History: map[string][]apitype.Attempt{}}
	for _, task := range SuiteTasks {
		var r []apitype.Attempt
		for i, l := range run[task] {
			a := hist(agent, string(l))[0]
			a.ID, a.Task = task+"-new-"+string(rune('a'+i)), task
			r = append(r, a)
		}
		old := hist(agent, before[task])
		for i := range old {
			old[i].ID, old[i].Task = task+"-old-"+string(rune('a'+i)), task
		}
		in.Runs[task] = r
		h := slices.Clone(r)
		slices.Reverse(h)
		in.History[task] = append(h, old...)
	}
	return in
}

func all(s string) map[string]string {
	m := map[string]string{}
	for _, t := range SuiteTasks {
		m[t] = s
	}
	return m
}

func TestGateAndSkip(t *testing.T) {
	tests := []struct {
		name     string
		gate     string
		wantPass bool
	}{
		{"no attempt", "", false},
		{"one pass", "P", true},
		{"all pass", "PPP", true},
		{"one fail", "PFP", false},
		{"infra error", "PI", false},
		{"canceled", "C", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GatePassed(hist(agentA, tt.gate)); got != tt.wantPass {
				t.Fatalf("got gate passed %v, want %v", got, tt.wantPass)
			}
			var skipped []string
			for _, task := range SuiteTasks {
				if Skipped(task, tt.wantPass) {
					skipped = append(skipped, task)
				}
			}
			want := []string{"rt-03", "rt-04", "rt-05"}
			if tt.wantPass {
				want = nil
			}
			if !slices.Equal(skipped, want) {
				t.Errorf("got skipped %v, want %v", skipped, want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	gateFails := all("P")
	gateFails["rt-01"] = "F"
	for _, g := range GatedTasks {
		gateFails[g] = ""
	}
	mixedIDs := suiteRun(agentA, all("P"), all("PP"))
	rebuilt := suiteRun(agentA2, map[string]string{"rt-01": "P"}, nil)
	for _, task := range SuiteTasks[1:] {
		mixedIDs.Runs[task] = nil
	}
	// rt-02 ran with a rebuilt binary while the rest ran with the old one.
	mixedIDs.Runs["rt-02"] = rebuilt.Runs["rt-01"]
	mixedIDs.Runs["rt-02"][0].Task = "rt-02"
	mixedIDs.History["rt-02"] = append(slices.Clone(mixedIDs.Runs["rt-02"]), mixedIDs.History["rt-02"]...)
	infraRun := all("P")
	infraRun["rt-04"] = "I"

	tests := []struct {
		name        string
		in          BoardInput
		target      int
		wantGreen   bool
		wantGate    bool
		wantStatus  map[string]string
		wantStreak  map[string]int
		wantWhyPart string
	}{
		{
			name: "three passes everywhere is green", in: suiteRun(agentA, all("P"), all("PP")), target: 3,
			wantGreen: true, wantGate: true,
			wantStatus: map[string]string{"rt-01": RowPass, "rt-03": RowPass, "rt-06": RowPass},
			wantStreak: map[string]int{"rt-01": 3, "rt-04": 3},
		},
		{
			name: "a short streak is not green", in: suiteRun(agentA, all("P"), map[string]string{"rt-01": "PP", "rt-02": "PP", "rt-03": "P", "rt-04": "PP", "rt-05": "PP", "rt-06": "PP"}), target: 3,
			wantGreen: false, wantGate: true, wantStreak: map[string]int{"rt-03": 2}, wantWhyPart: "rt-03: streak 2 of 3",
		},
		{
			name: "gate fails: gated tasks skipped, not failed", in: suiteRun(agentA, gateFails, all("PPP")), target: 3,
			wantGreen: false, wantGate: false,
			wantStatus:  map[string]string{"rt-01": RowFail, "rt-02": RowPass, "rt-03": RowSkipped, "rt-04": RowSkipped, "rt-05": RowSkipped, "rt-06": RowPass},
			wantStreak:  map[string]int{"rt-01": 0, "rt-02": 4, "rt-03": 3},
			wantWhyPart: "rt-01: streak 0 of 3",
		},
		{
			name: "infra error neither counts nor breaks", in: suiteRun(agentA, infraRun, all("PPP")), target: 3,
			wantGreen: true, wantGate: true,
			wantStatus: map[string]string{"rt-04": RowInfra}, wantStreak: map[string]int{"rt-04": 3, "rt-05": 4},
		},
		{
			name: "a fail in this run resets", in: suiteRun(agentA, map[string]string{"rt-01": "P", "rt-02": "PF", "rt-03": "P", "rt-04": "P", "rt-05": "P", "rt-06": "P"}, all("PPP")), target: 3,
			wantGreen: false, wantGate: true, wantStatus: map[string]string{"rt-02": RowFail}, wantStreak: map[string]int{"rt-02": 0},
			wantWhyPart: "rt-02: streak 0 of 3",
		},
		{
			name: "target one", in: suiteRun(agentA, all("P"), nil), target: 1, wantGreen: true, wantGate: true,
		},
		{
			name: "streaks on two identities are not green", in: mixedIDs, target: 1, wantGreen: false, wantGate: true,
			wantStreak: map[string]int{"rt-02": 1}, wantWhyPart: "different identities",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Target = tt.target
			b := Evaluate(tt.in)
			if b.Green != tt.wantGreen {
				t.Errorf("got green %v, want %v (not green: %v)", b.Green, tt.wantGreen, b.NotGreen)
			}
			if b.GatePassed != tt.wantGate {
				t.Errorf("got gate passed %v, want %v", b.GatePassed, tt.wantGate)
			}
			if len(b.Rows) != 6 || b.Rows[0].Task != GateTask {
				t.Fatalf("got %d rows starting %q, want 6 starting with the gate", len(b.Rows), b.Rows[0].Task)
			}
			for _, r := range b.Rows {
				if want, ok := tt.wantStatus[r.Task]; ok && r.Status != want {
					t.Errorf("%s: got status %q, want %q", r.Task, r.Status, want)
				}
				if want, ok := tt.wantStreak[r.Task]; ok && r.Streak.Passes != want {
					t.Errorf("%s: got streak %d, want %d", r.Task, r.Streak.Passes, want)
				}
			}
			if why := strings.Join(b.NotGreen, "; "); !strings.Contains(why, tt.wantWhyPart) {
				t.Errorf("got not-green reasons %q, want them to contain %q", why, tt.wantWhyPart)
			}
			if b.Green && len(b.NotGreen) != 0 {
				t.Errorf("got green with reasons %v", b.NotGreen)
			}
		})
	}
}
