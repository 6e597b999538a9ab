package draw

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

// seriesOf is a series of tasks, each graded by bundle "v1-TASK".
func seriesOf(tasks ...string) Series {
	s := ListSeries("test.list", "seed 1", tasks)
	s.Bundles = map[string]string{}
	for _, t := range tasks {
		s.Bundles[t] = "v1-" + t
	}
	return s
}

// runs makes agent's attempts of task from outcomes ("P" pass, "F" fail).
func runs(agent apitype.AgentIdentity, task, outcomes string, n *int) []apitype.Attempt {
	var as []apitype.Attempt
	for _, o := range outcomes {
		*n++
		out := "fail"
		if o == 'P' {
			out = "pass"
		}
		as = append(as, attempt(fmt.Sprintf("x-%03d", *n), task, agent, out, "v1-"+task, *n))
	}
	return as
}

func agentScore(t *testing.T, c SeriesCard, name string) AgentScore {
	t.Helper()
	for _, a := range c.Agents {
		if a.Agent == name {
			return a
		}
	}
	t.Fatalf("got no agent %q in %+v", name, c.Agents)
	return AgentScore{}
}

// TestRatePerTask: an agent's rate is the mean of its per-task rates,
// each task weighing the same, not its passes over its attempts.
func TestRatePerTask(t *testing.T) {
	tests := []struct {
		name     string
		attempts map[string]string // task: outcomes
		want     float64
		perTask  string
	}{
		// 10 of 10 on rt-01 and 0 of 1 on rt-02: 50%, not 10/11 = 90.9%.
		{"ten attempts on one task, one on another", map[string]string{"rt-01": "PPPPPPPPPP", "rt-02": "F"}, 0.5, "rt-01 10/10, rt-02 0/1"},
		// 1 of 10 and 1 of 1: (0.1 + 1) / 2, not 2/11.
		{"many fails on one task, a pass on another", map[string]string{"rt-01": "FFFFFFFFFP", "rt-02": "P"}, 0.55, "rt-01 1/10, rt-02 1/1"},
		{"equal attempts", map[string]string{"rt-01": "PF", "rt-02": "PP"}, 0.75, "rt-01 1/2, rt-02 2/2"},
		{"one task", map[string]string{"rt-01": "PPF"}, 2.0 / 3, "rt-01 2/3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			var as []apitype.Attempt
			for _, task := range []string{"rt-01", "rt-02"} {
				as = append(as, runs(agentA, task, tt.attempts[task], &n)...)
			}
			c := Score([]Series{seriesOf("rt-01", "rt-02")}, as, ScoreConfig{}).Series[0]
			a := agentScore(t, c, "agent run")
			if a.Rate == nil || math.Abs(*a.Rate-tt.want) > 1e-12 {
				t.Fatalf("got rate %v, want %.4f", a.Rate, tt.want)
			}
			var got []string
			for _, r := range a.PerTask {
				got = append(got, fmt.Sprintf("%s %d/%d", r.Task, r.Passes, r.N))
				if want := float64(r.Passes) / float64(r.N); r.Rate != want {
					t.Errorf("got %s rate %v, want %v", r.Task, r.Rate, want)
				}
			}
			if strings.Join(got, ", ") != tt.perTask {
				t.Errorf("got per-task %q, want %q", strings.Join(got, ", "), tt.perTask)
			}
			if a.Interval == nil || a.Interval.Lo > *a.Rate || a.Interval.Hi < *a.Rate {
				t.Errorf("got interval %v, want it to contain the rate %.4f", a.Interval, *a.Rate)
			}
			// The per-task rates are shown by task too.
			for _, to := range c.Tasks {
				for _, ao := range to.Agents {
					if ao.Rate == nil || *ao.Rate != float64(ao.Passes)/float64(ao.Scored) {
						t.Errorf("got %s's rate %v of %d/%d", to.Task, ao.Rate, ao.Passes, ao.Scored)
					}
				}
			}
		})
	}
}

// TestTaskSets: agents are compared only with agents measured on the
// same task set; the others get one line per task set saying why.
func TestTaskSets(t *testing.T) {
	six := []string{"rt-01", "rt-02", "rt-03", "rt-04", "rt-05", "rt-06"}
	agentC := apitype.AgentIdentity{Spec: "third", Exe: "/usr/bin/third", SHA256: "cccc"}
	agentD := apitype.AgentIdentity{Spec: "fourth", Exe: "/usr/bin/fourth", SHA256: "dddd"}
	n := 0
	var as []apitype.Attempt
	for _, task := range six {
		as = append(as, runs(agentA, task, "PP", &n)...)
		as = append(as, runs(agentC, task, "FF", &n)...)
	}
	for _, task := range six[:2] {
		as = append(as, runs(agentB, task, "FF", &n)...)
		as = append(as, runs(agentD, task, "FF", &n)...)
	}
	c := Score([]Series{seriesOf(six...)}, as, ScoreConfig{}).Series[0]

	if got := agentScore(t, c, "agent run").TaskSet; got != "rt-01..rt-06" {
		t.Errorf("got agent run's task set %q, want rt-01..rt-06", got)
	}
	if got := agentScore(t, c, "other").TaskSet; got != "rt-01,rt-02" {
		t.Errorf("got other's task set %q, want rt-01,rt-02", got)
	}
	var pairs []string
	for _, p := range c.Separation {
		pairs = append(pairs, p.A+"/"+p.B)
	}
	if got, want := strings.Join(pairs, " "), "agent run/third fourth/other"; got != want {
		t.Errorf("got pairs %q, want %q (only agents of one task set)", got, want)
	}
	want := []string{
		"not compared: measured on different task sets: agent run, third have rt-01..rt-06",
		"not compared: measured on different task sets: fourth, other have rt-01,rt-02",
	}
	if strings.Join(c.NotCompared, "\n") != strings.Join(want, "\n") {
		t.Errorf("got not compared\n%s\nwant\n%s", strings.Join(c.NotCompared, "\n"), strings.Join(want, "\n"))
	}

	t.Run("one line per task set, however many agents", func(t *testing.T) {
		var agents []AgentScore
		for i := range 44 {
			set := "rt-01..rt-06"
			if i%2 == 1 {
				set = "rt-01,rt-02"
			}
			agents = append(agents, AgentScore{Agent: fmt.Sprintf("a%02d", i), TaskSet: set})
		}
		if got := len(NotCompared(agents)); got != 2 {
			t.Errorf("got %d lines for 44 agents on 2 task sets, want 2", got)
		}
		if got, want := len(Separate(agents)), 2*(22*21/2); got != want {
			t.Errorf("got %d pairs, want %d (pairs within a task set only)", got, want)
		}
	})
	t.Run("one task set: no line", func(t *testing.T) {
		if got := NotCompared([]AgentScore{{Agent: "x", TaskSet: "rt-01"}, {Agent: "y", TaskSet: "rt-01"}}); len(got) != 0 {
			t.Errorf("got %q, want no line", got)
		}
	})
}

func TestTaskSetText(t *testing.T) {
	order := []string{"rt-01", "rt-02", "rt-03", "rt-04", "rt-05", "rt-06"}
	tests := []struct {
		set  []string
		want string
	}{
		{order, "rt-01..rt-06"},
		{[]string{"rt-02", "rt-01"}, "rt-01,rt-02"},
		{[]string{"rt-01", "rt-02", "rt-03", "rt-05"}, "rt-01..rt-03,rt-05"},
		{[]string{"rt-06", "zz"}, "rt-06,zz"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := TaskSetText(order, tt.set); got != tt.want {
			t.Errorf("got %q for %v, want %q", got, tt.set, tt.want)
		}
	}
}

// degenerate is a card with an agent of 0 of 1 (one task: no bootstrap)
// and one of 5 of 5 on each of two tasks (the bootstrap is a point).
func degenerate() SeriesCard {
	n := 0
	as := runs(agentB, "rt-01", "F", &n)
	as = append(as, runs(agentA, "rt-01", "PPPPP", &n)...)
	as = append(as, runs(agentA, "rt-02", "PPPPP", &n)...)
	return Score([]Series{seriesOf("rt-01", "rt-02")}, as, ScoreConfig{}).Series[0]
}

// TestDegenerateMarks: an interval that collapses to a point is drawn as
// a mark, in the HTML and in the text plot.
func TestDegenerateMarks(t *testing.T) {
	c := degenerate()
	a := agentScore(t, c, "agent run")
	if a.Bootstrap == nil || a.Bootstrap.Lo != 1 || a.Bootstrap.Hi != 1 {
		t.Fatalf("got agent run's bootstrap %v, want the point 1", a.Bootstrap)
	}
	t.Run("html", func(t *testing.T) {
		var buf bytes.Buffer
		if err := WriteHTML(&buf, Scorecard{RulesVersion: RulesVersion, Series: []SeriesCard{c}}, t0); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		var rows [][]string // title, markup
		for _, part := range strings.Split(page, `<g class="agent-row">`)[1:] {
			part, _, _ = strings.Cut(part, "</svg>")
			m := regexp.MustCompile(`^<title>([^<]*)</title>`).FindStringSubmatch(part)
			if m == nil {
				t.Fatalf("got a plot row without a title: %q", part)
			}
			rows = append(rows, []string{part, m[1], part})
		}
		if len(rows) != 2 {
			t.Fatalf("got %d plot rows, want 2", len(rows))
		}
		for _, r := range rows {
			if !strings.Contains(r[2], `<circle class="rate"`) {
				t.Errorf("got row %q without a rate dot", r[1])
			}
		}
		tick := regexp.MustCompile(`<line class="bootstrap collapsed" x1="([\d.]+)" y1="(\d+)" x2="([\d.]+)" y2="(\d+)"`).FindStringSubmatch(rows[0][2])
		if !strings.HasPrefix(rows[0][1], "agent run") || tick == nil {
			t.Fatalf("got agent run's row %q without a collapsed-interval tick", rows[0][2])
		}
		if want := fmt.Sprint(xOf(1)); tick[1] != want || tick[3] != want || tick[2] == tick[4] {
			t.Errorf("got tick %v, want a vertical line at x %s", tick[1:], want)
		}
		if !strings.Contains(rows[1][2], `<g class="interval"`) {
			t.Errorf("got other's row (0 of 1) without its interval")
		}
		for _, want := range []string{`class="axis"`, "0%", "100%", "mean of per-task rates"} {
			if !strings.Contains(page, want) {
				t.Errorf("got a plot without %q", want)
			}
		}
	})
	t.Run("text", func(t *testing.T) {
		var buf bytes.Buffer
		WriteTextPlot(&buf, c, "")
		lines := strings.Split(buf.String(), "\n")
		row := func(prefix string) string {
			for _, l := range lines {
				if strings.HasPrefix(l, prefix+" ") {
					return l[len("agent run")+1:]
				}
			}
			t.Fatalf("got plot\n%s\nwithout a row for %s", buf.String(), prefix)
			return ""
		}
		full := row("agent run")
		if got := full[TextColumn(1)]; got != MarkCollapsed {
			t.Errorf("got %q at 100%% for 5 of 5 on two tasks, want %q:\n%s", got, MarkCollapsed, buf.String())
		}
		other := row("other    ")
		if got := other[TextColumn(0)]; got != MarkRate {
			t.Errorf("got %q at 0%% for 0 of 1, want %q:\n%s", got, MarkRate, buf.String())
		}
		if got := other[TextColumn(agentScore(t, c, "other").Interval.Hi)]; got != MarkEnd {
			t.Errorf("got %q at the interval's top for 0 of 1, want %q", got, MarkEnd)
		}
		if !strings.Contains(buf.String(), "0%") || !strings.Contains(buf.String(), "100%") {
			t.Errorf("got a plot without its axis labels:\n%s", buf.String())
		}
	})
	t.Run("an interval whose ends meet", func(t *testing.T) {
		r := 0.3
		card := SeriesCard{Agents: []AgentScore{{Agent: "p", Rate: &r, Interval: &Interval{0.3, 0.3}}}}
		var buf bytes.Buffer
		WriteTextPlot(&buf, card, "")
		l := strings.SplitN(buf.String(), "\n", 2)[0][2:]
		plot := l[:TextPlotWidth]
		if got := plot[TextColumn(0.3)]; got != MarkRate {
			t.Errorf("got %q at 30%%, want the rate", got)
		}
		if got := strings.TrimSpace(plot); got != string(MarkRate) {
			t.Errorf("got %q, want the rate's mark alone", got)
		}
	})
}

// TestIntervalReproducible: the same attempts in any order give the same
// intervals, and the interval contains the rate.
func TestIntervalReproducible(t *testing.T) {
	n := 0
	var as []apitype.Attempt
	for i, outs := range []string{"PPFPF", "F", "PPPPPPPPPF", "FFP", "PF", "PPPF"} {
		as = append(as, runs(agentA, SuiteTasks[i], outs, &n)...)
	}
	s := seriesOf(SuiteTasks...)
	first := Score([]Series{s}, as, ScoreConfig{}).Series[0].Agents[0]
	rev := make([]apitype.Attempt, len(as))
	for i, a := range as {
		rev[len(as)-1-i] = a
	}
	for i, in := range [][]apitype.Attempt{as, rev} {
		got := Score([]Series{s}, in, ScoreConfig{}).Series[0].Agents[0]
		if *got.Bootstrap != *first.Bootstrap || *got.Interval != *first.Interval || *got.Rate != *first.Rate {
			t.Errorf("run %d: got %v %v, want %v %v", i, got.Bootstrap, got.Interval, first.Bootstrap, first.Interval)
		}
	}
	r := *first.Rate
	for name, iv := range map[string]*Interval{"interval": first.Interval, "bootstrap": first.Bootstrap, "task Wilson": first.TaskWilson} {
		if iv.Lo > r || iv.Hi < r {
			t.Errorf("got %s %v, want it to contain the rate %.3f", name, iv, r)
		}
	}
	if first.Interval.Lo > first.Bootstrap.Lo || first.Interval.Hi < first.Bootstrap.Hi {
		t.Errorf("got interval %v, want it to contain the bootstrap %v", first.Interval, first.Bootstrap)
	}
	if other := Score([]Series{s}, as, ScoreConfig{Seed: 7}).Series[0].Agents[0]; *other.Bootstrap == *first.Bootstrap {
		t.Logf("seed 7 gives the same bootstrap %v", other.Bootstrap)
	}
}

// TestSeparationLines: many agents of one task set take one line each,
// not one per pair, and every pair is still said once.
func TestSeparationLines(t *testing.T) {
	var agents []AgentScore
	for i := range 44 {
		lo := float64(i%4) * 0.25 // four bands: agents of one band overlap
		agents = append(agents, AgentScore{Agent: fmt.Sprintf("a%02d", i), TaskSet: "rt-01..rt-06", Separation: &Interval{lo, lo + 0.2}})
	}
	pairs := Separate(agents)
	if len(pairs) != 44*43/2 {
		t.Fatalf("got %d pairs, want %d", len(pairs), 44*43/2)
	}
	lines := SeparationLines(pairs, len(agents))
	if len(lines) > len(agents) {
		t.Errorf("got %d lines for %d agents, want at most one per agent", len(lines), len(agents))
	}
	if got, want := lines[0], "a00: completes less than a01, a02, a03"; !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start %q", got, want)
	}
	named := 0
	for _, l := range lines {
		_, rest, _ := strings.Cut(l, ": ")
		named += len(regexp.MustCompile(`a\d\d`).FindAllString(rest, -1))
	}
	if named != len(pairs) {
		t.Errorf("got %d agents named after the first, want each of the %d pairs once", named, len(pairs))
	}
	t.Run("few agents: one sentence per pair", func(t *testing.T) {
		three := Separate(agents[:3])
		got := SeparationLines(three, 3)
		if len(got) != 3 || got[0] != three[0].Sentence {
			t.Errorf("got %q, want the pairs' sentences", got)
		}
	})
}

func TestTaskWilson(t *testing.T) {
	tests := []struct {
		name     string
		clusters []Cluster
		lo, hi   float64
		ok       bool
	}{
		// One task, whatever its attempts, is one trial.
		{"one task passed 10 of 10", []Cluster{{"a", 10, 10}}, 0.207, 1, true},
		{"two tasks, 10 of 10 and 0 of 1: one of two", []Cluster{{"a", 10, 10}, {"b", 0, 1}}, 0.095, 0.905, true},
		{"six tasks passed", agreeing(6, 0, 2), 0.610, 1, true},
		{"no attempts", []Cluster{{"a", 0, 0}}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := TaskWilson(tt.clusters)
			if ok != tt.ok {
				t.Fatalf("got ok %v, want %v", ok, tt.ok)
			}
			if ok && (math.Abs(got.Lo-tt.lo) > 0.0005 || math.Abs(got.Hi-tt.hi) > 0.0005) {
				t.Errorf("got %v, want [%.3f, %.3f]", got, tt.lo, tt.hi)
			}
		})
	}
}

// TestBootstrapMixedTasks: tasks of mixed attempts resample their
// attempts, so six tasks each passed 1 of 2 do not look certain (a
// bootstrap of tasks alone gave the point 50%).
func TestBootstrapMixedTasks(t *testing.T) {
	var cs []Cluster
	for i := range 6 {
		cs = append(cs, Cluster{Task: fmt.Sprintf("t-%d", i), Passes: 1, N: 2})
	}
	got, _ := Bootstrap(cs, BootstrapResamples, BootstrapSeed)
	if got.Lo != 0.25 || got.Hi != 0.75 {
		t.Errorf("got %v, want [0.250, 0.750]", got)
	}
}
