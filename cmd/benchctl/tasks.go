package main

import (
	"context"
	"fmt"
	"strings"

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
	ts, err := c.api().Tasks(ctx)
	if err != nil {
		return c.fail("tasks list", exitError, err)
	}
	if f.json {
		for i := range ts {
			if ts[i].KnownAttempts == nil {
				ts[i].KnownAttempts = []string{}
			}
		}
		c.printJSON(apitype.TaskList{Tasks: ts})
		return exitOK
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

func (c *CLI) cmdTasksCheck(ctx context.Context, args []string) int {
	f := c.newFlags("tasks check")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 1, ""); !ok {
		return code
	}
	task := ""
	if len(pos) == 1 {
		task = pos[0]
	}
	if c.Terminal && !f.json {
		fmt.Fprintln(c.Stdout, "running the reference and every known attempt through the pipeline...")
	}
	tc, err := c.api().CheckTasks(ctx, task)
	if err != nil {
		return c.fail("tasks check", exitError, err)
	}
	code = exitOK
	if !tc.OK {
		code = exitNo
	}
	if f.json {
		if tc.Results == nil {
			tc.Results = []apitype.CheckResult{}
		}
		c.printJSON(tc)
		return code
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
