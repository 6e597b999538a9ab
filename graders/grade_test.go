package graders

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
	"benchd.dev/tasks"
)

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSharedRules checks each shared rule on rt-01's reference solution,
// which passes on its own: every failure comes from the rule under test.
func TestSharedRules(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	task := loadRepoTask(t, "rt-01")
	one, zero := 1, 0
	counter := "src/counter.py"
	tests := []struct {
		name      string
		in        func(in *Input)
		edit      func(t *testing.T, dir string)
		wantCodes []string
	}{
		{"clean", nil, nil, nil},
		{"exit unknown", func(in *Input) { in.AgentExit = nil }, nil, nil},
		{"exit nonzero", func(in *Input) { in.AgentExit = &one }, nil, []string{CodeAgentExit}},
		{"timeout", func(in *Input) { in.TimedOut = true }, nil, []string{CodeTimeout}},
		{"network", func(in *Input) { in.Network = []string{"203.0.113.7:443"} }, nil, []string{CodeNetwork}},
		{"every rule at once", func(in *Input) { in.AgentExit = &one; in.TimedOut = true; in.Network = []string{"x:80"} }, nil,
			[]string{CodeAgentExit, CodeTimeout, CodeNetwork}},
		{"caches are ignored", nil, func(t *testing.T, dir string) {
			writeFile(t, dir, "src/__pycache__/counter.cpython-311.pyc", "junk")
			writeFile(t, dir, ".pytest_cache/v/cache/nodeids", "[]")
			writeFile(t, dir, "tests/x.pyc", "junk")
		}, nil},
		{"denied file added", nil, func(t *testing.T, dir string) { writeFile(t, dir, "notes.txt", "hi\n") }, []string{CodeWrongFiles}},
		{"denied file deleted", nil, func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "tests/test_public.py")); err != nil {
				t.Fatal(err)
			}
		}, []string{CodeWrongFiles}},
		{"denied mode change", nil, func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "src/__init__.py"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{CodeWrongFiles}},
		{"third-party import", nil, func(t *testing.T, dir string) {
			appendFile(t, dir, counter, "\ntry:\n    import requests.adapters\nexcept ImportError:\n    pass\n")
		}, []string{CodeNonStdlib}},
		{"dynamic third-party import", nil, func(t *testing.T, dir string) {
			appendFile(t, dir, counter, "\ntry:\n    __import__('yaml')\nexcept ImportError:\n    pass\n")
		}, []string{CodeNonStdlib}},
		{"stdlib, relative and local imports", nil, func(t *testing.T, dir string) {
			appendFile(t, dir, counter, "\nimport collections.abc\nfrom . import __name__ as _n\nimport src\n"+
				"try:\n    import counter\nexcept ImportError:\n    pass\n")
		}, nil},
		{"syntax error is not an import violation", nil, func(t *testing.T, dir string) {
			appendFile(t, dir, counter, "\ndef broken(:\n")
		}, []string{CodeTestsFailed, CodeChecksFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := materialize(t, task, task.Reference())
			if tt.edit != nil {
				tt.edit(t, dir)
			}
			in := Input{Task: task, Workspace: dir, AgentExit: &zero, ScratchRoot: t.TempDir()}
			if tt.in != nil {
				tt.in(&in)
			}
			v, err := Grade(context.Background(), in, ExecRunner{})
			if err != nil {
				t.Fatalf("Grade: %v", err)
			}
			if got := v.Codes(); !reflect.DeepEqual(got, orEmpty(tt.wantCodes)) {
				t.Fatalf("got codes %v (%v), want %v", got, v.Reasons, orEmpty(tt.wantCodes))
			}
			wantPass := len(tt.wantCodes) == 0
			if v.Pass != wantPass || (v.Reward == 1) != wantPass {
				t.Errorf("got pass %v reward %d, want pass %v", v.Pass, v.Reward, wantPass)
			}
			for _, r := range v.Reasons {
				if r.Message == "" {
					t.Errorf("reason %s has no message", r.Code)
				}
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func appendFile(t *testing.T, root, rel, s string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(root, rel), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestGivenChangeset checks that a journal's changeset, when given, is
// what the edit rule judges (not a fresh comparison of the trees).
func TestGivenChangeset(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	task := loadRepoTask(t, "rt-01")
	dir := materialize(t, task, task.Reference())
	tests := []struct {
		name string
		cs   journal.Changeset
		want []string
	}{
		{"allowed", journal.Changeset{{Kind: journal.Modified, Path: "src/counter.py", Type: "file"}}, []string{}},
		{"denied", journal.Changeset{{Kind: journal.Modified, Path: "tests/test_public.py", Type: "file"}}, []string{CodeWrongFiles}},
		{"renamed from a denied path", journal.Changeset{{Kind: journal.Renamed, From: "src/__init__.py", Path: "src/counter.py", Type: "file"}}, []string{CodeWrongFiles}},
		{"ignored", journal.Changeset{{Kind: journal.Added, Path: "src/__pycache__/x.pyc", Type: "file"}}, []string{}},
		{"empty", journal.Changeset{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Grade(context.Background(), Input{Task: task, Workspace: dir, Changeset: tt.cs, ScratchRoot: t.TempDir()}, ExecRunner{})
			if err != nil {
				t.Fatalf("Grade: %v", err)
			}
			if got := v.Codes(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got codes %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGradeInfraErrors(t *testing.T) {
	task := loadRepoTask(t, "rt-01")
	odd := *task
	odd.Grader = tasks.GraderSpec{Kind: "no-such-kind"}
	tests := []struct {
		name string
		in   Input
		r    Runner
		want error
	}{
		{"no task", Input{Workspace: t.TempDir()}, ExecRunner{}, ErrInfra},
		{"no runner", Input{Task: task, Workspace: t.TempDir()}, nil, ErrInfra},
		{"missing workspace", Input{Task: task, Workspace: filepath.Join(t.TempDir(), "nope")}, ExecRunner{}, ErrInfra},
		{"unknown kind", Input{Task: &odd, Workspace: t.TempDir()}, ExecRunner{}, ErrUnknownKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Grade(context.Background(), tt.in, tt.r)
			if !errors.Is(err, tt.want) {
				t.Errorf("got error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParsePytest(t *testing.T) {
	tests := []struct {
		name       string
		out        string
		wantCounts map[string]int
		wantFailed []string
	}{
		{"all passed", "....\n4 passed in 0.02s\n", map[string]int{"passed": 4}, nil},
		{"failures", ".F.\n=== short test summary info ===\nFAILED ../hidden/test_h.py::test_big[1000] - assert 1 == 0\nERROR tests/test_p.py::test_x\n1 failed, 2 passed, 1 error in 0.03s\n",
			map[string]int{"failed": 1, "passed": 2, "error": 1}, []string{"test_h.py::test_big[1000]", "test_p.py::test_x"}},
		{"verbose summary", "==== 3 failed, 1 passed, 2 warnings in 1.00s ====\n", map[string]int{"failed": 3, "passed": 1, "warnings": 2}, nil},
		{"none", "\nno tests ran in 0.01s\n", map[string]int{}, nil},
		{"collection errors", "ERROR tests/test_a.py\n!!! Interrupted: 1 error during collection !!!\n1 error in 0.05s\n", map[string]int{"error": 1}, []string{"test_a.py"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts, failed := parsePytest([]byte(tt.out))
			if !reflect.DeepEqual(counts, tt.wantCounts) {
				t.Errorf("counts: got %v, want %v", counts, tt.wantCounts)
			}
			if !reflect.DeepEqual(failed, tt.wantFailed) {
				t.Errorf("failed: got %v, want %v", failed, tt.wantFailed)
			}
		})
	}
}

func TestTestName(t *testing.T) {
	for id, want := range map[string]string{
		"test_h.py::test_big[1000]":  "test_big",
		"test_h.py::TestA::test_b":   "test_b",
		"test_h.py":                  "test_h.py",
		"test_r2.py::test_never_[x]": "test_never_",
	} {
		if got := testName(id); got != want {
			t.Errorf("testName(%q): got %q, want %q", id, got, want)
		}
	}
}

// TestDeniedEdits: an edit the view refused fails the verdict with
// wrong_files, whatever the tree looks like; it is not repeated beside
// the changeset's own wrong_files, and it decides a verdict the judge
// would have left to review.
func TestDeniedEdits(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	rt01, rt06 := loadRepoTask(t, "rt-01"), loadRepoTask(t, "rt-06")
	zero := 0
	for _, tc := range []struct {
		name    string
		task    *tasks.Task
		attempt string
		denied  int64
		want    []string
	}{
		{"a pass", rt01, "reference", 0, nil},
		{"a pass with refused edits", rt01, "reference", 2, []string{CodeWrongFiles}},
		{"changed files and refused edits", rt01, "edits-tests", 3, []string{CodeWrongFiles}},
		{"a failure and refused edits", rt01, "untouched", 1, []string{CodeChecksFailed, CodeTestsFailed, CodeWrongFiles}},
		{"left to review", rt06, "review-hedged", 0, []string{CodeNeedsReview}},
		{"left to review, but refused edits", rt06, "review-hedged", 1, []string{CodeWrongFiles}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.task.Reference()
			if tc.attempt != "reference" {
				var err error
				if a, err = tc.task.Attempt(tc.attempt); err != nil {
					t.Fatal(err)
				}
			}
			ws := materialize(t, tc.task, a)
			v, err := Grade(context.Background(), Input{Task: tc.task, Workspace: ws, AgentExit: &zero, Denied: tc.denied, ScratchRoot: t.TempDir()}, ExecRunner{})
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(v.Codes())
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got codes %v (%v), want %v", got, v.Reasons, tc.want)
			}
			if wantPass := len(tc.want) == 0; v.Pass != wantPass {
				t.Errorf("got pass %v, want %v", v.Pass, wantPass)
			}
			if review := slices.Equal(tc.want, []string{CodeNeedsReview}); v.Review() != review {
				t.Errorf("got review %v, want %v", v.Review(), review)
			}
		})
	}
}

// TestCaps: an attempt that hit a workspace cap fails with
// workspace_cap whatever its tree, beside the other reasons, and it
// decides a verdict the judge would have left to review.
func TestCaps(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	rt01, rt06 := loadRepoTask(t, "rt-01"), loadRepoTask(t, "rt-06")
	zero := 0
	for _, tc := range []struct {
		name    string
		task    *tasks.Task
		attempt string
		caps    []string
		denied  int64
		want    []string
	}{
		{"a pass", rt01, "reference", nil, 0, nil},
		{"a pass at the files cap", rt01, "reference", []string{"files"}, 0, []string{CodeCap}},
		{"two caps, one reason", rt01, "reference", []string{"records", "blob_bytes"}, 0, []string{CodeCap}},
		{"a cap and refused edits", rt01, "reference", []string{"files"}, 1, []string{CodeWrongFiles, CodeCap}},
		{"a failure at a cap", rt01, "untouched", []string{"records"}, 0, []string{CodeChecksFailed, CodeTestsFailed, CodeCap}},
		{"left to review, but a cap", rt06, "review-hedged", []string{"files"}, 0, []string{CodeCap}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.task.Reference()
			if tc.attempt != "reference" {
				var err error
				if a, err = tc.task.Attempt(tc.attempt); err != nil {
					t.Fatal(err)
				}
			}
			ws := materialize(t, tc.task, a)
			v, err := Grade(context.Background(), Input{Task: tc.task, Workspace: ws, AgentExit: &zero, Denied: tc.denied, Caps: tc.caps, ScratchRoot: t.TempDir()}, ExecRunner{})
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(v.Codes())
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got codes %v (%v), want %v", got, v.Reasons, want)
			}
			if wantPass := len(tc.want) == 0; v.Pass != wantPass {
				t.Errorf("got pass %v, want %v", v.Pass, wantPass)
			}
			for _, r := range v.Reasons {
				if r.Code == CodeCap {
					for _, c := range tc.caps {
						if !strings.Contains(r.Message, c) {
							t.Errorf("workspace_cap message %q does not name the cap %s", r.Message, c)
						}
					}
				}
			}
		})
	}
}
