package draw

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"benchd.dev/client/apitype"
)

// RulesVersion names the version of the grading rules that verdicts are
// composed under (package graders: the shared rules and each grader
// kind). It is part of every series' identity: change it when a rule
// changes what passes.
const RulesVersion = "graders/1"

// BuiltinRule is the draw rule of the built-in suite's series.
const BuiltinRule = "built-in suite"

// Bootstrap defaults.
const (
	BootstrapResamples = 2000
	BootstrapSeed      = 20261004
)

// z95 is the standard normal quantile for a two-sided 95% interval.
const z95 = 1.959963984540054

// Interval is a closed interval of rates in [0, 1].
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Overlaps reports whether i and o share a point.
func (i Interval) Overlaps(o Interval) bool { return i.Lo <= o.Hi && o.Lo <= i.Hi }

// Hull returns the smallest interval that contains i and o.
func (i Interval) Hull(o Interval) Interval {
	return Interval{Lo: math.Min(i.Lo, o.Lo), Hi: math.Max(i.Hi, o.Hi)}
}

func (i Interval) String() string { return fmt.Sprintf("[%.3f, %.3f]", i.Lo, i.Hi) }

// Wilson returns the 95% Wilson score interval for k successes in n
// trials, and false when n is 0.
func Wilson(k, n int) (Interval, bool) {
	if n <= 0 || k < 0 || k > n {
		return Interval{}, false
	}
	return wilson(float64(k)/float64(n), float64(n)), true
}

// TaskWilson returns the 95% Wilson score interval of a mean rate over
// tasks: the mean of the per-task rates of clusters, counted as if each
// task with a scored attempt were one trial whose success is its rate. It
// counts tasks, not attempts, so it never claims more than the number of
// tasks shows. False when no cluster has an attempt.
func TaskWilson(clusters []Cluster) (Interval, bool) {
	mean, n := TaskMean(clusters)
	if n == 0 {
		return Interval{}, false
	}
	return wilson(mean, float64(n)), true
}

func wilson(p, nf float64) Interval {
	z2 := z95 * z95
	center := (p + z2/(2*nf)) / (1 + z2/nf)
	half := z95 / (1 + z2/nf) * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return Interval{Lo: math.Max(0, center-half), Hi: math.Min(1, center+half)}
}

// TaskMean returns the mean of the per-task rates (each task with a
// scored attempt weighs the same, whatever its number of attempts) and
// the number of such tasks.
func TaskMean(clusters []Cluster) (float64, int) {
	sum, n := 0.0, 0
	for _, c := range clusters {
		if c.N > 0 {
			sum += c.Rate()
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// Cluster is the scored attempts of one task: Passes of N.
type Cluster struct {
	Task   string `json:"task"`
	Passes int    `json:"passes"`
	N      int    `json:"n"`
}

// Rate is the cluster's pass rate, Passes/N (0 when N is 0).
func (c Cluster) Rate() float64 {
	if c.N == 0 {
		return 0
	}
	return float64(c.Passes) / float64(c.N)
}

// Bootstrap returns the percentile interval of the two-stage bootstrap of
// the mean per-task rate: each resample draws the tasks with replacement,
// then, within each drawn task, its attempts with replacement, and takes
// the mean of the drawn tasks' rates. resamples resamples seeded by seed;
// false with fewer than two clusters with attempts.
func Bootstrap(clusters []Cluster, resamples int, seed uint64) (Interval, bool) {
	cs := make([]Cluster, 0, len(clusters))
	for _, c := range clusters {
		if c.N > 0 {
			cs = append(cs, c)
		}
	}
	if len(cs) < 2 || resamples < 1 {
		return Interval{}, false
	}
	slices.SortFunc(cs, func(a, b Cluster) int { return strings.Compare(a.Task, b.Task) })
	g := NewSplitMix64(seed)
	rates := make([]float64, resamples)
	m := uint64(len(cs))
	for r := range rates {
		sum := 0.0
		for range cs {
			c := cs[g.Below(m)]
			passes := c.Passes
			if c.Passes > 0 && c.Passes < c.N { // attempts that all agree resample to themselves
				passes = 0
				for range c.N {
					if g.Below(uint64(c.N)) < uint64(c.Passes) {
						passes++
					}
				}
			}
			sum += float64(passes) / float64(c.N)
		}
		rates[r] = sum / float64(len(cs))
	}
	slices.Sort(rates)
	lo := int(math.Floor(0.025 * float64(resamples)))
	hi := int(math.Ceil(0.975*float64(resamples))) - 1
	return Interval{Lo: rates[lo], Hi: rates[max(hi, lo)]}, true
}

// Series is a task list graded under one version of the rules and drawn
// by one rule.
type Series struct {
	Name         string   `json:"name"`
	Tasks        []string `json:"tasks"`
	DrawRule     string   `json:"draw_rule"`
	RulesVersion string   `json:"rules_version"`
	// Bundles maps each task to the hash of the bundle that grades it in
	// this series ("" when no attempt and no task store says).
	Bundles map[string]string `json:"bundles"`
}

// BuiltinSeries is the series of the built-in suite, before its bundles
// are pinned.
func BuiltinSeries() Series {
	return Series{Name: BuiltinRule, Tasks: slices.Clone(SuiteTasks), DrawRule: BuiltinRule, RulesVersion: RulesVersion}
}

// ListSeries is the series of a drawn list: its name (e.g. the LIST's
// file name), its rule header and its tasks.
func ListSeries(name, rule string, tasks []string) Series {
	return Series{Name: name, Tasks: slices.Clone(tasks), DrawRule: rule, RulesVersion: RulesVersion}
}

// Pin sets the bundle of each task: store's hash (the daemon's task
// store) where it has the task, else the bundle of the newest finished
// attempt of the task in attempts.
func (s *Series) Pin(store map[string]string, attempts []apitype.Attempt) {
	s.Bundles = map[string]string{}
	newest := map[string]apitype.Attempt{}
	for _, a := range attempts {
		if a.TaskSHA256 == "" {
			continue
		}
		if b, ok := newest[a.Task]; !ok || a.Created.After(b.Created) {
			newest[a.Task] = a
		}
	}
	for _, t := range s.Tasks {
		if h := store[t]; h != "" {
			s.Bundles[t] = h
		} else {
			s.Bundles[t] = newest[t].TaskSHA256
		}
	}
}

// ID identifies the series: the first 12 hex digits of the SHA-256 of its
// task list, rules version, bundles and draw rule.
func (s Series) ID() string {
	h := sha256.New()
	fmt.Fprintf(h, "tasks %s\nrules %s\n", strings.Join(s.Tasks, " "), s.RulesVersion)
	for _, t := range s.Tasks {
		fmt.Fprintf(h, "bundle %s %s\n", t, s.Bundles[t])
	}
	fmt.Fprintf(h, "draw %s\n", s.DrawRule)
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Contains reports whether attempt a belongs to the series: its task is
// in the list and it was graded by the series' bundle of that task.
func (s Series) Contains(a apitype.Attempt) bool {
	return slices.Contains(s.Tasks, a.Task) && a.TaskSHA256 != "" && a.TaskSHA256 == s.Bundles[a.Task]
}

// AgentScore is one agent's completion rate in a series.
type AgentScore struct {
	Agent    string   `json:"agent"` // label, unique in the series
	Identity Identity `json:"identity"`
	Passes   int      `json:"passes"`
	Scored   int      `json:"scored"` // attempts with a decided verdict (pass or fail)
	Tasks    int      `json:"tasks"`  // tasks with a scored attempt
	// TaskSet names the tasks with a scored attempt, in the series'
	// order, runs of three or more shortened to "first..last". Agents are
	// compared only with agents of the same task set.
	TaskSet string `json:"task_set"`
	// PerTask is the agent's rate on each task with a scored attempt, in
	// the series' order.
	PerTask []TaskRate `json:"per_task"`
	// Not scored: infra errors, canceled attempts, and unresolved ones
	// (a verdict left to review, not yet reviewed: neither a pass nor a
	// fail).
	InfraErrors int `json:"infra_errors"`
	Canceled    int `json:"canceled"`
	Unresolved  int `json:"unresolved"`
	// Rate is the mean of the per-task rates: every task weighs the same,
	// whatever its number of attempts. Nil when nothing was scored.
	Rate *float64 `json:"rate"`
	// TaskWilson is the Wilson interval over tasks (TaskWilson); nil when
	// nothing was scored.
	TaskWilson *Interval `json:"task_wilson"`
	// Bootstrap is the two-stage bootstrap interval (Bootstrap); nil with
	// fewer than two tasks.
	Bootstrap *Interval `json:"bootstrap"`
	// Interval is the reported 95% interval of Rate: the bootstrap
	// widened to contain TaskWilson (which always contains Rate), or
	// TaskWilson alone with one task. Nil when nothing was scored.
	Interval *Interval `json:"interval"`
	// Separation is Interval when the agent can be separated from
	// another (two tasks or more), else nil.
	Separation *Interval `json:"separation"`
	Note       string    `json:"note,omitempty"` // why an interval is missing
	// Model sums the model usage of every attempt of the agent in the
	// series, scored or not (an infra error's calls cost as much); nil
	// when none called a model through an HTTP gateway.
	Model *apitype.ModelUsage `json:"model,omitempty"`
}

// TaskRate is an agent's scored attempts of one task and their rate.
type TaskRate struct {
	Task   string  `json:"task"`
	Passes int     `json:"passes"`
	N      int     `json:"n"`
	Rate   float64 `json:"rate"`
}

// Pair says whether two agents can be separated.
type Pair struct {
	A         string `json:"a"`
	B         string `json:"b"`
	Separated bool   `json:"separated"`
	Higher    string `json:"higher,omitempty"` // set only when separated
	Sentence  string `json:"sentence"`
}

// AttemptOutcome is what happened in one attempt.
type AttemptOutcome struct {
	ID         string           `json:"id"`
	Outcome    string           `json:"outcome"` // pass, fail, unresolved, infra error, canceled
	Reasons    []apitype.Reason `json:"reasons"`
	InfraError string           `json:"infra_error,omitempty"`
	Created    time.Time        `json:"created"`
}

// AgentOutcomes are one agent's attempts of one task, oldest first, and
// its rate on the task.
type AgentOutcomes struct {
	Agent    string           `json:"agent"`
	Passes   int              `json:"passes"`
	Scored   int              `json:"scored"`
	Rate     *float64         `json:"rate"` // Passes/Scored; nil when nothing was scored
	Attempts []AttemptOutcome `json:"attempts"`
	// Model sums the model usage of these attempts; nil without any.
	Model *apitype.ModelUsage `json:"model,omitempty"`
}

// TaskOutcomes lists, for one task, what happened to each agent.
type TaskOutcomes struct {
	Task   string          `json:"task"`
	Agents []AgentOutcomes `json:"agents"`
	// LeftOut counts this task's attempts graded by another bundle.
	LeftOut int `json:"left_out"`
}

// SeriesCard is the scorecard of one series.
type SeriesCard struct {
	ID     string     `json:"id"`
	Series Series     `json:"series"`
	First  *time.Time `json:"first"` // the first attempt's creation; nil when there is none
	Last   *time.Time `json:"last"`
	// Agents are listed by name, not by rate.
	Agents []AgentScore `json:"agents"`
	// Separation compares pairs of agents of one task set only.
	Separation []Pair `json:"separation"`
	// NotCompared has one line per task set when the agents were
	// measured on more than one: its agents are not compared with the
	// others'.
	NotCompared []string       `json:"not_compared"`
	Tasks       []TaskOutcomes `json:"tasks"`
	LeftOut     int            `json:"left_out"`   // attempts graded by another bundle
	Unfinished  int            `json:"unfinished"` // queued or running
	// Retried counts the infra errors left out because another attempt
	// retries them: a run's slot counts once, by the end of its chain.
	Retried int `json:"retried,omitempty"`
	// InfraOnly counts the infra errors of agents that have nothing
	// else: they are not rows (the agent never ran).
	InfraOnly int `json:"infra_only"`
	// GroupedBy says what an agent row groups attempts by
	// (AgentsGroupedBy).
	GroupedBy  string `json:"grouped_by"`
	Unresolved int    `json:"unresolved"` // verdicts left to review, not scored
	Resamples  int    `json:"resamples"`
	Seed       uint64 `json:"seed"`
}

// Scorecard is every series, side by side.
type Scorecard struct {
	RulesVersion string       `json:"rules_version"`
	Series       []SeriesCard `json:"series"`
}

// ScoreConfig says how to score.
type ScoreConfig struct {
	Resamples int    // BootstrapResamples when 0
	Seed      uint64 // BootstrapSeed when 0
}

// Score computes the scorecard of each series (bundles pinned) from
// attempts (any order; those of no series are ignored).
func Score(series []Series, attempts []apitype.Attempt, cfg ScoreConfig) Scorecard {
	if cfg.Resamples <= 0 {
		cfg.Resamples = BootstrapResamples
	}
	if cfg.Seed == 0 {
		cfg.Seed = BootstrapSeed
	}
	sc := Scorecard{RulesVersion: RulesVersion, Series: []SeriesCard{}}
	for _, s := range series {
		sc.Series = append(sc.Series, scoreSeries(s, attempts, cfg))
	}
	return sc
}

func scoreSeries(s Series, all []apitype.Attempt, cfg ScoreConfig) SeriesCard {
	card := SeriesCard{ID: s.ID(), Series: s, GroupedBy: AgentsGroupedBy, Agents: []AgentScore{}, Separation: []Pair{}, NotCompared: []string{}, Tasks: []TaskOutcomes{},
		Resamples: cfg.Resamples, Seed: cfg.Seed}
	leftOut := map[string]int{}
	var in []apitype.Attempt
	for _, a := range all {
		switch {
		case !slices.Contains(s.Tasks, a.Task):
		case a.RetriedBy != "":
			card.Retried++
		case a.State == apitype.StateQueued || a.State == apitype.StateRunning:
			card.Unfinished++
		case !s.Contains(a):
			leftOut[a.Task]++
			card.LeftOut++
		default:
			in = append(in, a)
		}
	}
	slices.SortStableFunc(in, func(a, b apitype.Attempt) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
	})
	if len(in) > 0 {
		f, l := in[0].Created, in[len(in)-1].Created
		card.First, card.Last = &f, &l
	}

	// Agents by group (AgentGroupOf), labelled.
	type agentAcc struct {
		score    AgentScore
		clusters map[string]*Cluster
		group    AgentGroup
	}
	accs := map[string]*agentAcc{}
	var keys []string
	for _, a := range in {
		g := AgentGroupOf(a.Agent)
		acc, ok := accs[g.Key]
		if !ok {
			id := IdentityOf(a.Agent)
			if id.Spec != "" {
				id.SHA256 = "" // a built-in's overlay hash is per task
			}
			acc = &agentAcc{score: AgentScore{Identity: id}, clusters: map[string]*Cluster{}}
			accs[g.Key] = acc
			keys = append(keys, g.Key)
		}
		acc.group = g // the newest spec names the agent
		acc.score.Model = addModel(acc.score.Model, a.Model)
		switch {
		case a.Unresolved():
			acc.score.Unresolved++
			card.Unresolved++
		case a.State == apitype.StateDone:
			c := acc.clusters[a.Task]
			if c == nil {
				c = &Cluster{Task: a.Task}
				acc.clusters[a.Task] = c
			}
			c.N++
			acc.score.Scored++
			if a.Pass {
				c.Passes++
				acc.score.Passes++
			}
		case a.State == apitype.StateInfraError:
			acc.score.InfraErrors++
		case a.State == apitype.StateCanceled:
			acc.score.Canceled++
		}
	}
	// An agent that never got past an infra error is no row: the harness
	// failed, the agent never ran. Its attempts are counted apart.
	keys = slices.DeleteFunc(keys, func(k string) bool {
		sc := accs[k].score
		if sc.Scored+sc.Unresolved+sc.Canceled == 0 {
			card.InfraOnly += sc.InfraErrors
			return true
		}
		return false
	})
	labels := map[string]string{}
	count := map[string]int{}
	for _, k := range keys {
		labels[k] = accs[k].group.Label
		count[labels[k]]++
	}
	for _, k := range keys { // two agents with one label: tell them apart
		if count[labels[k]] > 1 {
			labels[k] += " #" + accs[k].group.Tag()
		}
	}
	for _, k := range keys {
		acc := accs[k]
		score := acc.score
		score.Agent = labels[k]
		var cs []Cluster
		for _, t := range s.Tasks {
			if c := acc.clusters[t]; c != nil {
				cs = append(cs, *c)
			}
		}
		score.Tasks = len(cs)
		score.PerTask = []TaskRate{}
		var set []string
		for _, c := range cs {
			score.PerTask = append(score.PerTask, TaskRate{Task: c.Task, Passes: c.Passes, N: c.N, Rate: c.Rate()})
			set = append(set, c.Task)
		}
		score.TaskSet = TaskSetText(s.Tasks, set)
		if w, ok := TaskWilson(cs); ok {
			r, _ := TaskMean(cs)
			iv := w
			score.Rate, score.TaskWilson, score.Interval = &r, &w, &iv
		} else {
			score.Note = "no scored attempt"
		}
		if b, ok := Bootstrap(cs, cfg.Resamples, cfg.Seed); ok {
			score.Bootstrap = &b
			sep := b.Hull(*score.TaskWilson)
			score.Interval, score.Separation = &sep, &sep
		} else if score.Note == "" {
			score.Note = "one task: no bootstrap interval, separated from no one"
		}
		card.Agents = append(card.Agents, score)
	}
	slices.SortFunc(card.Agents, func(a, b AgentScore) int { return strings.Compare(a.Agent, b.Agent) })
	card.Separation = Separate(card.Agents)
	card.NotCompared = NotCompared(card.Agents)

	// Per-task outcomes.
	for _, t := range s.Tasks {
		to := TaskOutcomes{Task: t, Agents: []AgentOutcomes{}, LeftOut: leftOut[t]}
		byAgent := map[string]*AgentOutcomes{}
		var order []string
		for _, a := range in {
			if a.Task != t {
				continue
			}
			label, ok := labels[AgentGroupOf(a.Agent).Key]
			if !ok {
				continue // an agent with infra errors only
			}
			ao := byAgent[label]
			if ao == nil {
				ao = &AgentOutcomes{Agent: label, Attempts: []AttemptOutcome{}}
				byAgent[label] = ao
				order = append(order, label)
			}
			reasons := a.Reasons
			if reasons == nil {
				reasons = []apitype.Reason{}
			}
			ao.Attempts = append(ao.Attempts, AttemptOutcome{ID: a.ID, Outcome: Outcome(a), Reasons: reasons,
				InfraError: a.InfraError, Created: a.Created})
			ao.Model = addModel(ao.Model, a.Model)
		}
		slices.Sort(order)
		for _, l := range order {
			ao := byAgent[l]
			for _, at := range ao.Attempts {
				switch at.Outcome {
				case "pass":
					ao.Passes++
					ao.Scored++
				case "fail":
					ao.Scored++
				}
			}
			if ao.Scored > 0 {
				r := float64(ao.Passes) / float64(ao.Scored)
				ao.Rate = &r
			}
			to.Agents = append(to.Agents, *ao)
		}
		card.Tasks = append(card.Tasks, to)
	}
	return card
}

// Separate compares every pair of agents of one task set (in the order
// given) by their separation intervals; agents of different task sets
// are not compared (see NotCompared). Agents without a separation
// interval are separated from no one.
func Separate(agents []AgentScore) []Pair {
	pairs := []Pair{}
	for i := range agents {
		for j := i + 1; j < len(agents); j++ {
			a, b := agents[i], agents[j]
			if a.TaskSet != b.TaskSet {
				continue
			}
			p := Pair{A: a.Agent, B: b.Agent}
			switch {
			case a.Separation == nil || b.Separation == nil:
				p.Sentence = fmt.Sprintf("%s and %s cannot be separated (too few tasks for an interval)", a.Agent, b.Agent)
			case a.Separation.Overlaps(*b.Separation):
				p.Sentence = fmt.Sprintf("%s and %s cannot be separated: their intervals overlap", a.Agent, b.Agent)
			default:
				p.Separated = true
				hi, lo := a, b
				if b.Separation.Lo > a.Separation.Hi {
					hi, lo = b, a
				}
				p.Higher = hi.Agent
				p.Sentence = fmt.Sprintf("%s completes more than %s: their intervals do not overlap", hi.Agent, lo.Agent)
			}
			pairs = append(pairs, p)
		}
	}
	return pairs
}

// NotCompared returns, when agents were measured on more than one task
// set, one line per task set (in order of first appearance) naming its
// agents and its tasks: they are compared with no agent of another set.
// With one task set or none it returns no line.
func NotCompared(agents []AgentScore) []string {
	var sets []string
	by := map[string][]string{}
	for _, a := range agents {
		if _, ok := by[a.TaskSet]; !ok {
			sets = append(sets, a.TaskSet)
		}
		by[a.TaskSet] = append(by[a.TaskSet], a.Agent)
	}
	lines := []string{}
	if len(sets) < 2 {
		return lines
	}
	for _, set := range sets {
		names := by[set]
		verb := "has"
		if len(names) > 1 {
			verb = "have"
		}
		what := set
		if what == "" {
			what = "no scored task"
		}
		lines = append(lines, fmt.Sprintf("not compared: measured on different task sets: %s %s %s", strings.Join(names, ", "), verb, what))
	}
	return lines
}

// TaskSetText names set (a subset of order) in order's order: runs of
// three or more tasks adjacent in order are written "first..last", the
// rest joined by commas.
func TaskSetText(order, set []string) string {
	in := map[string]bool{}
	for _, t := range set {
		in[t] = true
	}
	var parts, run []string
	flush := func() {
		if len(run) >= 3 {
			parts = append(parts, run[0]+".."+run[len(run)-1])
		} else {
			parts = append(parts, run...)
		}
		run = nil
	}
	for _, t := range order {
		if in[t] {
			run = append(run, t)
			delete(in, t)
		} else if len(run) > 0 {
			flush()
		}
	}
	if len(run) > 0 {
		flush()
	}
	var rest []string // tasks not in order, if any
	for t := range in {
		rest = append(rest, t)
	}
	slices.Sort(rest)
	return strings.Join(append(parts, rest...), ",")
}

// ReadListSeries is the series of a draw LIST (benchctl draw -o LIST)
// named name: its rule header is the lines before the first blank line,
// its tasks the second field of each line of its "tasks" section.
func ReadListSeries(name string, list []byte) (Series, error) {
	lines := strings.Split(strings.ReplaceAll(string(list), "\r\n", "\n"), "\n")
	var head, tasks []string
	inHead, inTasks := true, false
	for _, l := range lines {
		switch {
		case inHead && l == "":
			inHead = false
		case inHead:
			head = append(head, l)
		case l == "tasks":
			inTasks = true
		case l == "" || l == "counts":
			inTasks = false
		case inTasks:
			if f := strings.Fields(l); len(f) >= 2 {
				tasks = append(tasks, f[1])
			}
		}
	}
	if len(head) == 0 || head[0] == "" {
		return Series{}, fmt.Errorf("list %s: no rule header: %w", name, ErrInvalid)
	}
	if len(tasks) == 0 {
		return Series{}, fmt.Errorf("list %s: no tasks section: %w", name, ErrInvalid)
	}
	return ListSeries(name, strings.Join(head, "; "), tasks), nil
}

// addModel adds u to sum, which it makes on the first usage; nil stays
// nil while no usage was added.
func addModel(sum, u *apitype.ModelUsage) *apitype.ModelUsage {
	if u == nil {
		return sum
	}
	if sum == nil {
		sum = &apitype.ModelUsage{}
	}
	sum.Add(*u)
	return sum
}

// ModelText is a model usage in a few words: "3 calls, 1200/30 tokens
// in/out, 2 tool calls, $0.0042"; "-" for none.
func ModelText(u *apitype.ModelUsage) string {
	if u == nil {
		return "-"
	}
	s := fmt.Sprintf("%d calls, %d/%d tokens in/out, %d tool calls", u.Calls, u.InputTokens, u.OutputTokens, u.ToolCalls)
	if u.CostUSD != nil {
		s += fmt.Sprintf(", $%.4f", *u.CostUSD)
		if u.Unpriced > 0 {
			s += fmt.Sprintf(" (+%d unpriced)", u.Unpriced)
		}
	}
	return s
}
