package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/draw"
)

const testList = `benchd draw list 1
seed 20261004
cap 2

tasks
1 rt-01 work-files g-01 first
2 rt-02 work-files g-02 first

counts
library 2
listed 2
`

// scoreDaemon has: agent "good" passing every suite task twice, agent
// "mixed" passing half its attempts, agent "bad" failing all; and an
// infra error of bad on rt-03; and a pass of good on rt-06 graded by an
// older bundle.
func scoreDaemon(t *testing.T) *suiteDaemon {
	t.Helper()
	d := newSuiteDaemon(t, nil)
	d.seed("good", "", everyTask("PP"))
	d.seed("mixed", "", everyTask("PF"))
	d.seed("bad", "", everyTask("FF"))
	d.seed("bad", "", map[string]string{"rt-03": "I"})
	d.seed("good", "", map[string]string{"rt-06": "P"})
	d.mu.Lock()
	d.attempts[0].TaskSHA256 = "bundle-old" // the rt-06 pass just stored
	d.mu.Unlock()
	return d
}

// TestScorecardUnresolved: an attempt left to review is not scored and
// the scorecard says how many there are.
func TestScorecardUnresolved(t *testing.T) {
	d := newSuiteDaemon(t, nil)
	d.seed("good", "", everyTask("PP"))
	d.seed("good", "", map[string]string{"rt-06": "U"})
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "scorecard")
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, stderr)
	}
	for _, re := range []string{
		`unresolved: 1 attempt left to review, neither passed nor failed \(not scored`,
		`good\s+rt-01..rt-06\s+6\s+12\s+12\s+100.0%.*1 unresolved`,
		`rt-06\s+good\s+2/2 \(100%\)\s+pass, pass, unresolved\n`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("got stdout\n%s\nwant a match of %s", stdout, re)
		}
	}
	code, stdout, _ = runCLI(t, d.Socket, nil, false, "scorecard", "--json")
	var sc draw.Scorecard
	if err := json.Unmarshal([]byte(stdout), &sc); err != nil || code != exitOK {
		t.Fatalf("--json: got exit %d, %v", code, err)
	}
	if a := sc.Series[0].Agents[0]; a.Unresolved != 1 || a.Scored != 12 || sc.Series[0].Unresolved != 1 {
		t.Errorf("--json: got unresolved %d, scored %d, series unresolved %d; want 1, 12, 1", a.Unresolved, a.Scored, sc.Series[0].Unresolved)
	}
}

func TestScorecardText(t *testing.T) {
	d := scoreDaemon(t)
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "scorecard")
	t.Logf("stdout:\n%s", stdout)
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"series built-in suite (id ",
		"draw rule: built-in suite",
		"grading rules: " + draw.RulesVersion,
		"left out: 1 attempt graded by another bundle",
		"agents by name, not by rate",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("got stdout without %q", want)
		}
	}
	// Listed by name.
	if i, j, k := strings.Index(stdout, "  bad "), strings.Index(stdout, "  good "), strings.Index(stdout, "  mixed "); !(i < j && j < k) {
		t.Errorf("got agents at %d, %d, %d, want bad, good, mixed in that order", i, j, k)
	}
	if !strings.Contains(stdout, "good completes more than bad: their intervals do not overlap") {
		t.Errorf("got no separation of good and bad")
	}
	if !strings.Contains(stdout, "bad and mixed cannot be separated") && !strings.Contains(stdout, "mixed completes more than bad") {
		t.Errorf("got no sentence about bad and mixed")
	}
	// Per task: each task's rate beside what happened.
	per := stdout[strings.Index(stdout, "per task"):]
	if !regexp.MustCompile(`rt-01\s+mixed\s+1/2 \(50%\)\s+fail, pass`).MatchString(per) {
		t.Errorf("got per-task lines without mixed's rt-01 rate and outcomes (oldest first: fail, pass)")
	}
	if !regexp.MustCompile(`rt-03\s+bad\s+0/2 \(0%\)\s+fail, fail, infra error\n`).MatchString(per) {
		t.Errorf("got no line for bad's rt-03 with its infra error last")
	}
	if !regexp.MustCompile(`rt-06\s+good\s+2/2 \(100%\)\s+pass, pass\n`).MatchString(per) {
		t.Errorf("got good's rt-06 line wrong: the older bundle's pass belongs to another series")
	}
	if !regexp.MustCompile(`good\s+rt-01..rt-06\s+6\s+12\s+12\s+100.0%`).MatchString(stdout) || !regexp.MustCompile(`bad\s+rt-01..rt-06\s+6\s+0\s+12\s+0.0%.*1 infra error`).MatchString(stdout) {
		t.Errorf("got the rate lines wrong: want good 12 of 12 on 6 tasks, bad 0 of 12 with 1 infra error not scored")
	}
	// The plot: good's bootstrap collapses at 100%, drawn as a mark.
	if !regexp.MustCompile(`\n  good\s+\|-+\* 100.0%\n`).MatchString(stdout) || !strings.Contains(stdout, "0%                      50%                     100%") {
		t.Errorf("got no plot row for good with its collapsed bootstrap marked, or no axis")
	}
	if strings.Contains(stdout, "not compared") {
		t.Errorf("got a not-compared line, want none: every agent has the six tasks")
	}
}

// TestScorecardTaskSets: the rate is the mean of per-task rates, and
// agents measured on different task sets are not compared.
func TestScorecardTaskSets(t *testing.T) {
	d := newSuiteDaemon(t, nil)
	d.seed("good", "", everyTask("PP"))
	d.seed("bad", "", everyTask("FF"))
	d.seed("skew", "", map[string]string{"rt-01": "PPPPPPPPPP", "rt-02": "F"})
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "scorecard")
	t.Logf("stdout:\n%s", stdout)
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, stderr)
	}
	// 10 of 10 on rt-01 and 0 of 1 on rt-02: 50%, not 10 of 11.
	if !regexp.MustCompile(`skew\s+rt-01,rt-02\s+2\s+10\s+11\s+50.0%`).MatchString(stdout) {
		t.Errorf("got no rate line for skew of 50.0%% (the mean of 100%% and 0%%)")
	}
	for _, want := range []string{
		"good completes more than bad: their intervals do not overlap",
		"not compared: measured on different task sets: bad, good have rt-01..rt-06\n",
		"not compared: measured on different task sets: skew has rt-01,rt-02\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("got stdout without %q", want)
		}
	}
	if regexp.MustCompile(`skew (and|completes)|(and|than) skew`).MatchString(stdout) {
		t.Errorf("got skew compared with an agent of another task set")
	}
	_, stdout, _ = runCLI(t, d.Socket, nil, false, "scorecard", "--json")
	var sc draw.Scorecard
	if err := json.Unmarshal([]byte(stdout), &sc); err != nil {
		t.Fatal(err)
	}
	c := sc.Series[0]
	if len(c.NotCompared) != 2 || len(c.Separation) != 1 {
		t.Errorf("--json: got %d not-compared lines and %d pairs, want 2 and 1", len(c.NotCompared), len(c.Separation))
	}
	for _, a := range c.Agents {
		if a.Agent != "skew" {
			continue
		}
		if a.Rate == nil || *a.Rate != 0.5 || len(a.PerTask) != 2 || a.PerTask[0].Rate != 1 || a.PerTask[1].Rate != 0 || a.TaskSet != "rt-01,rt-02" {
			t.Errorf("--json: got skew rate %v, per task %+v, task set %q; want 0.5, rt-01 1 and rt-02 0, rt-01,rt-02", a.Rate, a.PerTask, a.TaskSet)
		}
	}
}

func TestScorecardSeries(t *testing.T) {
	d := scoreDaemon(t)
	list := filepath.Join(t.TempDir(), "batch.list")
	if err := os.WriteFile(list, []byte(testList), 0o644); err != nil {
		t.Fatal(err)
	}
	decode := func(t *testing.T, stdout string) draw.Scorecard {
		t.Helper()
		var sc draw.Scorecard
		if err := json.Unmarshal([]byte(stdout), &sc); err != nil {
			t.Fatalf("got %q, want JSON: %v", stdout, err)
		}
		return sc
	}
	_, out, _ := runCLI(t, d.Socket, nil, false, "scorecard", "--json")
	builtinID := decode(t, out).Series[0].ID
	tests := []struct {
		name      string
		args      []string
		wantNames []string
		wantTasks int
	}{
		{"default", []string{"scorecard", "--json"}, []string{"built-in suite"}, 6},
		{"with a list beside", []string{"scorecard", "--json", "--list", list}, []string{"built-in suite", "batch.list"}, 6},
		{"select the list file", []string{"scorecard", "--json", "--series", list}, []string{"batch.list"}, 2},
		{"select builtin", []string{"scorecard", "--json", "--list", list, "--series", "builtin"}, []string{"built-in suite"}, 6},
		{"select by id prefix", []string{"scorecard", "--json", "--list", list, "--series", builtinID[:6]}, []string{"built-in suite"}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != exitOK {
				t.Fatalf("got exit %d, stderr %q", code, stderr)
			}
			sc := decode(t, stdout)
			var names []string
			for _, s := range sc.Series {
				names = append(names, s.Series.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("got series %v, want %v", names, tt.wantNames)
			}
			if len(sc.Series[0].Tasks) != tt.wantTasks {
				t.Errorf("got %d tasks in the first series, want %d", len(sc.Series[0].Tasks), tt.wantTasks)
			}
			for _, s := range sc.Series {
				for _, a := range s.Agents {
					if a.Interval == nil || a.Bootstrap == nil {
						t.Errorf("%s: %s: got interval %v bootstrap %v, want both", s.Series.Name, a.Agent, a.Interval, a.Bootstrap)
					}
				}
			}
		})
	}
	t.Run("list rule", func(t *testing.T) {
		_, stdout, _ := runCLI(t, d.Socket, nil, false, "scorecard", "--json", "--series", list)
		if got := decode(t, stdout).Series[0].Series.DrawRule; got != "benchd draw list 1; seed 20261004; cap 2" {
			t.Errorf("got draw rule %q", got)
		}
	})
	t.Run("unknown series", func(t *testing.T) {
		code, _, stderr := runCLI(t, d.Socket, nil, false, "scorecard", "--series", "ffffff")
		if code != exitError || !strings.Contains(stderr, `--series "ffffff" matches 0 series`) {
			t.Errorf("got exit %d, stderr %q", code, stderr)
		}
	})
	t.Run("bad list", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.list")
		os.WriteFile(bad, []byte("benchd draw list 1\n\nnothing\n"), 0o644)
		code, _, stderr := runCLI(t, d.Socket, nil, false, "scorecard", "--list", bad)
		if code != exitError || !strings.Contains(stderr, "no tasks section") {
			t.Errorf("got exit %d, stderr %q", code, stderr)
		}
	})
}

func TestScorecardHTML(t *testing.T) {
	d := scoreDaemon(t)
	out := filepath.Join(t.TempDir(), "card.html")
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "scorecard", "--html", out)
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<svg class="plot"`, `id="attempt-a-\d+"`, `href="#attempt-a-\d+"`, `benchctl log a-\d+`, "good completes more than bad",
		`<p class="note grouped-by">agents grouped by preset or executable SHA-256`} {
		if !regexp.MustCompile(want).Match(b) {
			t.Errorf("got a report without %q", want)
		}
	}
	if !strings.Contains(stdout, "HTML report: "+out) {
		t.Errorf("got stdout without the report's path")
	}
}

// TestScorecardModelLines: the model table lists the agents that called
// a model, then each task's sums, with the task in a column of its own;
// agents without a call are counted, not listed; a series without any
// call prints no table.
func TestScorecardModelLines(t *testing.T) {
	cost := 0.0384
	u := &apitype.ModelUsage{Calls: 3, TokenUsage: apitype.TokenUsage{InputTokens: 30445, OutputTokens: 30}, ToolCalls: 2, CostUSD: &cost}
	card := draw.SeriesCard{
		Agents: []draw.AgentScore{{Agent: "builtin:reference"}, {Agent: "codex [model gpt-5-codex]", Model: u}},
		Tasks: []draw.TaskOutcomes{{Task: "rt-01", Agents: []draw.AgentOutcomes{
			{Agent: "builtin:reference"}, {Agent: "codex [model gpt-5-codex]", Model: u}}}},
	}
	var b strings.Builder
	modelLines(&b, card)
	got := b.String()
	for _, want := range []string{
		"TASK   AGENT                      CALLS  TOKENS IN/OUT  TOOL CALLS  COST     ERRORS",
		"all    codex [model gpt-5-codex]  3      30,445/30      2           $0.0384  0",
		"rt-01  codex [model gpt-5-codex]  3      30,445/30      2           $0.0384  0",
		"(1 agent(s) of the series called no model through an HTTP gateway)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("got\n%s\nwant a line %q", got, want)
		}
	}
	if strings.Contains(got, "builtin:reference") {
		t.Errorf("got\n%s\nwant no line of an agent without calls", got)
	}
	b.Reset()
	card.Agents[1].Model, card.Tasks[0].Agents[1].Model = nil, nil
	if modelLines(&b, card); b.Len() != 0 {
		t.Errorf("no call in the series: got %q, want nothing", b.String())
	}
}

// TestScorecardGroupedBy: the scorecard says what its rows group
// attempts by, and an agent with infra errors only is no row, in the
// table, per task and in --json.
func TestScorecardGroupedBy(t *testing.T) {
	d := newSuiteDaemon(t, nil)
	d.seed("good", "", everyTask("PP"))
	d.seed("ghost", "", map[string]string{"rt-01": "I", "rt-02": "I"})
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "scorecard")
	if code != exitOK {
		t.Fatalf("got exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, draw.AgentsGroupedBy) {
		t.Errorf("got stdout\n%s\nwithout what its rows group by", stdout)
	}
	if !strings.Contains(stdout, "never ran: 2 infra errors of agents with nothing else left out (not rows)") {
		t.Errorf("got stdout\n%s\nwithout the infra-only count", stdout)
	}
	if strings.Contains(stdout, "ghost") {
		t.Errorf("got stdout\n%s\nnaming the agent that never ran", stdout)
	}
	code, stdout, _ = runCLI(t, d.Socket, nil, false, "scorecard", "--json")
	var sc draw.Scorecard
	if err := json.Unmarshal([]byte(stdout), &sc); err != nil || code != exitOK {
		t.Fatalf("--json: got exit %d, %v", code, err)
	}
	s := sc.Series[0]
	if len(s.Agents) != 1 || s.InfraOnly != 2 || s.GroupedBy != draw.AgentsGroupedBy {
		t.Errorf("--json: got %d agents, %d infra-only, grouped by %q; want 1, 2, %q", len(s.Agents), s.InfraOnly, s.GroupedBy, draw.AgentsGroupedBy)
	}
}
