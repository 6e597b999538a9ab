package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
	"benchd.dev/draw"
)

func (c *CLI) cmdScorecard(ctx context.Context, args []string) int {
	f := c.newFlags("scorecard")
	var lists stringList
	f.Var(&lists, "list", "a draw LIST `FILE` whose series is shown beside the built-in suite's (repeatable)")
	series := f.String("series", "", "show one series: builtin, a series id (or its prefix), or a draw LIST `FILE`")
	htmlOut := f.String("html", "", "also write a self-contained HTML report to `FILE`")
	var ff filterFlags
	ff.register(f, filterSet{agentModel: true, run: true, task: true, state: true, allPurposes: true})
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	filter, err := ff.filter(time.Now(), true)
	if err != nil {
		return c.usageError("scorecard", "%v", err)
	}
	var lsts []draw.Series
	for _, p := range lists {
		s, err := readListSeries(p)
		if err != nil {
			return c.usageError("scorecard", "--list %s: %v", p, err)
		}
		lsts = append(lsts, s)
	}
	pick := *series
	if *series != "" && *series != "builtin" && fileExists(*series) {
		s, err := readListSeries(*series)
		if err != nil {
			return c.usageError("scorecard", "--series %s: %v", *series, err)
		}
		lsts = append(lsts, s)
		pick = s.Name
	}
	sc, truncated, err := c.scorecard(ctx, filter, lsts, pick)
	if err != nil {
		return c.fail("scorecard", exitError, err)
	}
	if *htmlOut != "" {
		var buf bytes.Buffer
		if err := draw.WriteHTML(&buf, sc, time.Now()); err != nil {
			return c.fail("scorecard", exitError, err)
		}
		if err := os.WriteFile(*htmlOut, buf.Bytes(), 0o644); err != nil {
			return c.fail("scorecard", exitError, fmt.Errorf("unable to write the report: %w", err))
		}
	}
	if f.json {
		c.printJSON(sc)
		return exitOK
	}
	printScorecard(c.Stdout, sc)
	if len(truncated) > 0 {
		fmt.Fprintf(c.Stdout, "\nnote: only the newest %d attempts of %s were read\n", historyLimit, strings.Join(truncated, ", "))
	}
	if *htmlOut != "" {
		fmt.Fprintf(c.Stdout, "\nHTML report: %s\n", *htmlOut)
	}
	return exitOK
}

// scorecard scores the attempts filter selects (its Tasks: only those
// of the series' tasks) in the built-in suite's series and those of
// lists (draw LISTs already read). pick selects one series to show:
// "builtin", the name of one of lists (the last so named), or a series
// id or a unique prefix of one; "" shows them all. It also returns the tasks of which only the
// newest historyLimit attempts were read. Every path to the scorecard
// goes through it: benchctl scorecard and benchctl view.
func (c *CLI) scorecard(ctx context.Context, filter client.AttemptFilter, lists []draw.Series, pick string) (draw.Scorecard, []string, error) {
	only := filter.Tasks // read only these of the series' tasks
	filter.Tasks, filter.Limit = nil, historyLimit
	all := append([]draw.Series{draw.BuiltinSeries()}, lists...)
	store, err := c.api().Tasks(ctx)
	if err != nil {
		return draw.Scorecard{}, nil, err
	}
	hashes := map[string]string{}
	for _, t := range store {
		hashes[t.ID] = t.SHA256
	}
	var tasks []string
	for _, s := range all {
		for _, t := range s.Tasks {
			if !slices.Contains(tasks, t) {
				tasks = append(tasks, t)
			}
		}
	}
	var attempts []apitype.Attempt
	var truncated []string
	for _, t := range tasks {
		if len(only) > 0 && !slices.Contains(only, t) {
			continue
		}
		tf := filter
		tf.Task = t
		as, err := c.api().Attempts(ctx, tf)
		if err != nil && !errors.Is(err, client.ErrNotFound) && !errors.Is(err, client.ErrInvalid) { // a task benchd cannot have has no attempts
			return draw.Scorecard{}, nil, fmt.Errorf("attempts of %s: %w", t, err)
		}
		if len(as) >= historyLimit {
			truncated = append(truncated, t)
		}
		attempts = append(attempts, as...)
	}
	for i := range all {
		all[i].Pin(hashes, attempts)
	}
	if pick != "" {
		var match []draw.Series
		named := -1 // the last of lists so named: a --series FILE comes after the --list ones
		for i, s := range all {
			if i > 0 && s.Name == pick {
				named = i
			}
			if strings.HasPrefix(s.ID(), pick) {
				match = append(match, s)
			}
		}
		switch {
		case pick == "builtin":
			match = all[:1]
		case named > 0:
			match = all[named : named+1]
		}
		if len(match) != 1 {
			var ids []string
			for _, s := range all {
				ids = append(ids, s.ID()+" ("+s.Name+")")
			}
			return draw.Scorecard{}, nil, &seriesChoiceError{fmt.Sprintf("--series %q matches %d series; known: %s", pick, len(match), strings.Join(ids, ", "))}
		}
		all = match
	}
	return draw.Score(all, attempts, draw.ScoreConfig{}), truncated, nil
}

// seriesChoiceError is a series to show that names no series, or several.
type seriesChoiceError struct{ msg string }

func (e *seriesChoiceError) Error() string { return e.msg }

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func readListSeries(p string) (draw.Series, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return draw.Series{}, err
	}
	return draw.ReadListSeries(filepath.Base(p), b)
}

// printScorecard prints every series, one block each.
func printScorecard(w io.Writer, sc draw.Scorecard) {
	fmt.Fprintf(w, "scorecard: grading rules %s; %d series, each on its own (never joined)\n", sc.RulesVersion, len(sc.Series))
	for _, s := range sc.Series {
		dates := "no attempts"
		if s.First != nil {
			dates = s.First.UTC().Format("2006-01-02 15:04") + " to " + s.Last.UTC().Format("2006-01-02 15:04 MST")
		}
		fmt.Fprintf(w, "\nseries %s (id %s), %s\n", s.Series.Name, s.ID, dates)
		fmt.Fprintf(w, "  tasks: %s\n  draw rule: %s\n  grading rules: %s\n", strings.Join(s.Series.Tasks, " "), s.Series.DrawRule, s.Series.RulesVersion)
		if s.LeftOut > 0 {
			fmt.Fprintf(w, "  left out: %s graded by another bundle (another series)\n", plural(s.LeftOut, "attempt"))
		}
		if s.Retried > 0 {
			fmt.Fprintf(w, "  retried: %s left out, counted by their retries\n", plural(s.Retried, "infra error"))
		}
		if s.InfraOnly > 0 {
			fmt.Fprintf(w, "  never ran: %s of agents with nothing else left out (not rows)\n", plural(s.InfraOnly, "infra error"))
		}
		if s.Unfinished > 0 {
			fmt.Fprintf(w, "  unfinished: %s\n", plural(s.Unfinished, "attempt"))
		}
		if s.Unresolved > 0 {
			fmt.Fprintf(w, "  unresolved: %s left to review, neither passed nor failed (not scored until benchctl review decides them)\n", plural(s.Unresolved, "attempt"))
		}
		if len(s.Agents) == 0 {
			fmt.Fprintln(w, "  no attempts")
			continue
		}
		fmt.Fprintf(w, "  completion rate: the mean of per-task rates, each task weighing the same; 95%% intervals (agents by name, not by rate; bootstrap: %d resamples of tasks, then of attempts within each, seed %d):\n", s.Resamples, s.Seed)
		fmt.Fprintf(w, "  %s\n", s.GroupedBy)
		tw := newTable(w)
		fmt.Fprintln(tw, "  AGENT\tTASK SET\tTASKS\tPASSED\tSCORED\tRATE\tINTERVAL\tBOOTSTRAP\tWILSON (TASKS)\tNOT SCORED")
		for _, a := range s.Agents {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", a.Agent, dash(a.TaskSet), a.Tasks, a.Passes, a.Scored,
				rateText(a.Rate), intervalText(a.Interval), intervalText(a.Bootstrap), intervalText(a.TaskWilson), notScored(a))
		}
		tw.Flush()
		modelLines(w, s)
		fmt.Fprintln(w)
		draw.WriteTextPlot(w, s, "  ")
		if len(s.Separation) > 0 || len(s.NotCompared) > 0 {
			fmt.Fprintln(w, "  separation (only between agents measured on the same task set):")
			for _, l := range draw.SeparationLines(s.Separation, len(s.Agents)) {
				fmt.Fprintf(w, "    %s\n", l)
			}
			for _, l := range s.NotCompared {
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
		fmt.Fprintln(w, "  per task: rate, and attempts oldest first:")
		tw = newTable(w)
		for _, t := range s.Tasks {
			if len(t.Agents) == 0 {
				fmt.Fprintf(tw, "    %s\t-\t-\tno attempt\n", t.Task)
			}
			for _, ag := range t.Agents {
				var outs []string
				for _, at := range ag.Attempts {
					outs = append(outs, at.Outcome)
				}
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", t.Task, ag.Agent, draw.TaskRateText(ag), strings.Join(outs, ", "))
			}
		}
		tw.Flush()
	}
}

func rateText(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *r*100)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func intervalText(i *draw.Interval) string {
	if i == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%-%.1f%%", i.Lo*100, i.Hi*100)
}

func notScored(a draw.AgentScore) string {
	var parts []string
	if a.InfraErrors > 0 {
		parts = append(parts, plural(a.InfraErrors, "infra error"))
	}
	if a.Canceled > 0 {
		parts = append(parts, fmt.Sprintf("%d canceled", a.Canceled))
	}
	if a.Unresolved > 0 {
		parts = append(parts, fmt.Sprintf("%d unresolved", a.Unresolved))
	}
	if a.Note != "" {
		parts = append(parts, a.Note)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// modelLines prints the model usage of each agent whose attempts in the
// series called a model through an HTTP gateway, then the same per task;
// agents without a call are left out (a line says how many).
func modelLines(w io.Writer, s draw.SeriesCard) {
	without := 0
	for _, a := range s.Agents {
		if a.Model == nil {
			without++
		}
	}
	if without == len(s.Agents) {
		return
	}
	fmt.Fprintln(w, "  model calls, every attempt of the series (scored or not):")
	tw := newTable(w)
	fmt.Fprintln(tw, "    TASK\tAGENT\tCALLS\tTOKENS IN/OUT\tTOOL CALLS\tCOST\tERRORS")
	row := func(task, name string, u *apitype.ModelUsage) {
		fmt.Fprintf(tw, "    %s\t%s\t%d\t%s\t%d\t%s\t%d\n", task, name, u.Calls, tokensCell(u), u.ToolCalls, costCell(u), u.Errors)
	}
	for _, a := range s.Agents {
		if a.Model != nil {
			row("all", a.Agent, a.Model)
		}
	}
	for _, t := range s.Tasks {
		for _, ag := range t.Agents {
			if ag.Model != nil {
				row(t.Task, ag.Agent, ag.Model)
			}
		}
	}
	tw.Flush()
	if without > 0 {
		fmt.Fprintf(w, "    (%d agent(s) of the series called no model through an HTTP gateway)\n", without)
	}
}
