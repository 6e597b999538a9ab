package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
	"benchd.dev/draw"
	"benchd.dev/fsmon/journal"
	"benchd.dev/viewer"
)

// The command is registered here, after cli.go's init (files initialize
// in name order), so that it stays beside its code.
func init() {
	commands = append(commands, command{"view", "[--listen 127.0.0.1:PORT] [--list FILE]...",
		"serve a local web page of attempts, runs, timelines, comparisons and scorecards (read-only; prints its URL with a one-time token)", (*CLI).cmdView})
}

// viewListening is what view --json prints once it listens: one JSON line.
type viewListening struct {
	Listening string `json:"listening"` // host:port
	URL       string `json:"url"`       // the page, with its one-time token
	Socket    string `json:"socket"`    // benchd's socket it reads
}

// cmdView serves the viewer until ctx ends (SIGINT, SIGTERM). Its
// derived views are computed by the functions the other commands print:
// list's filters, show's words, log's chain check, diff, scorecard.
func (c *CLI) cmdView(ctx context.Context, args []string) int {
	f := c.newFlags("view")
	listen := f.String("listen", viewer.DefaultListen, "the loopback `ADDR`ess to serve on (127.0.0.1:PORT or [::1]:PORT; port 0 picks one)")
	var lists stringList
	f.Var(&lists, "list", "a draw LIST `FILE` whose series the scorecard shows beside the built-in suite's, and the attempts' series filter offers (repeatable)")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	vw := &views{c: c, lists: map[string]string{}}
	for _, p := range lists {
		s, err := readListSeries(p)
		if err != nil {
			return c.usageError("view", "--list %s: %v", p, err)
		}
		if _, dup := vw.lists[s.Name]; dup || s.Name == "builtin" {
			return c.usageError("view", "--list %s: another series is named %s", p, s.Name)
		}
		vw.lists[s.Name] = p
		vw.series = append(vw.series, s)
	}
	// benchd is asked once before anything listens: a viewer of nothing
	// is an error now, not a page of errors later.
	if _, err := c.api().Status(ctx); err != nil {
		return c.fail("view", exitError, err)
	}
	srv, err := viewer.New(viewer.Config{Listen: *listen, API: c.api(), Views: vw.all(),
		Logger: slog.New(slog.NewTextHandler(c.Stderr, nil)).With("component", "view")})
	if errors.Is(err, viewer.ErrNotLoopback) {
		return c.usageError("view", "%v", err)
	}
	if err != nil {
		return c.fail("view", exitError, err)
	}
	if f.json {
		b, _ := json.Marshal(viewListening{Listening: srv.Addr(), URL: srv.URL(), Socket: c.api().SocketPath()})
		fmt.Fprintf(c.Stdout, "%s\n", b)
	} else {
		fmt.Fprintf(c.Stdout, "benchctl view: benchd at %s, read-only, on http://%s/\nopen %s\n(the link works once; interrupt to stop)\n", c.api().SocketPath(), srv.Addr(), srv.URL())
	}
	if err := srv.Serve(ctx); err != nil {
		return c.fail("view", exitError, err)
	}
	return exitOK
}

// views are the viewer's derived views.
type views struct {
	c      *CLI
	series []draw.Series     // of --list, in order
	lists  map[string]string // a series' name -> its LIST file
}

func (v *views) all() map[string]viewer.View {
	return map[string]viewer.View{
		"config":    v.config,
		"attempts":  v.attempts,
		"attempt":   v.attempt,
		"log":       v.log,
		"diff":      v.diff,
		"scorecard": v.scorecard,
	}
}

// badQuery wraps a refusal of the page's query.
func badQuery(format string, a ...any) error {
	return fmt.Errorf("%w: %s", viewer.ErrBadQuery, fmt.Sprintf(format, a...))
}

// checkNames refuses a query with a name not in names.
func checkNames(q url.Values, names ...string) error {
	for k := range q {
		if !slices.Contains(names, k) {
			return badQuery("unknown parameter %q (want %s)", k, strings.Join(names, ", "))
		}
	}
	return nil
}

// filterNames are the query's names of list's and scorecard's filters.
var filterNames = []string{"agent", "model", "run", "task", "state", "purpose", "since", "until", "series"}

// filterOf reads the filters of q as list (or, scorecard, scorecard)
// takes them from its flags (filterFlags): for list, series is the name
// of a loaded series (never a file the page names) and limit is read by
// the caller; for scorecard, series is the series to show (also read by
// the caller) and all-purposes counts every purpose.
func (v *views) filterOf(q url.Values, scorecard bool) (client.AttemptFilter, error) {
	more := "limit"
	if scorecard {
		more = "all-purposes"
	}
	if err := checkNames(q, append(filterNames, more)...); err != nil {
		return client.AttemptFilter{}, err
	}
	ff := filterFlags{agent: q.Get("agent"), model: q.Get("model"), run: q.Get("run"),
		tasks: q["task"], states: q["state"], purposes: q["purpose"],
		since: q.Get("since"), until: q.Get("until"), allPurposes: q.Get("all-purposes") != ""}
	if s := q.Get("series"); !scorecard && s != "" {
		switch p, ok := v.lists[s]; {
		case s == "builtin":
			ff.series = s
		case ok:
			ff.series = p
		default:
			return client.AttemptFilter{}, badQuery("series %q: want builtin or one of %s", s, strings.Join(v.seriesNames(), ", "))
		}
	}
	filter, err := ff.filter(time.Now(), scorecard)
	if err != nil {
		return filter, badQuery("%v", err)
	}
	return filter, nil
}

func (v *views) seriesNames() []string {
	names := []string{"builtin"}
	for _, s := range v.series {
		names = append(names, s.Name)
	}
	return names
}

// viewConfig is what the page offers in its filters.
type viewConfig struct {
	Series   []viewSeries `json:"series"`
	States   []string     `json:"states"`
	Purposes []string     `json:"purposes"`
	Socket   string       `json:"socket"`
}

type viewSeries struct {
	Name  string   `json:"name"`
	Tasks []string `json:"tasks"`
}

func (v *views) config(ctx context.Context, q url.Values) (any, error) {
	if err := checkNames(q); err != nil {
		return nil, err
	}
	cfg := viewConfig{States: apitype.States, Purposes: apitype.Purposes, Socket: v.c.api().SocketPath(),
		Series: []viewSeries{{Name: "builtin", Tasks: draw.BuiltinSeries().Tasks}}}
	for _, s := range v.series {
		cfg.Series = append(cfg.Series, viewSeries{Name: s.Name, Tasks: s.Tasks})
	}
	return cfg, nil
}

// shownAttempt is an attempt and the words benchctl prints for it (list's
// and show's columns), from the functions that print them.
type shownAttempt struct {
	Attempt  apitype.Attempt `json:"attempt"`
	Verdict  string          `json:"verdict"`
	Exit     string          `json:"exit"`
	Wall     string          `json:"wall"`
	Peak     string          `json:"peak_memory"`
	MaxRSS   string          `json:"max_rss"`
	Purpose  string          `json:"purpose"`
	Args     string          `json:"args,omitempty"` // the agent's arguments, quoted as a shell would need
	Created  string          `json:"created"`
	Started  string          `json:"started"`
	Finished string          `json:"finished"`
	Limits   string          `json:"limits,omitempty"`
}

// utc renders a time as the page shows it, in UTC.
func utc(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func shown(a apitype.Attempt) shownAttempt {
	s := shownAttempt{Attempt: normalize(a), Verdict: verdict(a), Exit: exitText(a), Wall: wallTime(a),
		Peak: formatBytes(a.PeakMemoryBytes), MaxRSS: formatBytes(a.MaxRSSBytes), Purpose: purposeText(a),
		Created: utc(&a.Created), Started: utc(a.Started), Finished: utc(a.Finished), Args: strings.Join(quoteArgs(a.Agent.Args), " ")}
	if a.Limits != nil {
		s.Limits = limitsText(a.Limits)
	}
	return s
}

// viewAttempts are the attempts a filter selects, newest first.
type viewAttempts struct {
	Attempts []shownAttempt `json:"attempts"`
	Limit    int            `json:"limit"`
}

// maxViewLimit caps how many attempts the page lists at once.
const maxViewLimit = 1000

func (v *views) attempts(ctx context.Context, q url.Values) (any, error) {
	filter, err := v.filterOf(q, false)
	if err != nil {
		return nil, err
	}
	filter.Limit = 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxViewLimit {
			return nil, badQuery("limit %q: want 1 to %d", l, maxViewLimit)
		}
		filter.Limit = n
	}
	as, err := v.c.api().Attempts(ctx, filter)
	if err != nil {
		return nil, err
	}
	res := viewAttempts{Attempts: []shownAttempt{}, Limit: filter.Limit}
	for _, a := range as {
		res.Attempts = append(res.Attempts, shown(a))
	}
	return res, nil
}

// attemptParam is the attempt a view's query names.
func attemptParam(q url.Values) (string, error) {
	if err := checkNames(q, "attempt"); err != nil {
		return "", err
	}
	id := q.Get("attempt")
	if id == "" {
		return "", badQuery("missing attempt")
	}
	return id, nil
}

func (v *views) attempt(ctx context.Context, q url.Values) (any, error) {
	id, err := attemptParam(q)
	if err != nil {
		return nil, err
	}
	a, err := v.c.api().Attempt(ctx, id)
	if err != nil {
		return nil, err
	}
	return shown(a), nil
}

// viewLog is log's result with each record in the words log prints.
type viewLog struct {
	Attempt  string      `json:"attempt"`
	Head     string      `json:"head"`
	Verified bool        `json:"verified"`
	Problem  string      `json:"problem,omitempty"`
	Records  []viewEntry `json:"records"`
}

type viewEntry struct {
	Seq      uint64    `json:"seq"`
	Mono     int64     `json:"t_ns"`  // nanoseconds since the mount
	Since    string    `json:"since"` // formatSince of t_ns
	Wall     time.Time `json:"wall"`
	PID      uint32    `json:"pid,omitempty"`
	Comm     string    `json:"comm,omitempty"`
	Op       string    `json:"op"`
	Paths    string    `json:"paths"`
	Decision string    `json:"decision,omitempty"`
	Result   string    `json:"result"`
	Detail   string    `json:"detail"`
}

func (v *views) log(ctx context.Context, q url.Values) (any, error) {
	id, err := attemptParam(q)
	if err != nil {
		return nil, err
	}
	_, res, _, err := v.c.journalLog(ctx, id, false)
	var pe *journal.ParseError
	if errors.As(err, &pe) {
		return viewLog{Attempt: id, Problem: err.Error(), Records: []viewEntry{}}, nil
	}
	if err != nil {
		return nil, err
	}
	out := viewLog{Attempt: res.Attempt, Head: res.Head, Verified: res.Verified, Problem: res.Problem, Records: []viewEntry{}}
	for _, r := range res.Records {
		out.Records = append(out.Records, viewEntry{Seq: r.Seq, Mono: r.Mono, Since: formatSince(r.Mono), Wall: r.Wall, PID: r.PID, Comm: visible(r.Comm, false),
			Op: string(r.Op), Paths: visible(recordPaths(r), false), Decision: string(r.Decision), Result: r.Result, Detail: visible(recordDetail(r), false)})
	}
	return out, nil
}

// viewDiff is diff's result, or why there is none: the journal is damaged.
type viewDiff struct {
	diffResult
	Problem string `json:"problem,omitempty"`
}

func (v *views) diff(ctx context.Context, q url.Values) (any, error) {
	id, err := attemptParam(q)
	if err != nil {
		return nil, err
	}
	res, err := v.c.diff(ctx, id, diffOptions{})
	var damaged *damagedError
	if errors.As(err, &damaged) {
		return viewDiff{diffResult: diffResult{Attempt: id, Changeset: []apitype.Change{}, Diffs: []fileDiff{}}, Problem: err.Error()}, nil
	}
	if err != nil {
		return nil, err
	}
	return viewDiff{diffResult: res}, nil
}

// viewScorecard is the scorecard as benchctl scorecard --json prints it,
// each series with its plot (draw's SVG) and its separation in lines.
type viewScorecard struct {
	RulesVersion string           `json:"rules_version"`
	Series       []viewSeriesCard `json:"series"`
	Truncated    []string         `json:"truncated,omitempty"` // tasks of which only the newest HistoryLimit attempts were read
	HistoryLimit int              `json:"history_limit"`
}

type viewSeriesCard struct {
	draw.SeriesCard
	Plot            string   `json:"plot"` // SVG
	SeparationLines []string `json:"separation_lines"`
}

func (v *views) scorecard(ctx context.Context, q url.Values) (any, error) {
	filter, err := v.filterOf(q, true)
	if err != nil {
		return nil, err
	}
	sc, truncated, err := v.c.scorecard(ctx, filter, v.series, q.Get("series"))
	if err != nil {
		var choice *seriesChoiceError
		if errors.As(err, &choice) {
			return nil, badQuery("%v", err)
		}
		return nil, err
	}
	out := viewScorecard{RulesVersion: sc.RulesVersion, Series: []viewSeriesCard{}, Truncated: truncated, HistoryLimit: historyLimit}
	for _, s := range sc.Series {
		var buf bytes.Buffer
		if err := draw.WritePlotSVG(&buf, s); err != nil {
			return nil, err
		}
		out.Series = append(out.Series, viewSeriesCard{SeriesCard: s, Plot: buf.String(), SeparationLines: draw.SeparationLines(s.Separation, len(s.Agents))})
	}
	return out, nil
}
