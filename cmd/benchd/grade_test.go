package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

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
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout
		wantErr  string   // substring of stderr
	}{
		{"reference passes", []string{"--task", "rt-01", "--tasks", repoTasks, ref}, 0, []string{"PASS rt-01 (reward 1)"}, ""},
		{"flags after dir", []string{ref, "--tasks", repoTasks, "--task", "rt-01-circular-counter"}, 0, []string{"PASS rt-01"}, ""},
		{"wrong files fail", []string{"--task", "rt-01", "--tasks", repoTasks, broken}, 1, []string{"FAIL rt-01 (reward 0)", "wrong_files: ", "tests/test_public.py (modified)"}, ""},
		{"no task", []string{"--tasks", repoTasks, ref}, 2, nil, "--task is required"},
		{"no dir", []string{"--task", "rt-01", "--tasks", repoTasks}, 2, nil, "exactly one workspace DIR"},
		{"two dirs", []string{"--task", "rt-01", "--tasks", repoTasks, ref, ref}, 2, nil, "exactly one workspace DIR"},
		{"unknown task", []string{"--task", "rt-77", "--tasks", repoTasks, ref}, 2, nil, "task not found"},
		{"bad task id", []string{"--task", "../etc", "--tasks", repoTasks, ref}, 2, nil, "invalid task"},
		{"missing dir", []string{"--task", "rt-01", "--tasks", repoTasks, "/nonexistent/ws"}, 2, nil, "not a directory"},
		{"bad flag", []string{"--bogus"}, 2, nil, "flag provided but not defined"},
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
