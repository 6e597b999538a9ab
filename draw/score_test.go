package draw

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

func TestWilson(t *testing.T) {
	tests := []struct {
		name   string
		k, n   int
		lo, hi float64
		ok     bool
	}{
		{"8 of 10", 8, 10, 0.490, 0.943, true},
		{"0 of 10", 0, 10, 0.000, 0.278, true},
		{"10 of 10", 10, 10, 0.722, 1.000, true},
		{"5 of 10", 5, 10, 0.237, 0.763, true},
		{"1 of 1", 1, 1, 0.207, 1.000, true},
		{"25 of 50", 25, 50, 0.366, 0.634, true},
		{"nothing", 0, 0, 0, 0, false},
		{"more passes than trials", 3, 2, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Wilson(tt.k, tt.n)
			if ok != tt.ok {
				t.Fatalf("got ok %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if math.Abs(got.Lo-tt.lo) > 0.0005 || math.Abs(got.Hi-tt.hi) > 0.0005 {
				t.Errorf("got %v, want [%.3f, %.3f]", got, tt.lo, tt.hi)
			}
		})
	}
}

// agreeing makes tasks whose attempts all agree: pass tasks of n passes
// and fail tasks of n fails.
func agreeing(pass, fail, n int) []Cluster {
	var cs []Cluster
	for i := range pass + fail {
		c := Cluster{Task: fmt.Sprintf("t-%02d", i), N: n}
		if i < pass {
			c.Passes = n
		}
		cs = append(cs, c)
	}
	return cs
}

func TestBootstrap(t *testing.T) {
	mixed := []Cluster{{"a", 3, 5}, {"b", 1, 5}, {"c", 5, 5}, {"d", 2, 5}, {"e", 4, 5}, {"f", 0, 5}}
	tests := []struct {
		name           string
		clusters       []Cluster
		ok             bool
		widerThanWilso bool // the bootstrap interval is wider than Wilson's
	}{
		{"attempts of a task agree", agreeing(5, 5, 5), true, true},
		{"many attempts per agreeing task", agreeing(6, 4, 10), true, true},
		{"mixed tasks", mixed, true, false},
		{"one task", agreeing(1, 0, 5), false, false},
		{"no tasks", nil, false, false},
		{"tasks without attempts do not count", []Cluster{{"a", 1, 1}, {"b", 0, 0}}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Bootstrap(tt.clusters, BootstrapResamples, BootstrapSeed)
			if ok != tt.ok {
				t.Fatalf("got ok %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			again, _ := Bootstrap(tt.clusters, BootstrapResamples, BootstrapSeed)
			if again != got {
				t.Errorf("got %v then %v with one seed, want the same", got, again)
			}
			// Input order does not matter: clusters are sorted by task.
			rev := make([]Cluster, len(tt.clusters))
			for i, c := range tt.clusters {
				rev[len(rev)-1-i] = c
			}
			if r, _ := Bootstrap(rev, BootstrapResamples, BootstrapSeed); r != got {
				t.Errorf("got %v reversed, want %v", r, got)
			}
			k, n := 0, 0
			for _, c := range tt.clusters {
				k, n = k+c.Passes, n+c.N
			}
			rate, _ := TaskMean(tt.clusters) // the bootstrap's estimand
			if got.Lo > rate || got.Hi < rate {
				t.Errorf("got %v, want it to contain the rate %.3f", got, rate)
			}
			w, _ := Wilson(k, n)
			if wider := got.Hi-got.Lo > w.Hi-w.Lo; tt.widerThanWilso && !wider {
				t.Errorf("got bootstrap %v, not wider than Wilson %v", got, w)
			}
		})
	}
	t.Run("another seed gives another interval", func(t *testing.T) {
		cs := []Cluster{{"a", 3, 7}, {"b", 1, 5}, {"c", 5, 6}, {"d", 2, 9}, {"e", 4, 5}, {"f", 0, 3}, {"g", 2, 2}}
		seen := map[Interval]bool{}
		for seed := uint64(1); seed <= 5; seed++ {
			got, _ := Bootstrap(cs, 40, seed)
			seen[got] = true
		}
		if len(seen) < 2 {
			t.Errorf("got %v for seeds 1 to 5, want the seed to matter", seen)
		}
	})
	t.Run("known interval", func(t *testing.T) {
		// 5 of 10 tasks pass every attempt: resample rates are k/10 with k
		// binomial(10, 1/2), so the 2.5% and 97.5% points are 0.2 and 0.8.
		got, _ := Bootstrap(agreeing(5, 5, 5), BootstrapResamples, BootstrapSeed)
		if got.Lo != 0.2 || got.Hi != 0.8 {
			t.Errorf("got %v, want [0.200, 0.800]", got)
		}
	})
}

func f64(v float64) *float64 { return &v }

func TestSeparate(t *testing.T) {
	score := func(name string, lo, hi float64) AgentScore {
		return AgentScore{Agent: name, Rate: f64((lo + hi) / 2), Separation: &Interval{lo, hi}}
	}
	tests := []struct {
		name       string
		a, b       AgentScore
		wantSep    bool
		wantHigher string
		wantWords  string
	}{
		{"overlapping", score("x", 0.4, 0.7), score("y", 0.6, 0.9), false, "", "x and y cannot be separated"},
		{"touching", score("x", 0.4, 0.6), score("y", 0.6, 0.9), false, "", "cannot be separated"},
		{"apart, higher second", score("x", 0.1, 0.3), score("y", 0.6, 0.9), true, "y", "y completes more than x"},
		{"apart, higher first", score("x", 0.7, 0.9), score("y", 0.1, 0.5), true, "x", "x completes more than y"},
		{"no interval", AgentScore{Agent: "x", Rate: f64(1)}, score("y", 0.0, 0.1), false, "", "cannot be separated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := Separate([]AgentScore{tt.a, tt.b})
			if len(ps) != 1 {
				t.Fatalf("got %d pairs, want 1", len(ps))
			}
			p := ps[0]
			if p.Separated != tt.wantSep || p.Higher != tt.wantHigher {
				t.Errorf("got separated %v higher %q, want %v %q", p.Separated, p.Higher, tt.wantSep, tt.wantHigher)
			}
			if !strings.Contains(p.Sentence, tt.wantWords) {
				t.Errorf("got %q, want it to contain %q", p.Sentence, tt.wantWords)
			}
		})
	}
}

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// attempt makes a finished attempt of task by agent, graded by bundle.
func attempt(id, task string, agent apitype.AgentIdentity, outcome string, bundle string, at int) apitype.Attempt {
	a := apitype.Attempt{ID: id, Task: task, Agent: agent, State: apitype.StateDone, TaskSHA256: bundle,
		Created: t0.Add(time.Duration(at) * time.Hour)}
	switch outcome {
	case "pass":
		a.Pass, a.Reward = true, 1
	case "fail":
		a.Reasons = []apitype.Reason{{Code: "tests_failed", Message: "2 hidden tests failed"}}
	case "infra":
		a.State, a.InfraError = apitype.StateInfraError, "mount failed"
	case "running":
		a.State, a.TaskSHA256 = apitype.StateRunning, ""
	}
	return a
}

// fixtureAttempts: agent A passes everything, agent B fails everything
// but rt-02, on the six suite tasks (two attempts each, bundle "v1"),
// plus older attempts graded by bundle "v0" and an attempt of a task of
// no series.
func fixtureAttempts() []apitype.Attempt {
	var as []apitype.Attempt
	n := 0
	for i, task := range SuiteTasks {
		for j := range 2 {
			n++
			as = append(as, attempt(fmt.Sprintf("a-%02d", n), task, agentA, "pass", "v1-"+task, 10+i*2+j))
			n++
			out := "fail"
			if task == "rt-02" {
				out = "pass"
			}
			as = append(as, attempt(fmt.Sprintf("a-%02d", n), task, agentB, out, "v1-"+task, 10+i*2+j))
		}
	}
	as = append(as,
		attempt("old-1", "rt-01", agentB, "pass", "v0-rt-01", 1),
		attempt("old-2", "rt-01", agentB, "pass", "v0-rt-01", 2),
		attempt("inf-1", "rt-03", agentA, "infra", "v1-rt-03", 40),
		attempt("run-1", "rt-04", agentA, "running", "", 41),
		attempt("lib-1", "lib-0007", agentA, "pass", "v1-lib-0007", 42),
	)
	return as
}

func storeHashes() map[string]string {
	m := map[string]string{}
	for _, t := range SuiteTasks {
		m[t] = "v1-" + t
	}
	return m
}

func TestScoreSeries(t *testing.T) {
	as := fixtureAttempts()
	suite := BuiltinSeries()
	suite.Pin(storeHashes(), as)
	list := ListSeries("batch.list", "seed 20261004, cap 2", []string{"rt-01", "lib-0007"})
	list.Pin(map[string]string{"rt-01": "v1-rt-01"}, as)
	older := BuiltinSeries()
	older.Pin(map[string]string{"rt-01": "v0-rt-01"}, as)

	sc := Score([]Series{suite, list, older}, as, ScoreConfig{})
	if len(sc.Series) != 3 {
		t.Fatalf("got %d series, want 3", len(sc.Series))
	}
	ids := map[string]bool{}
	for _, c := range sc.Series {
		ids[c.ID] = true
	}
	if len(ids) != 3 {
		t.Errorf("got series ids %v, want 3 different ones", ids)
	}

	s := sc.Series[0]
	t.Run("suite", func(t *testing.T) {
		if s.LeftOut != 2 || s.Tasks[0].LeftOut != 2 {
			t.Errorf("got %d left out (%d of rt-01), want 2 of rt-01", s.LeftOut, s.Tasks[0].LeftOut)
		}
		if s.Unfinished != 1 {
			t.Errorf("got %d unfinished, want 1", s.Unfinished)
		}
		if got, want := s.First.Format(time.RFC3339), t0.Add(10*time.Hour).Format(time.RFC3339); got != want {
			t.Errorf("got first %s, want %s", got, want)
		}
		if got, want := s.Last.Format(time.RFC3339), t0.Add(40*time.Hour).Format(time.RFC3339); got != want {
			t.Errorf("got last %s, want %s", got, want)
		}
		if len(s.Agents) != 2 || s.Agents[0].Agent != "agent run" || s.Agents[1].Agent != "other" {
			t.Fatalf("got agents %+v, want agent run and other, by name", s.Agents)
		}
		a, b := s.Agents[0], s.Agents[1]
		if a.Passes != 12 || a.Scored != 12 || a.InfraErrors != 1 || a.Tasks != 6 {
			t.Errorf("got A %d of %d, %d infra, %d tasks; want 12 of 12, 1 infra, 6 tasks", a.Passes, a.Scored, a.InfraErrors, a.Tasks)
		}
		if b.Passes != 2 || b.Scored != 12 {
			t.Errorf("got B %d of %d, want 2 of 12", b.Passes, b.Scored)
		}
		if a.Bootstrap == nil || a.Bootstrap.Lo != 1 {
			t.Errorf("got A bootstrap %v, want it collapsed at 1", a.Bootstrap)
		}
		if a.Separation == nil || a.Separation.Lo != a.TaskWilson.Lo {
			t.Errorf("got A separation %v, want it to reach down to the task Wilson's %v", a.Separation, a.TaskWilson)
		}
		if len(s.Separation) != 1 || !s.Separation[0].Separated || s.Separation[0].Higher != "agent run" {
			t.Errorf("got separation %+v, want agent run above other", s.Separation)
		}
		rt01 := s.Tasks[0]
		if len(rt01.Agents) != 2 {
			t.Fatalf("got %d agents on rt-01, want 2", len(rt01.Agents))
		}
		var outs []string
		for _, o := range rt01.Agents[1].Attempts {
			outs = append(outs, o.Outcome)
		}
		if got := strings.Join(outs, ", "); got != "fail, fail" {
			t.Errorf("got other's rt-01 outcomes %q, want %q", got, "fail, fail")
		}
		var rt03 []string
		for _, o := range s.Tasks[2].Agents[0].Attempts {
			rt03 = append(rt03, o.Outcome)
		}
		if got := strings.Join(rt03, ", "); got != "pass, pass, infra error" {
			t.Errorf("got agent run's rt-03 outcomes %q, want %q", got, "pass, pass, infra error")
		}
	})
	t.Run("list", func(t *testing.T) {
		l := sc.Series[1]
		if l.Series.DrawRule != "seed 20261004, cap 2" {
			t.Errorf("got draw rule %q", l.Series.DrawRule)
		}
		// lib-0007's bundle comes from its newest attempt.
		if len(l.Tasks) != 2 || len(l.Tasks[1].Agents) != 1 || l.Tasks[1].Agents[0].Attempts[0].ID != "lib-1" {
			t.Errorf("got tasks %+v, want lib-0007 with lib-1", l.Tasks)
		}
		if l.Agents[0].Scored != 3 {
			t.Errorf("got %d scored for agent run, want 3 (2 of rt-01, 1 of lib-0007)", l.Agents[0].Scored)
		}
	})
	t.Run("older rules", func(t *testing.T) {
		o := sc.Series[2]
		if len(o.Agents) != 2 {
			t.Fatalf("got %d agents, want 2", len(o.Agents))
		}
		// Only rt-01's two v0 attempts belong here; every other task's
		// bundle is its newest attempt's (v1).
		var b AgentScore
		for _, a := range o.Agents {
			if a.Agent == "other" {
				b = a
			}
		}
		if b.Passes != 2+2 || b.Scored != 2+10 {
			t.Errorf("got other %d of %d, want 4 of 12", b.Passes, b.Scored)
		}
	})
}

func TestSeriesID(t *testing.T) {
	base := BuiltinSeries()
	base.Pin(storeHashes(), nil)
	changed := func(f func(s *Series)) Series {
		s := BuiltinSeries()
		s.Pin(storeHashes(), nil)
		f(&s)
		return s
	}
	tests := []struct {
		name string
		s    Series
		same bool
	}{
		{"same", changed(func(s *Series) {}), true},
		{"name does not matter", changed(func(s *Series) { s.Name = "x" }), true},
		{"a bundle", changed(func(s *Series) { s.Bundles["rt-04"] = "v2" }), false},
		{"the rules version", changed(func(s *Series) { s.RulesVersion = "graders/2" }), false},
		{"the draw rule", changed(func(s *Series) { s.DrawRule = "seed 1" }), false},
		{"the task list", changed(func(s *Series) { s.Tasks = s.Tasks[:5] }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.ID() == base.ID(); got != tt.same {
				t.Errorf("got same id %v, want %v", got, tt.same)
			}
		})
	}
}
