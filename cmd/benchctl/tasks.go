package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"benchd.dev/client/apitype"
)

func (c *CLI) cmdTasks(ctx context.Context, args []string) int {
	if len(args) == 0 {
		return c.usageError("tasks", "want \"tasks list\" or \"tasks check [ID]\"")
	}
	switch args[0] {
	case "list":
		return c.cmdTasksList(ctx, args[1:])
	case "check":
		return c.cmdTasksCheck(ctx, args[1:])
	case "-h", "--help", "-help":
		c.printCommandUsage(c.newFlags("tasks"))
		return exitOK
	}
	return c.usageError("tasks", "unknown subcommand %q: want list or check", args[0])
}

func (c *CLI) cmdTasksList(ctx context.Context, args []string) int {
	f := c.newFlags("tasks list")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	list, err := c.api().TaskList(ctx)
	if err != nil {
		return c.fail("tasks list", exitError, err)
	}
	ts := list.Tasks
	if f.json {
		for i := range ts {
			if ts[i].KnownAttempts == nil {
				ts[i].KnownAttempts = []string{}
			}
		}
		c.printJSON(list)
		return exitOK
	}
	for _, b := range list.Broken { // on stderr, so that the table stays whole
		c.errorLine("tasks list", visible(fmt.Sprintf("warning: bundle %s does not load, not listed: %s", b.Dir, b.Error), false))
	}
	tw := newTable(c.Stdout)
	fmt.Fprintln(tw, "ID\tNAME\tGRADER\tNETWORK\tTIMEOUT\tKNOWN ATTEMPTS")
	for _, t := range ts {
		net := "closed"
		if t.AllowInternet {
			net = "open"
		}
		known := strings.Join(t.KnownAttempts, ",")
		if known == "" {
			known = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%ds\t%s\n", t.ID, oneLine(t.Name, 40), t.Grader, net, t.TimeoutSec, known)
	}
	tw.Flush()
	return exitOK
}

// checkEvent is one line of tasks check --json. Type is "start"
// (Attempts: the check's attempts with the verdicts expected,
// Concurrency), "attempt" (an attempt ended: Result, its verdict against
// the expected one; Attempt; View), "progress" (View, every --every) or
// "end", last (View, and the answer: OK and Results, the fields of
// tasks check --json before it streamed).
type checkEvent struct {
	Type        string                `json:"type"`
	Time        time.Time             `json:"time"`
	View        *runView              `json:"view,omitempty"`
	Attempts    []apitype.CheckResult `json:"attempts,omitempty"`
	Concurrency int                   `json:"concurrency,omitempty"`
	Result      *apitype.CheckResult  `json:"result,omitempty"`
	Attempt     *apitype.Attempt      `json:"attempt,omitempty"`
	OK          *bool                 `json:"ok,omitempty"`
	Results     []apitype.CheckResult `json:"results,omitempty"`
}

func (c *CLI) cmdTasksCheck(ctx context.Context, args []string) int {
	f := c.newFlags("tasks check")
	every := f.Duration("every", defaultEvery, "off a terminal, print the check's progress every `D` (and as each attempt ends)")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 1, ""); !ok {
		return code
	}
	if *every <= 0 {
		return c.usageError("tasks check", "--every %v: want a positive duration", *every)
	}
	task := ""
	if len(pos) == 1 {
		task = pos[0]
	}
	form := formPlain
	switch {
	case f.json:
		form = formJSON
	case c.Terminal:
		form = formTable
	}
	var p *setProgress
	index := map[string]int{}   // attempt id: its slot
	var mismatched atomic.Int64 // read by the status line while the ticker prints it
	tc, err := c.api().CheckTasksStream(ctx, task, func(ev apitype.CheckEvent) {
		switch {
		case ev.Type == apitype.CheckStart && p == nil:
			slots := make([]apitype.Attempt, len(ev.Attempts))
			tasksSeen := map[string]bool{}
			for i, r := range ev.Attempts {
				slots[i] = apitype.Attempt{ID: r.Attempt, Task: r.Task, State: apitype.StateQueued}
				index[r.Attempt] = i
				tasksSeen[r.Task] = true
			}
			p = newSetProgress(c.Stdout, form, "tasks check", *every, slots, ev.Concurrency)
			p.suffix = func() string {
				if n := mismatched.Load(); n > 0 {
					return fmt.Sprintf("%d not as expected", n)
				}
				return ""
			}
			p.begin(fmt.Sprintf("tasks check: %s of %s (the reference and each known attempt), %d at once",
				plural(len(slots), "attempt"), plural(len(tasksSeen), "task"), ev.Concurrency),
				checkEvent{Type: "start", Time: p.now().UTC(), Attempts: ev.Attempts, Concurrency: ev.Concurrency})
		case ev.Type == apitype.CheckAttempt && p != nil && ev.Result != nil && ev.Ended != nil:
			i, known := index[ev.Result.Attempt]
			if !known {
				return
			}
			r, a := *ev.Result, normalize(*ev.Ended)
			if !r.OK {
				mismatched.Add(1)
			}
			p.ended(i, a, checkLine(r, a), func(v runView) any {
				return checkEvent{Type: "attempt", Time: p.now().UTC(), Result: &r, Attempt: &a, View: &v}
			})
		}
	})
	if err != nil {
		if p != nil {
			p.abort()
		}
		return c.fail("tasks check", exitError, err)
	}
	code = exitOK
	if !tc.OK {
		code = exitNo
	}
	if tc.Results == nil {
		tc.Results = []apitype.CheckResult{}
	}
	for i := range tc.Results {
		if tc.Results[i].GotCodes == nil {
			tc.Results[i].GotCodes = []string{}
		}
	}
	if f.json {
		end := func(v runView) any {
			return checkEvent{Type: "end", Time: time.Now().UTC(), View: &v, OK: &tc.OK, Results: tc.Results}
		}
		if p == nil { // a benchd that answered without streaming
			c.printJSON(tc)
			return code
		}
		p.end(end)
		return code
	}
	if p != nil {
		p.end(nil)
		fmt.Fprintln(c.Stdout)
	}
	tw := newTable(c.Stdout)
	fmt.Fprintln(tw, "TASK\tAGENT\tATTEMPT\tWANT\tGOT\tOK")
	bad := 0
	for _, r := range tc.Results {
		ok := "ok"
		if !r.OK {
			ok = "MISMATCH"
			bad++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Task, r.Agent, orDash(r.Attempt),
			passWord(r.WantPass, []string{r.WantCode}), passWord(r.GotPass, r.GotCodes), ok)
	}
	tw.Flush()
	if bad == 0 && tc.OK {
		fmt.Fprintf(c.Stdout, "\nall %d verdicts as expected\n", len(tc.Results))
	} else {
		fmt.Fprintf(c.Stdout, "\n%d of %d verdicts differ from the expected ones\n", bad, len(tc.Results))
	}
	return code
}

// checkLine is the line of a check's attempt that ended: its verdict
// against the expected one.
func checkLine(r apitype.CheckResult, a apitype.Attempt) string {
	got := passWord(r.GotPass, r.GotCodes)
	if a.State != apitype.StateDone {
		got = verdict(a)
	}
	ok := "ok"
	if !r.OK {
		ok = "MISMATCH"
	}
	return fmt.Sprintf("%s %s %s: %s, want %s: %s%s", a.ID, r.Task, r.Agent, got,
		passWord(r.WantPass, []string{r.WantCode}), ok, attemptTime(a))
}

// passWord renders an expected or actual verdict: "pass" or "fail(CODES)".
func passWord(pass bool, codes []string) string {
	if pass {
		return "pass"
	}
	var cs []string
	for _, c := range codes {
		if c != "" {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return "fail"
	}
	return "fail(" + strings.Join(cs, ",") + ")"
}
