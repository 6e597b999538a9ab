package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"benchd.dev/client/apitype"
	"benchd.dev/forensics"
	"benchd.dev/fsmon/journal"
	"benchd.dev/reason"
	"benchd.dev/tasks"
)

// planFile is the plan the daemon puts in the workspace (daemon/runs);
// it is not the agent's work, and the grade step removes it too.
const planFile = "plan.md"

// regraded is what `benchd grade --json` prints.
type regraded struct {
	Task    string           `json:"task"`
	Outcome string           `json:"outcome"`
	Pass    bool             `json:"pass"`
	Reward  int              `json:"reward"`
	Reasons []apitype.Reason `json:"reasons"`
	Seed    uint64           `json:"seed"`
}

// regrade grades the archive's attempt again: it checks that tasksDir
// holds the bundle the attempt was graded with, rebuilds the final tree
// from the journal, runs `benchd grade --attempt` on it (the grader the
// daemon runs, with the facts the attempt recorded and the seed of its
// checks), and compares the verdicts. root is the unpacked archive.
func regrade(ctx context.Context, root string, a apitype.Attempt, recs []journal.Record, blobs *journal.Blobs, tasksDir, benchd string) (string, error) {
	if !a.HasVerdict() {
		return "", fmt.Errorf("attempt %s has no verdict to compare with (state %s)", a.ID, a.State)
	}
	task, err := tasks.Find(tasksDir, a.Task)
	if err != nil {
		return "", fmt.Errorf("task %s in %s: %w", a.Task, tasksDir, err)
	}
	sha, err := task.BundleSHA256()
	if err != nil {
		return "", fmt.Errorf("unable to hash the bundle %s: %w", task.Dir, err)
	}
	if a.TaskSHA256 == "" {
		return "", errors.New("attempt.json names no task bundle (task_sha256): nothing says which bundle graded it")
	}
	if sha != a.TaskSHA256 {
		return "", fmt.Errorf("the attempt was graded with bundle %s, but %s holds bundle %s", shortSHA(a.TaskSHA256), task.Dir, shortSHA(sha))
	}
	tmp, err := os.MkdirTemp("", "benchctl-regrade-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	final := filepath.Join(tmp, "final")
	if err := journal.Replay(recs, blobs, ^uint64(0), final); err != nil {
		return "", fmt.Errorf("unable to rebuild the final tree: %w", err)
	}
	if err := os.Remove(filepath.Join(final, planFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	// The grader's commands run as another uid: the tree must be
	// readable on the way there.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	args := []string{"grade", "--task", a.Task, "--tasks", tasksDir, "--attempt", filepath.Join(root, forensics.AttemptFile),
		"--stdout", filepath.Join(root, filepath.FromSlash(forensics.StdoutFile)), "--journal", filepath.Join(root, forensics.JournalFile), "--json", final}
	cmd := exec.CommandContext(ctx, benchd, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return "", fmt.Errorf("%s grade: %v: %s", benchd, err, strings.TrimSpace(errb.String()))
	}
	var got regraded
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		return "", fmt.Errorf("%s grade printed no verdict: %v", benchd, err)
	}
	// A reviewed attempt's verdict is the reviewer's: the grader's is the
	// one it left to review.
	want := verdictWords(a.Pass, a.Reward, codesOf(a.Reasons))
	if a.Review != nil {
		g := a.Review.Graded
		want = verdictWords(g.Pass, g.Reward, codesOf(g.Reasons))
	}
	have := verdictWords(got.Pass, got.Reward, codesOf(got.Reasons))
	if want != have {
		return "", fmt.Errorf("graded again, the attempt gets %s; attempt.json says %s", have, want)
	}
	return fmt.Sprintf("graded again with bundle %s and seed %d: %s, as attempt.json says", shortSHA(sha), got.Seed, have), nil
}

func codesOf(rs []apitype.Reason) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Code)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// verdictWords is a verdict as verify compares it: outcome, reward and
// reason codes (messages may carry host-specific figures). A verdict left
// to review carries needs_review.
func verdictWords(pass bool, reward int, codes []string) string {
	outcome := "fail"
	switch {
	case pass:
		outcome = "pass"
	case slices.Contains(codes, reason.NeedsReview):
		outcome = "review"
	}
	s := fmt.Sprintf("%s (reward %d)", outcome, reward)
	if len(codes) > 0 {
		s += " with " + strings.Join(codes, ", ")
	}
	return s
}

// findBenchd is the benchd binary verify --regrade runs: flag, else the
// one beside this benchctl, else benchd on PATH.
func findBenchd(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "benchd")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	p, err := exec.LookPath("benchd")
	if err != nil {
		return "", errors.New("--regrade needs the benchd binary (its grader): give --benchd PATH")
	}
	return p, nil
}
