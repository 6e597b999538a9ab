package graders

import (
	"context"
	"testing"
)

// oomKiller is a Runner whose every command the OOM killer stops.
type oomKiller struct{}

func (oomKiller) Run(context.Context, RunSpec) (RunResult, error) {
	return RunResult{ExitCode: -1, Signal: 9, OOM: true}, nil
}

// TestGraderOOM: a grader command killed at the memory limit is the
// agent's failure (grader_oom), for every kind, never an infra error.
func TestGraderOOM(t *testing.T) {
	for _, id := range []string{"rt-01", "rt-02", "rt-03", "rt-04", "rt-05", "rt-06"} {
		t.Run(id, func(t *testing.T) {
			task := loadRepoTask(t, id)
			ws := materialize(t, task, task.Reference())
			zero := 0
			v, err := Grade(context.Background(), Input{Task: task, Workspace: ws, AgentExit: &zero, ScratchRoot: t.TempDir()}, oomKiller{})
			if err != nil {
				t.Fatalf("Grade: %v, want a verdict", err)
			}
			if v.Pass || !v.Has(CodeGraderOOM) {
				t.Fatalf("got pass %v, codes %v; want a failure with %s", v.Pass, v.Codes(), CodeGraderOOM)
			}
		})
	}
}
