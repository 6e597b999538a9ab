package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"benchd.dev/daemon/runs"
	"benchd.dev/graders"
	"benchd.dev/limits"
	"benchd.dev/tasks"
)

// gradeOutput is the --json form of a verdict.
type gradeOutput struct {
	Task    string           `json:"task"`
	Pass    bool             `json:"pass"`
	Reward  int              `json:"reward"`
	Reasons []graders.Reason `json:"reasons"`
	Detail  string           `json:"detail,omitempty"`
}

// runGrade implements "benchd grade --task ID [--tasks DIR] [--json] DIR":
// it grades the finished workspace DIR against the task's hidden tests
// and the shared rules (the changeset is DIR against the bundle's
// workspace; agent facts such as exit status are unknown and not
// checked). As root, grader commands run confined as the daemon runs
// them (a sandbox with its own cgroup and a closed network namespace, the
// task store masked); otherwise they run directly. Exit 0 pass, 1 fail,
// 2 bad usage or infra error.
func runGrade(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("grade", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	id := fl.String("task", "", "task id (rt-01) or bundle directory name")
	dir := fl.String("tasks", "", "directory of task bundles (default: $BENCHD_TASKS, then beside the binary)")
	asJSON := fl.Bool("json", false, "print the verdict as one JSON object")
	// Flags may follow the workspace argument too.
	var pos []string
	for rest := args; ; {
		if err := fl.Parse(rest); err != nil {
			return fail(stderr, 2, "grade: %v", err)
		}
		if fl.NArg() == 0 {
			break
		}
		pos = append(pos, fl.Arg(0))
		rest = fl.Args()[1:]
	}
	if *id == "" {
		return fail(stderr, 2, "grade: --task is required")
	}
	if len(pos) != 1 {
		return fail(stderr, 2, "grade: want exactly one workspace DIR, got %d", len(pos))
	}
	ws := pos[0]
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return fail(stderr, 2, "grade: workspace %s is not a directory", ws)
	}
	root := *dir
	if root == "" {
		root = tasks.DefaultDir()
	}
	task, err := tasks.Find(root, *id)
	if err != nil {
		return fail(stderr, 2, "grade: %v", err)
	}
	// A private scratch root: 0711 (a confined grader's uid passes
	// through it to the 0700 scratch handed to it), removed at the end.
	scratch, err := os.MkdirTemp("", "benchd-grade-")
	if err != nil {
		return fail(stderr, 2, "grade: %v", err)
	}
	defer os.RemoveAll(scratch)
	if err := os.Chmod(scratch, 0o711); err != nil {
		return fail(stderr, 2, "grade: %v", err)
	}
	var runner graders.Runner = graders.ExecRunner{}
	if os.Geteuid() == 0 {
		store, err := filepath.Abs(root)
		if err != nil {
			return fail(stderr, 2, "grade: %v", err)
		}
		deleg, err := limits.Delegate(ctx, limits.DelegateConfig{})
		if err != nil {
			return fail(stderr, 2, "grade: unable to prepare cgroups for the graders: %v", err)
		}
		defer deleg.Undo()
		runner = runs.ConfinedGraderRunner(runs.GraderRunnerConfig{Mask: []string{store}, CgroupParent: deleg.Parent, MemoryMax: int64(task.MemoryMB) << 20, ScratchRoot: scratch})
	}
	v, err := graders.Grade(ctx, graders.Input{Task: task, Workspace: ws, ScratchRoot: scratch}, runner)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fail(stderr, 2, "grade: interrupted")
		}
		return fail(stderr, 2, "grade: %v", err)
	}
	if *asJSON {
		out := gradeOutput{Task: task.ID, Pass: v.Pass, Reward: v.Reward, Reasons: v.Reasons, Detail: v.Detail}
		if out.Reasons == nil {
			out.Reasons = []graders.Reason{}
		}
		if err := json.NewEncoder(stdout).Encode(out); err != nil {
			return fail(stderr, 2, "grade: %v", err)
		}
	} else {
		word := "FAIL"
		if v.Pass {
			word = "PASS"
		}
		fmt.Fprintf(stdout, "%s %s (reward %d)\n", word, task.ID, v.Reward)
		for _, r := range v.Reasons {
			fmt.Fprintf(stdout, "  %s: %s\n", r.Code, r.Message)
		}
	}
	if !v.Pass {
		return 1
	}
	return 0
}
