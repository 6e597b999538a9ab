package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/draw"
	"benchd.dev/tasks"
)

// splitTasks reads --tasks: task ids separated by commas, each once.
func splitTasks(s string) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		id := strings.TrimSpace(f)
		if id == "" {
			return nil, fmt.Errorf("--tasks %q: an empty task id (want ID,ID,...)", s)
		}
		if !tasks.ValidID(tasks.CanonicalID(id)) {
			return nil, fmt.Errorf("--tasks: %q is not a task id (letters, digits and dashes)", id)
		}
		if seen[tasks.CanonicalID(id)] {
			return nil, fmt.Errorf("--tasks: task %s given twice", id)
		}
		seen[tasks.CanonicalID(id)] = true
		ids = append(ids, id)
	}
	if len(ids) > apitype.MaxRunTasks {
		return nil, fmt.Errorf("--tasks: %d tasks, at most %d", len(ids), apitype.MaxRunTasks)
	}
	return ids, nil
}

// readTaskList reads the tasks of a list file: a list benchctl draw wrote
// (its first line draw.ListVersion: the ids of its tasks section, in
// order), or task ids one a line (blank lines and lines starting with #
// left out).
func readTaskList(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseTaskList(b)
}

// parseTaskList is readTaskList of a file's content.
func parseTaskList(b []byte) ([]string, error) {
	if bytes.HasPrefix(b, []byte(draw.ListVersion+"\n")) || bytes.HasPrefix(b, []byte(draw.ListVersion+"\r\n")) {
		s, err := draw.ReadListSeries("LIST", b)
		if err != nil {
			return nil, fmt.Errorf("a drawn list (its first line is %q) without a tasks section", draw.ListVersion)
		}
		return checkListIDs(s.Tasks, nil)
	}
	var ids []string
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if f := strings.Fields(line); len(f) > 1 {
			return nil, fmt.Errorf("line %d: %q is not one task id (want one task id a line, or a list benchctl draw wrote, whose first line is %q)", n, oneLine(line, 80), draw.ListVersion)
		}
		ids = append(ids, line)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errors.New("no task ids in it (want one task id a line, or a list benchctl draw wrote)")
	}
	return checkListIDs(ids, lines)
}

// checkListIDs checks a list's ids: each a task id, each once, at most
// apitype.MaxRunTasks. lines are their line numbers, when known.
func checkListIDs(ids []string, lines []int) ([]string, error) {
	where := func(i int) string {
		if lines != nil {
			return fmt.Sprintf("line %d: ", lines[i])
		}
		return ""
	}
	seen := map[string]int{}
	for i, id := range ids {
		c := tasks.CanonicalID(id)
		if !tasks.ValidID(c) {
			return nil, fmt.Errorf("%s%q is not a task id (letters, digits and dashes)", where(i), oneLine(id, 80))
		}
		if j, dup := seen[c]; dup {
			if lines != nil {
				return nil, fmt.Errorf("%stask %s again (first on line %d)", where(i), id, lines[j])
			}
			return nil, fmt.Errorf("task %s listed twice", id)
		}
		seen[c] = i
	}
	if len(ids) > apitype.MaxRunTasks {
		return nil, fmt.Errorf("%d tasks, at most %d in one run", len(ids), apitype.MaxRunTasks)
	}
	return ids, nil
}

// statusEvery is how often a followed run's status is asked for.
var statusEvery = time.Second

// maxStatusErrors is how many status requests in a row may fail before
// following a run gives up.
const maxStatusErrors = 5

// followRun shows the progress of run until every attempt has ended,
// then its verdicts, and returns the exit status (runExit). When ctx
// ends first and cancel is set, the run's queued and running attempts
// are canceled; else they go on.
func (c *CLI) followRun(ctx context.Context, cmd string, asJSON bool, every time.Duration, run apitype.Run, cancel bool) int {
	form := formPlain
	switch {
	case asJSON:
		form = formJSON
	case c.Terminal:
		form = formTable
	}
	p := newProgressWriter(c.Stdout, form, run, every)
	p.start()
	var st apitype.RunStatus
	fails := 0
	for {
		s, err := c.api().RunStatus(ctx, run.ID)
		switch {
		case ctx.Err() != nil:
			return c.interrupted(cmd, run, cancel)
		case err != nil:
			if fails++; fails >= maxStatusErrors {
				return c.fail(cmd, exitError, fmt.Errorf("lost track of run %s: %w", run.ID, err))
			}
		default:
			fails, st = 0, s
			p.update(st)
		}
		if err == nil && st.Ended {
			break
		}
		select {
		case <-ctx.Done():
			return c.interrupted(cmd, run, cancel)
		case <-time.After(statusEvery):
		}
	}
	code, pass := runExit(st.Attempts)
	p.end(st, pass)
	if !asJSON {
		c.printRun(false, st.Run, st.Attempts)
	}
	return code
}

// interrupted ends a followed run that ctx ended: its attempts canceled
// when cancel is set.
func (c *CLI) interrupted(cmd string, run apitype.Run, cancel bool) int {
	if !cancel {
		return c.fail(cmd, exitError, fmt.Errorf("interrupted; run %s goes on (benchctl wait %s)", run.ID, run.ID))
	}
	cctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	rc, err := c.api().CancelRun(cctx, run.ID)
	if err != nil {
		return c.fail(cmd, exitError, fmt.Errorf("interrupted; canceling run %s: %w", run.ID, err))
	}
	return c.fail(cmd, exitError, fmt.Errorf("interrupted: canceled %s of run %s", plural(len(rc.Canceled), "attempt"), run.ID))
}

func (c *CLI) cmdWait(ctx context.Context, args []string) int {
	f := c.newFlags("wait")
	every := f.Duration("every", defaultEvery, "off a terminal, print the run's progress every `D` (and as each attempt ends)")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 1, 1, "RUN"); !ok {
		return code
	}
	if *every <= 0 {
		return c.usageError("wait", "--every %v: want a positive duration", *every)
	}
	id := pos[0]
	if !strings.HasPrefix(id, "r-") {
		return c.usageError("wait", "%q is not a run id (r-...)", id)
	}
	st, err := c.api().RunStatus(ctx, id)
	if err != nil {
		return c.fail("wait", exitError, err)
	}
	return c.followRun(ctx, "wait", f.json, *every, st.Run, false)
}
