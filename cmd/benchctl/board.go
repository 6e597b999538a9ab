package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
	"benchd.dev/draw"
)

// historyLimit is how many stored attempts of a task a streak or a
// scorecard reads (the daemon's largest page).
const historyLimit = 10000

// boardFlags are the flags of board.
type boardFlags struct {
	agent    string
	streak   int
	attempts int
	models   stringList
	// history is the filter of the attempts the streaks count (the
	// task is each suite task's).
	history client.AttemptFilter
}

func (c *CLI) cmdBoard(ctx context.Context, args []string) int {
	f := c.newFlags("board")
	var bf boardFlags
	f.StringVar(&bf.agent, "agent", "", "agent: builtin:reference, builtin:null, builtin:attempt:NAME or a command line")
	f.IntVar(&bf.streak, "streak", draw.DefaultStreak, "consecutive passes each task needs on one frozen agent")
	f.IntVar(&bf.attempts, "attempts", 1, fmt.Sprintf("attempts per task in this run, 1 to %d", apitype.MaxAttempts))
	f.Var(&bf.models, "model", "run the suite once for model `M` (repeatable; one board per model)")
	var ff filterFlags
	ff.register(f, filterSet{allPurposes: true})
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	var err error
	if bf.history, err = ff.filter(time.Now(), true); err != nil {
		return c.usageError("board", "%v", err)
	}
	bf.history.Limit = historyLimit
	switch {
	case bf.agent == "":
		return c.usageError("board", "missing --agent")
	case bf.streak < 1:
		return c.usageError("board", "--streak %d: want 1 or more", bf.streak)
	case bf.attempts < 1 || bf.attempts > apitype.MaxAttempts:
		return c.usageError("board", "--attempts %d: want 1 to %d", bf.attempts, apitype.MaxAttempts)
	}
	models := []string(bf.models)
	if len(models) == 0 {
		models = []string{""}
	}
	// Progress goes to stdout, or to stderr when stdout carries JSON.
	progress := c.Stdout
	if f.json {
		progress = c.Stderr
	}
	var boards []draw.Board
	infra := false
	for _, m := range models {
		b, sawInfra, err := c.runBoard(ctx, progress, bf, m, c.Terminal && !f.json)
		if err != nil {
			return c.fail("board", exitError, err)
		}
		infra = infra || sawInfra
		boards = append(boards, b)
		if !f.json {
			printBoard(c.Stdout, bf.agent, b)
		}
	}
	if f.json {
		c.printJSON(boardResult{Agent: bf.agent, Green: allGreen(boards), Boards: boards})
	}
	switch {
	case allGreen(boards):
		return exitOK
	case infra:
		return exitError
	}
	return exitNo
}

// boardResult is what board --json prints.
type boardResult struct {
	Agent  string       `json:"agent"`
	Green  bool         `json:"green"` // every board is green
	Boards []draw.Board `json:"boards"`
}

func allGreen(bs []draw.Board) bool {
	for _, b := range bs {
		if !b.Green {
			return false
		}
	}
	return len(bs) > 0
}

// runBoard runs the suite once for model and computes its board. It
// prints a line per task as the task finishes, and the live attempt lines
// while it runs when live, else a line per attempt as it ends.
func (c *CLI) runBoard(ctx context.Context, w io.Writer, bf boardFlags, model string, live bool) (draw.Board, bool, error) {
	in := draw.BoardInput{Model: model, Target: bf.streak, Runs: map[string][]apitype.Attempt{}, History: map[string][]apitype.Attempt{}}
	who := bf.agent
	if model != "" {
		who += " [model " + model + "]"
	}
	fmt.Fprintf(w, "board: %s, %d attempt(s) per task, streak target %d\n", who, bf.attempts, bf.streak)
	gatePassed, infra := false, false
	for _, task := range draw.SuiteTasks {
		if task != draw.GateTask && draw.Skipped(task, gatePassed) {
			fmt.Fprintf(w, "  %-6s skipped (gate %s did not pass)\n", task, draw.GateTask)
			continue
		}
		run, err := c.api().CreateRun(ctx, apitype.RunRequest{Task: task, Agent: bf.agent, Attempts: bf.attempts, Model: model})
		if err != nil {
			return draw.Board{}, infra, fmt.Errorf("%s: %w", task, err)
		}
		// Off a terminal, a line as each attempt ends: a task's attempts
		// may take minutes before its line.
		var ended func(apitype.Attempt)
		if !live {
			done := 0
			ended = func(a apitype.Attempt) {
				done++
				fmt.Fprintf(w, "    %s %s: %s%s [%d of %d done]\n", a.ID, task, verdict(a), attemptTime(a), done, len(run.Attempts))
			}
		}
		as, err := c.watchEnded(ctx, run, live, ended)
		if err != nil {
			return draw.Board{}, infra, fmt.Errorf("%s: %w", task, err)
		}
		in.Runs[task] = as
		hist, err := c.api().Attempts(ctx, bf.taskHistory(task))
		if err != nil {
			return draw.Board{}, infra, fmt.Errorf("%s: unable to read its attempts: %w", task, err)
		}
		in.History[task] = hist
		if task == draw.GateTask {
			gatePassed = draw.GatePassed(as)
		}
		var outs []string
		streak := draw.Streak{}
		for _, a := range as {
			outs = append(outs, draw.Outcome(a))
			infra = infra || a.State == apitype.StateInfraError
			if id := draw.IdentityOf(a.Agent); !id.IsZero() {
				streak = draw.StreakFor(hist, id)
			}
		}
		pending := ""
		if streak.PendingOn != "" {
			pending = fmt.Sprintf(" (counted up to %s, left to review)", streak.PendingOn)
		}
		fmt.Fprintf(w, "  %-6s %s  streak %d of %d%s\n", task, strings.Join(outs, ", "), streak.Passes, bf.streak, pending)
	}
	// Skipped tasks still have a streak from earlier runs.
	for _, task := range draw.SuiteTasks {
		if _, ok := in.History[task]; ok {
			continue
		}
		hist, err := c.api().Attempts(ctx, bf.taskHistory(task))
		if err != nil {
			return draw.Board{}, infra, fmt.Errorf("%s: unable to read its attempts: %w", task, err)
		}
		in.History[task] = hist
	}
	return draw.Evaluate(in), infra, nil
}

// taskHistory is the filter of task's attempts its streak counts.
func (bf boardFlags) taskHistory(task string) client.AttemptFilter {
	f := bf.history
	f.Task = task
	return f
}

// printBoard prints one board.
func printBoard(w io.Writer, agent string, b draw.Board) {
	who := agent
	if b.Model != "" {
		who += " [model " + b.Model + "]"
	}
	state := "NOT GREEN"
	if b.Green {
		state = "GREEN"
	}
	fmt.Fprintf(w, "\nboard %s: %s (every task needs %d consecutive passes on one identity)\n", who, state, b.Target)
	tw := newTable(w)
	fmt.Fprintln(tw, "TASK\tTHIS RUN\tOUTCOMES\tSTREAK\tIDENTITY")
	for _, r := range b.Rows {
		outs := strings.Join(r.Outcomes, ", ")
		if outs == "" {
			outs = "-"
		}
		met := ""
		if r.Met {
			met = " (met)"
		}
		id := "-"
		if !r.Streak.Identity.IsZero() {
			id = r.Streak.Identity.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d of %d%s\t%s\n", r.Task, r.Status, outs, r.Streak.Passes, b.Target, met, id)
	}
	tw.Flush()
	if !b.GatePassed {
		fmt.Fprintf(w, "gate %s did not pass: %s skipped (not failed)\n", draw.GateTask, strings.Join(draw.GatedTasks, ", "))
	}
	if b.Unresolved > 0 {
		var ids []string
		for _, r := range b.Rows {
			ids = append(ids, r.Unresolved...)
		}
		fmt.Fprintf(w, "unresolved: %s of this run left to review, neither passed nor failed (%s): benchctl review ATTEMPT --pass|--fail --why TEXT\n",
			plural(b.Unresolved, "attempt"), strings.Join(ids, ", "))
	}
	for _, why := range b.NotGreen {
		fmt.Fprintf(w, "  not green: %s\n", why)
	}
}
