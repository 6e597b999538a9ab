package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"benchd.dev/client/apitype"
)

// A run's progress, as run --tasks/--list and wait show it while the
// run goes on. It is drawn from the run's status (GET
// /v1/runs/{id}/status): one attempt per slot of the run, an infra error
// benchd retried counted as its retry. Three forms:
//
//   - on a terminal, a table redrawn in place: per host when the
//     attempts name one, then the whole run, and an estimate of the time
//     left;
//   - off a terminal, plain lines: one every --every (default
//     defaultEvery), and one as each attempt ends;
//   - with --json, newline-delimited JSON, one progressEvent a line.

// runCounts counts a run's slots by where they are.
type runCounts struct {
	Attempts int `json:"attempts"` // slots of the run
	Done     int `json:"done"`     // ended, however: the sum of the next five
	Passed   int `json:"passed"`
	Failed   int `json:"failed"`
	Review   int `json:"review"` // left to review: neither passed nor failed
	Infra    int `json:"infra"`
	Canceled int `json:"canceled"`
	Running  int `json:"running"`
	Queued   int `json:"queued"`
}

func (c *runCounts) add(a apitype.Attempt) {
	c.Attempts++
	switch a.State {
	case apitype.StateQueued:
		c.Queued++
		return
	case apitype.StateRunning:
		c.Running++
		return
	case apitype.StateDone:
		switch {
		case a.Unresolved():
			c.Review++
		case a.Pass:
			c.Passed++
		default:
			c.Failed++
		}
	case apitype.StateInfraError:
		c.Infra++
	case apitype.StateCanceled:
		c.Canceled++
	default:
		c.Queued++ // a state this benchctl does not know: not ended
		return
	}
	c.Done++
}

// hostCounts are the counts of the attempts of one host.
type hostCounts struct {
	Host string `json:"host"` // "" for the attempts no host has taken yet
	runCounts
}

// runView is what the progress forms show of a run at one moment.
type runView struct {
	Run   string       `json:"run,omitempty"` // "" for a set of attempts that is not a run (setProgress)
	Total runCounts    `json:"counts"`
	Hosts []hostCounts `json:"hosts,omitempty"` // by host name; only when some attempt names its host
	// ETAMS estimates the time left, in milliseconds: the attempts not
	// ended, times the mean time of the attempts that ran to their end
	// so far, divided by how many run at once (eta). -1 while no attempt has
	// ended (nothing to estimate from).
	ETAMS int64 `json:"eta_ms"`
}

// viewOf summarizes slots, the run's attempts, with concurrency the
// number of attempts benchd runs at once (0 when not known).
func viewOf(run string, slots []apitype.Attempt, concurrency int) runView {
	v := runView{Run: run, ETAMS: -1}
	byHost := map[string]*hostCounts{}
	named := false
	for _, a := range slots {
		v.Total.add(a)
		if a.Host != "" {
			named = true
		}
		h := byHost[a.Host]
		if h == nil {
			h = &hostCounts{Host: a.Host}
			byHost[a.Host] = h
		}
		h.add(a)
	}
	if named {
		for _, h := range byHost {
			v.Hosts = append(v.Hosts, *h)
		}
		slices.SortFunc(v.Hosts, func(a, b hostCounts) int { return strings.Compare(a.Host, b.Host) })
	}
	v.ETAMS = eta(slots, concurrency)
	return v
}

// eta is runView.ETAMS of slots. The mean is of the attempts that
// started and ended by themselves, done or an infra error (their whole
// time, grading included; a canceled one says nothing of it); the attempts
// left are divided among max(concurrency, running) at once, at most one
// each.
func eta(slots []apitype.Attempt, concurrency int) int64 {
	var sum time.Duration
	n, left, running := 0, 0, 0
	for _, a := range slots {
		switch {
		case a.State == apitype.StateRunning:
			running++
			left++
		case !finished(a):
			left++
		case a.State != apitype.StateCanceled && a.Started != nil && a.Finished != nil:
			sum += a.Finished.Sub(*a.Started)
			n++
		}
	}
	if left == 0 {
		return 0
	}
	if n == 0 {
		return -1
	}
	par := min(max(concurrency, running, 1), left)
	mean := sum / time.Duration(n)
	return (mean * time.Duration(left) / time.Duration(par)).Milliseconds()
}

// formatETA renders an estimate: "?" while there is none.
func formatETA(ms int64) string {
	if ms < 0 {
		return "?"
	}
	return formatMS(ms)
}

// countsText is counts as words, the empty ones left out but done.
func countsText(c runCounts) string {
	parts := []string{fmt.Sprintf("%d of %d done", c.Done, c.Attempts)}
	for _, p := range []struct {
		n    int
		word string
	}{{c.Passed, "passed"}, {c.Failed, "failed"}, {c.Review, "left to review"}, {c.Infra, "infra errors"},
		{c.Canceled, "canceled"}, {c.Running, "running"}, {c.Queued, "queued"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.word))
		}
	}
	return strings.Join(parts, ", ")
}

// plainLine is the periodic line off a terminal.
func (v runView) plainLine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s: %s", v.Run, countsText(v.Total))
	for _, h := range v.Hosts {
		if h.Host != "" && h.Running > 0 {
			fmt.Fprintf(&b, "; %s running %d", h.Host, h.Running)
		}
	}
	if v.Total.Done < v.Total.Attempts {
		fmt.Fprintf(&b, "; eta %s", formatETA(v.ETAMS))
	}
	return b.String()
}

// endLine is the line of an attempt that ended, off a terminal.
func endLine(a apitype.Attempt, v runView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s", a.ID, a.Task, verdict(a))
	if a.Started != nil && a.Finished != nil {
		// Two times, each named: the attempt's, set-up and grading
		// included, and the agent's alone, the table's WALL.
		fmt.Fprintf(&b, ", attempt %s", formatMS(a.Finished.Sub(*a.Started).Milliseconds()))
		if a.HasAgentEnd() {
			fmt.Fprintf(&b, ", agent wall %s", formatMS(a.WallMS))
		}
	}
	if a.Host != "" {
		fmt.Fprintf(&b, " on %s", a.Host)
	}
	if codes := reasonCodes(a); codes != "" && codes != "-" {
		fmt.Fprintf(&b, " (%s)", oneLine(codes, 120))
	}
	fmt.Fprintf(&b, " [%d of %d done]", v.Total.Done, v.Total.Attempts)
	return b.String()
}

// tableLines is the table drawn on a terminal: a row per host when the
// attempts name hosts ("-" for those no host has taken yet), a row for
// the whole run, and the estimate.
func (v runView) tableLines() []string {
	var b bytes.Buffer
	tw := newTable(&b)
	fmt.Fprintln(tw, "HOST\tDONE\tPASSED\tFAILED\tREVIEW\tINFRA\tCANCELED\tRUNNING\tQUEUED")
	row := func(name string, c runCounts) {
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", name, c.Done, c.Attempts,
			c.Passed, c.Failed, c.Review, c.Infra, c.Canceled, c.Running, c.Queued)
	}
	for _, h := range v.Hosts {
		name := h.Host
		if name == "" {
			name = "-"
		}
		row(name, h.runCounts)
	}
	row("all", v.Total)
	tw.Flush()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	eta := "done"
	if v.Total.Done < v.Total.Attempts {
		eta = "eta " + formatETA(v.ETAMS)
	}
	return append(lines, fmt.Sprintf("run %s: %s", v.Run, eta))
}

// progressEvent is one line of the --json progress stream. Type is
// "start" (Run, Tasks), "progress" (View), "attempt" (an attempt ended:
// Attempt, View) or "end" (View, and the result: Pass and Attempts, the
// run's slots).
type progressEvent struct {
	Type     string            `json:"type"`
	Time     time.Time         `json:"time"`
	Run      string            `json:"run"`
	Tasks    []string          `json:"tasks,omitempty"`
	Agent    string            `json:"agent,omitempty"`
	View     *runView          `json:"view,omitempty"`
	Attempt  *apitype.Attempt  `json:"attempt,omitempty"`
	Pass     *bool             `json:"pass,omitempty"`
	Attempts []apitype.Attempt `json:"attempts,omitempty"`
}

// Progress forms.
const (
	formPlain = iota
	formTable
	formJSON
)

// defaultEvery is how often a plain progress line (or a JSON progress
// line) is printed unless --every says otherwise.
const defaultEvery = 10 * time.Second

// progressWriter prints a run's progress in one form. It is fed each
// status seen (update) and told the end (end), and remembers which
// attempts' ends it has printed.
type progressWriter struct {
	w     io.Writer
	form  int
	run   apitype.Run
	ended map[string]bool
	every time.Duration // between periodic lines
	drawn int           // lines of the table on the screen
	last  time.Time     // of the last periodic line
	now   func() time.Time
}

func newProgressWriter(w io.Writer, form int, run apitype.Run, every time.Duration) *progressWriter {
	return &progressWriter{w: w, form: form, run: run, every: every, ended: map[string]bool{}, now: time.Now}
}

func (p *progressWriter) event(ev progressEvent) {
	ev.Time, ev.Run = p.now().UTC(), p.run.ID
	b, _ := json.Marshal(ev)
	p.w.Write(append(b, '\n'))
}

// start prints what is run.
func (p *progressWriter) start() {
	switch p.form {
	case formJSON:
		p.event(progressEvent{Type: "start", Tasks: p.run.Tasks, Agent: p.run.Agent})
	default:
		fmt.Fprintf(p.w, "run %s: %s of %s by %s\n", p.run.ID, plural(len(p.run.Attempts), "attempt"),
			plural(len(p.run.Tasks), "task"), visible(p.run.Agent, false))
	}
	p.last = p.now()
}

// update prints what changed since the last status: the attempts that
// ended, and the periodic line or the redrawn table.
func (p *progressWriter) update(st apitype.RunStatus) {
	v := viewOf(p.run.ID, st.Attempts, st.Concurrency)
	var ended []apitype.Attempt
	for _, a := range st.Attempts {
		if finished(a) && !p.ended[a.ID] {
			p.ended[a.ID] = true
			ended = append(ended, a)
		}
	}
	// Attempts that ended between two statuses are counted one by one,
	// each line saying how many had ended with it.
	lineView := v
	lineView.Total.Done -= len(ended)
	for _, a := range ended {
		lineView.Total.Done++
		switch p.form {
		case formJSON:
			a := normalize(a)
			p.event(progressEvent{Type: "attempt", Attempt: &a, View: &v})
		case formPlain:
			fmt.Fprintln(p.w, endLine(a, lineView))
		}
	}
	switch p.form {
	case formTable:
		p.redraw(v)
	case formPlain:
		// The run's last line is end's.
		if !st.Ended && p.now().Sub(p.last) >= p.every {
			fmt.Fprintln(p.w, v.plainLine())
			p.last = p.now()
		}
	case formJSON:
		if p.now().Sub(p.last) >= p.every {
			p.event(progressEvent{Type: "progress", View: &v})
			p.last = p.now()
		}
	}
}

// redraw draws the table over the one drawn before.
func (p *progressWriter) redraw(v runView) {
	var b bytes.Buffer
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	lines := v.tableLines()
	for _, l := range lines {
		fmt.Fprintf(&b, "\r\x1b[2K%s\n", l)
	}
	// A table that lost rows leaves none of the old ones behind.
	for i := len(lines); i < p.drawn; i++ {
		b.WriteString("\r\x1b[2K\n")
	}
	p.drawn = max(len(lines), p.drawn)
	p.w.Write(b.Bytes())
}

// end prints the last status: in JSON the "end" event with the result;
// else the last plain line (the table is drawn already), which the
// verdicts follow.
func (p *progressWriter) end(st apitype.RunStatus, pass bool) {
	v := viewOf(p.run.ID, st.Attempts, st.Concurrency)
	switch p.form {
	case formJSON:
		p.event(progressEvent{Type: "end", View: &v, Pass: &pass, Attempts: normalizeAll(st.Attempts)})
	case formPlain:
		fmt.Fprintln(p.w, v.plainLine())
	case formTable:
		fmt.Fprintln(p.w)
	}
}
