package main

import (
	"benchd.dev/fsmon/journal"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/testenv"
	"benchd.dev/tasks"
)

const repoTasks = "../../tasks"

// workspaceOf builds rt-01's workspace with the named attempt applied.
func workspaceOf(t *testing.T, attempt string) string {
	t.Helper()
	task, err := tasks.Find(repoTasks, "rt-01")
	if err != nil {
		t.Fatal(err)
	}
	a, err := task.Attempt(attempt)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ws")
	if err := tasks.CopyTree(task.WorkspaceDir(), dir); err != nil {
		t.Fatal(err)
	}
	if err := tasks.ApplyOverlay(dir, a.Dir, a.Delete); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunGrade(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	ref := workspaceOf(t, "reference")
	broken := workspaceOf(t, "edits-tests")
	task, err := tasks.Find(repoTasks, "rt-01")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := task.BundleSHA256()
	if err != nil {
		t.Fatal(err)
	}
	attemptFile := func(a apitype.Attempt) string {
		p := filepath.Join(t.TempDir(), "attempt.json")
		b, _ := json.Marshal(a)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	recorded := apitype.Attempt{ID: "a-1", Task: "rt-01", TaskSHA256: sha, ExitCode: 0, GradeSeed: 77}
	exited3 := recorded
	exited3.ExitCode = 3
	refused := recorded
	refused.Denied = 2
	otherBundle := recorded
	otherBundle.TaskSHA256 = strings.Repeat("ab", 32)
	otherTask := recorded
	otherTask.Task = "rt-02"
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout
		wantErr  string   // substring of stderr
	}{
		{"reference passes", []string{"--task", "rt-01", "--tasks", repoTasks, ref}, 0, []string{"PASS rt-01 (reward 1, seed "}, ""},
		{"seed kept", []string{"--task", "rt-01", "--tasks", repoTasks, "--seed", "12345", ref}, 0, []string{"PASS rt-01 (reward 1, seed 12345)"}, ""},
		{"bad seed", []string{"--task", "rt-01", "--tasks", repoTasks, "--seed", "-1", ref}, 2, nil, "invalid value"},
		{"flags after dir", []string{ref, "--tasks", repoTasks, "--task", "rt-01-circular-counter"}, 0, []string{"PASS rt-01"}, ""},
		{"wrong files fail", []string{"--task", "rt-01", "--tasks", repoTasks, broken}, 1, []string{"FAIL rt-01 (reward 0, seed ", "wrong_files: ", "tests/test_public.py (modified)"}, ""},
		{"no task", []string{"--tasks", repoTasks, ref}, 2, nil, "--task is required"},
		{"no dir", []string{"--task", "rt-01", "--tasks", repoTasks}, 2, nil, "exactly one workspace DIR"},
		{"two dirs", []string{"--task", "rt-01", "--tasks", repoTasks, ref, ref}, 2, nil, "exactly one workspace DIR"},
		{"unknown task", []string{"--task", "rt-77", "--tasks", repoTasks, ref}, 2, nil, "task not found"},
		{"bad task id", []string{"--task", "../etc", "--tasks", repoTasks, ref}, 2, nil, "invalid task"},
		{"missing dir", []string{"--task", "rt-01", "--tasks", repoTasks, "/nonexistent/ws"}, 2, nil, "not a directory"},
		{"bad flag", []string{"--bogus"}, 2, nil, "flag provided but not defined"},
		// With an attempt's recorded facts, as verify --regrade runs it.
		{"recorded facts pass", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", attemptFile(recorded), ref}, 0, []string{"PASS rt-01 (reward 1, seed 77)"}, ""},
		{"recorded exit status", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", attemptFile(exited3), ref}, 1, []string{"agent_exit_nonzero"}, ""},
		{"recorded refused edits", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", attemptFile(refused), ref}, 1, []string{"wrong_files: the agent tried 2 change(s)"}, ""},
		{"another bundle", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", attemptFile(otherBundle), ref}, 2, nil, "was graded with bundle abab"},
		{"another task", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", attemptFile(otherTask), ref}, 2, nil, `the attempt is of task "rt-02"`},
		{"not an attempt", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", repoTasks + "/rt-01-circular-counter/task.toml", ref}, 2, nil, "--attempt"},
		{"stdout alone", []string{"--task", "rt-01", "--tasks", repoTasks, "--stdout", "x", ref}, 2, nil, "--stdout and --journal need --attempt"},
		{"journal alone", []string{"--task", "rt-01", "--tasks", repoTasks, "--journal", "x", ref}, 2, nil, "--stdout and --journal need --attempt"},
		{"journal with a cap", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", attemptFile(recorded), "--journal", capJournal(t), ref}, 1, []string{"workspace_cap: ", "files"}, ""},
		{"journal without caps", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", attemptFile(recorded), "--journal", capJournal(t, "no cap"), ref}, 0, []string{"PASS rt-01"}, ""},
		{"missing journal", []string{"--task", "rt-01", "--tasks", repoTasks, "--attempt", attemptFile(recorded), "--journal", "/nonexistent/journal.jsonl", ref}, 2, nil, "--journal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runGrade(context.Background(), tt.args, &out, &errb)
			if code != tt.wantCode {
				t.Fatalf("got exit %d, want %d; stdout %q stderr %q", code, tt.wantCode, out.String(), errb.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout %q: want it to contain %q", out.String(), w)
				}
			}
			if tt.wantErr != "" {
				if !strings.Contains(errb.String(), tt.wantErr) || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
					t.Errorf("stderr %q: want one line containing %q", errb.String(), tt.wantErr)
				}
			}
		})
	}
}

func TestRunGradeJSON(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	tests := []struct {
		attempt  string
		wantCode int
		wantPass bool
		wantRsn  string
	}{
		{"reference", 0, true, ""},
		{"untouched", 1, false, "tests_failed"},
		{"imports-non-stdlib", 1, false, "non_stdlib_import"},
	}
	for _, tt := range tests {
		t.Run(tt.attempt, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runGrade(context.Background(), []string{"--json", "--task", "rt-01", "--tasks", repoTasks, workspaceOf(t, tt.attempt)}, &out, &errb)
			if code != tt.wantCode {
				t.Fatalf("got exit %d, want %d; stderr %q", code, tt.wantCode, errb.String())
			}
			var got struct {
				Pass    *bool `json:"pass"`
				Reward  *int  `json:"reward"`
				Reasons []struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"reasons"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("stdout is not one JSON object: %v: %q", err, out.String())
			}
			if got.Pass == nil || got.Reward == nil || got.Reasons == nil {
				t.Fatalf("got %q, want pass, reward and reasons all present", out.String())
			}
			wantReward := 0
			if tt.wantPass {
				wantReward = 1
			}
			if *got.Pass != tt.wantPass || *got.Reward != wantReward {
				t.Errorf("got pass %v reward %d, want %v %d", *got.Pass, *got.Reward, tt.wantPass, wantReward)
			}
			found := tt.wantRsn == ""
			for _, r := range got.Reasons {
				if r.Code == tt.wantRsn && r.Message != "" {
					found = true
				}
			}
			if !found {
				t.Errorf("got reasons %+v, want code %q with a message", got.Reasons, tt.wantRsn)
			}
		})
	}
}

func TestRunGradeDefaultDir(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	abs, err := filepath.Abs(repoTasks)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BENCHD_TASKS", abs)
	var out, errb bytes.Buffer
	if code := runGrade(context.Background(), []string{"--task", "rt-01", workspaceOf(t, "reference")}, &out, &errb); code != 0 {
		t.Fatalf("got exit %d, want 0; stderr %q", code, errb.String())
	}
}

// capJournal writes a journal that holds a files-cap record, or none
// when called with a note, and returns its path.
func capJournal(t *testing.T, none ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "journal.jsonl")
	w, err := journal.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	r := journal.Record{Op: journal.OpCap, Name: journal.CapFiles, Path: "out/f100001", Result: "EDQUOT"}
	if len(none) > 0 {
		r = journal.Record{Op: journal.OpOpen, Path: "src/counter.py", Result: "ok"}
	}
	if _, err := w.Append(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}
