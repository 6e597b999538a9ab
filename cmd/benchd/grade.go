package main

import (
	"benchd.dev/fsmon/journal"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/graders"
	"benchd.dev/limits"
	"benchd.dev/tasks"
)

// gradeOutput is the --json form of a verdict.
type gradeOutput struct {
	Task    string           `json:"task"`
	Outcome string           `json:"outcome"` // pass, fail or review
	Pass    bool             `json:"pass"`
	Reward  int              `json:"reward"`
	Reasons []graders.Reason `json:"reasons"`
	Detail  string           `json:"detail,omitempty"`
	Seed    uint64           `json:"seed"` // of the generated checks: --seed repeats them
}

// runGrade implements "benchd grade --task ID [--tasks DIR] [--seed N]
// [--attempt FILE [--stdout FILE] [--journal FILE]] [--json] DIR": it grades the finished
// workspace DIR against the task's hidden checks and the shared rules.
// Without --attempt the changeset is DIR against the bundle's workspace
// and agent facts such as exit status are unknown and not checked. With
// --attempt (an attempt.json, as an export holds it) the grading takes
// that attempt's recorded facts (runs.RecordedFacts: exit status,
// timeout, refused edits, network use, changeset, the checks' seed, and
// the final message from --stdout, the workspace caps hit from the cap
// records of --journal), and a bundle whose hash differs from
// the attempt's is refused: this is what `benchctl verify --regrade`
// runs. As root, grader commands run confined as the daemon runs them (a
// sandbox with its own cgroup and a closed network namespace, the task
// store masked); otherwise they run directly. Exit 0 pass, 1 fail or
// review, 2 bad usage or infra error.
func runGrade(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("grade", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	id := fl.String("task", "", "task id (rt-01) or bundle directory name")
	dir := fl.String("tasks", "", "directory of task bundles (default: $BENCHD_TASKS, then beside the binary)")
	asJSON := fl.Bool("json", false, "print the verdict as one JSON object")
	seed := fl.Uint64("seed", 0, "seed of the task's generated checks (default: the attempt's with --attempt, else a random one; the verdict prints it)")
	attemptFile := fl.String("attempt", "", "grade with the facts an attempt recorded: its attempt.json (as exported)")
	stdoutFile := fl.String("stdout", "", "with --attempt: the agent's stdout (transcript/stdout), for its final message")
	journalFile := fl.String("journal", "", "with --attempt: the attempt's journal (journal.jsonl), for the workspace caps it hit")
	// Flags may follow the workspace argument too.
	var pos []string
	for rest := args; ; {
		if code, ok := parseFlags(fl, rest, stdout, stderr, "DIR", []string{"benchd grade --task rt-01 --tasks ./tasks /tmp/workspace"}); !ok {
			return code
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
		runner = runs.ConfinedGraderRunner(runs.GraderRunnerConfig{Mask: []string{store}, Binds: runs.TaskBinds(task), CgroupParent: deleg.Parent, MemoryMax: int64(task.MemoryMB) << 20, ScratchRoot: scratch})
	}
	in := graders.Input{}
	if *attemptFile != "" {
		a, err := readAttemptFile(*attemptFile)
		if err != nil {
			return fail(stderr, 2, "grade: --attempt: %v", err)
		}
		if a.Task != task.ID {
			return fail(stderr, 2, "grade: --attempt: the attempt is of task %q, not %s", a.Task, task.ID)
		}
		sha, err := task.BundleSHA256()
		if err != nil {
			return fail(stderr, 2, "grade: %v", err)
		}
		if a.TaskSHA256 != "" && sha != a.TaskSHA256 {
			return fail(stderr, 2, "grade: the attempt was graded with bundle %s of %s, but %s holds bundle %s", a.TaskSHA256, task.ID, task.Dir, sha)
		}
		in = runs.RecordedFacts(a, *stdoutFile)
		if *journalFile != "" {
			// The view's caps are journal records, not attempt facts.
			recs, err := journal.Read(*journalFile)
			if err != nil {
				return fail(stderr, 2, "grade: --journal: %v", err)
			}
			in.Caps = journal.CapsOf(recs)
		}
	} else if *stdoutFile != "" || *journalFile != "" {
		return fail(stderr, 2, "grade: --stdout and --journal need --attempt")
	}
	in.Task, in.Workspace, in.ScratchRoot = task, ws, scratch
	if *seed != 0 {
		in.Seed = *seed
	}
	v, err := graders.Grade(ctx, in, runner)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fail(stderr, 2, "grade: interrupted")
		}
		return fail(stderr, 2, "grade: %v", err)
	}
	if *asJSON {
		out := gradeOutput{Task: task.ID, Outcome: v.Outcome, Pass: v.Pass, Reward: v.Reward, Reasons: v.Reasons, Detail: v.Detail, Seed: v.Seed}
		if out.Reasons == nil {
			out.Reasons = []graders.Reason{}
		}
		if err := json.NewEncoder(stdout).Encode(out); err != nil {
			return fail(stderr, 2, "grade: %v", err)
		}
	} else {
		word := "FAIL"
		switch {
		case v.Pass:
			word = "PASS"
		case v.Review():
			word = "REVIEW"
		}
		fmt.Fprintf(stdout, "%s %s (reward %d, seed %d)\n", word, task.ID, v.Reward, v.Seed)
		for _, r := range v.Reasons {
			fmt.Fprintf(stdout, "  %s: %s\n", r.Code, r.Message)
		}
	}
	if !v.Pass {
		return 1
	}
	return 0
}

// readAttemptFile reads an attempt.json.
func readAttemptFile(p string) (apitype.Attempt, error) {
	var a apitype.Attempt
	b, err := os.ReadFile(p)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("%s: %v", p, err)
	}
	if a.ID == "" || a.Task == "" {
		return a, fmt.Errorf("%s is not an attempt.json (no id or task)", p)
	}
	return a, nil
}
