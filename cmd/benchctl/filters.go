package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
	"benchd.dev/draw"
)

// filterFlags are the attempt filters of list, scorecard and board;
// which of them a command takes is its filterSet. The daemon applies
// them (GET /v1/attempts), in SQL.
type filterFlags struct {
	agent, model, run string
	series            string // list: builtin or a draw LIST file, whose tasks
	tasks             stringList
	states            stringList
	since, until      string
	purposes          stringList
	allPurposes       bool
}

// A filterSet says which filters a command registers.
type filterSet struct {
	agentModel  bool // --agent and --model as filters (board's select the agent it runs)
	run, task   bool
	state       bool
	series      bool
	allPurposes bool // scorecard and board count only runs unless asked
}

// whenHelp describes the values --since, --until and --before take.
const whenHelp = "a date (2026-11-29, midnight UTC), an RFC 3339 time, or a duration back from now (24h, 90m, 7d)"

func (ff *filterFlags) register(f *flags, set filterSet) {
	if set.agentModel {
		f.StringVar(&ff.agent, "agent", "", "only attempts of the agent given as `A` (as run --agent took it)")
		f.StringVar(&ff.model, "model", "", "only attempts whose agent identity names model `M`")
	}
	if set.run {
		f.StringVar(&ff.run, "run", "", "only attempts of run `ID`")
	}
	if set.task {
		f.Var(&ff.tasks, "task", "only attempts of task `ID` (repeatable: any of them)")
	}
	if set.series {
		f.StringVar(&ff.series, "series", "", "only attempts of the tasks of series `S`: builtin, or a draw LIST file")
	}
	if set.state {
		f.Var(&ff.states, "state", "only attempts in state `S`: "+strings.Join(apitype.States, ", ")+" (repeatable)")
	}
	f.StringVar(&ff.since, "since", "", "only attempts created at or after `WHEN`: "+whenHelp)
	f.StringVar(&ff.until, "until", "", "only attempts created before `WHEN`: "+whenHelp)
	what := "only attempts of purpose `P`: " + strings.Join(apitype.Purposes, ", ") + " (repeatable)"
	if set.allPurposes {
		what = "count attempts of purpose `P`: " + strings.Join(apitype.Purposes, ", ") + " (repeatable; default run)"
		f.BoolVar(&ff.allPurposes, "all-purposes", false, "count attempts of every purpose (tasks check, library index and reviews too)")
	}
	f.Var(&ff.purposes, "purpose", what)
}

// filter returns the flags as a client.AttemptFilter; runsOnly says
// that, without --purpose or --all-purposes, only runs are selected. A
// bad value is an error naming it, for a usage error.
func (ff *filterFlags) filter(now time.Time, runsOnly bool) (client.AttemptFilter, error) {
	f := client.AttemptFilter{Agent: ff.agent, Model: ff.model, Run: ff.run}
	for _, st := range ff.states {
		if !slices.Contains(apitype.States, st) {
			return f, fmt.Errorf("--state %q: want one of %s", st, strings.Join(apitype.States, ", "))
		}
	}
	f.States = ff.states
	for _, p := range ff.purposes {
		if !apitype.ValidPurpose(p) {
			return f, fmt.Errorf("--purpose %q: want one of %s", p, strings.Join(apitype.Purposes, ", "))
		}
	}
	switch {
	case ff.allPurposes && len(ff.purposes) > 0:
		return f, fmt.Errorf("--purpose and --all-purposes: give one")
	case len(ff.purposes) > 0:
		f.Purposes = ff.purposes
	case runsOnly && !ff.allPurposes:
		f.Purposes = []string{apitype.PurposeRun}
	}
	for _, t := range ff.tasks {
		if t == "" {
			return f, fmt.Errorf("--task %q: want a task id", t)
		}
	}
	f.Tasks = ff.tasks
	if ff.series != "" {
		s, err := seriesTasks(ff.series)
		if err != nil {
			return f, err
		}
		if len(f.Tasks) > 0 {
			// Both: the tasks of the series that --task names.
			var both []string
			for _, t := range f.Tasks {
				if slices.Contains(s, t) {
					both = append(both, t)
				}
			}
			if len(both) == 0 {
				return f, fmt.Errorf("--task %s: none is a task of series %s (%s)", strings.Join(f.Tasks, ", "), ff.series, strings.Join(s, " "))
			}
			s = both
		}
		f.Tasks = s
	}
	var err error
	if f.Since, err = parseWhen("--since", ff.since, now); err != nil {
		return f, err
	}
	if f.Until, err = parseWhen("--until", ff.until, now); err != nil {
		return f, err
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return f, fmt.Errorf("--since %s is not before --until %s", ff.since, ff.until)
	}
	return f, nil
}

// seriesTasks returns the tasks of series s: builtin, or a draw LIST
// file.
func seriesTasks(s string) ([]string, error) {
	if s == "builtin" {
		return draw.BuiltinSeries().Tasks, nil
	}
	if !fileExists(s) {
		return nil, fmt.Errorf("--series %q: want builtin or a draw LIST file", s)
	}
	ser, err := readListSeries(s)
	if err != nil {
		return nil, fmt.Errorf("--series %s: %v", s, err)
	}
	return ser.Tasks, nil
}

// parseWhen reads the value v of flag name (whenHelp): "" is the zero
// time.
func parseWhen(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok && err != nil {
		if n, nerr := strconv.Atoi(days); nerr == nil && n <= 100000 {
			d, err = time.Duration(n)*24*time.Hour, nil
		}
	}
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%s %q: want %s", name, v, whenHelp)
	}
	return now.Add(-d), nil
}
