package graders

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"benchd.dev/tasks"
)

// repoTasks is the repository's bundle directory.
const repoTasks = "../tasks"

// loadRepoTask loads one bundle of the repository by id.
func loadRepoTask(t *testing.T, id string) *tasks.Task {
	t.Helper()
	task, err := tasks.Find(repoTasks, id)
	if err != nil {
		t.Fatalf("Find(%s): %v", id, err)
	}
	return task
}

// materialize builds the finished workspace of an attempt: a copy of the
// bundle's workspace with the attempt applied.
func materialize(t *testing.T, task *tasks.Task, a tasks.Attempt) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "workspace")
	if err := tasks.CopyTree(task.WorkspaceDir(), dir); err != nil {
		t.Fatal(err)
	}
	if err := tasks.ApplyOverlay(dir, a.Dir, a.Delete); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gradeDir grades a finished workspace with an agent that exited 0.
func gradeDir(t *testing.T, task *tasks.Task, dir string) Verdict {
	t.Helper()
	zero := 0
	v, err := Grade(context.Background(), Input{Task: task, Workspace: dir, AgentExit: &zero, ScratchRoot: t.TempDir()}, ExecRunner{})
	if err != nil {
		t.Fatalf("Grade: %v", err)
	}
	return v
}

func removeFile(root, rel string) error {
	return os.Remove(filepath.Join(root, filepath.FromSlash(rel)))
}
