package runs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"benchd.dev/graders"
	"benchd.dev/tasks"
)

// limitTask is RT-01 with a 128 MiB memory limit, a hidden pytest test that
// checks its own scratch is private, and a known attempt "hog" whose
// module takes 400 MiB when the tests import it.
func limitTask(t *testing.T) *tasks.Task {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rt-01-limits")
	if err := tasks.CopyTree(findTask(t, "rt-01").Dir, dir); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "task.toml")
	b, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	m := strings.Replace(string(b), "memory_mb = 1024", "memory_mb = 128", 1)
	if m == string(b) {
		t.Fatal("rt-01's task.toml has no memory_mb = 1024")
	}
	withHidden := strings.Replace(m, `checks = "gen_checks.py"`, `checks = "gen_checks.py"`+"\nhidden = [\"test_scratch_private.py\"]", 1)
	if withHidden == m {
		t.Fatal(`rt-01's task.toml has no checks = "gen_checks.py"`)
	}
	m = withHidden
	write := func(rel, content string, appendTo bool) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if appendTo {
			flag = os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(p, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(content); err != nil {
			t.Fatal(err)
		}
	}
	write("task.toml", m, false)
	// The scratch holding this file: the grader's own uid's, mode 0700.
	write("tests/test_scratch_private.py", `

def test_scratch_is_private():
    import os, stat
    top = os.path.dirname(os.getcwd())
    st = os.stat(top)
    assert stat.S_IMODE(st.st_mode) == 0o700, oct(st.st_mode)
    assert st.st_uid == os.getuid() != 0
`, false)
	sol, err := os.ReadFile(filepath.Join(dir, "solution", "files", "src", "counter.py"))
	if err != nil {
		t.Fatal(err)
	}
	write("attempts/hog/files/src/counter.py", string(sol)+"\n_HOG = b'x' * (400 << 20)\n", false)
	write("attempts/hog/expect.toml", "pass = false\ncode = \"grader_oom\"\nnote = \"right, but its module takes 400 MiB\"\n", false)
	task, err := tasks.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestGraderLimits grades under the task's memory limit: a module that
// allocates past it fails with grader_oom (not an infra error), the
// reference passes, and its hidden test finds its scratch private.
func TestGraderLimits(t *testing.T) {
	e := newEngine(t)
	task := limitTask(t)
	for i, tc := range []struct{ agent, code string }{
		{"builtin:reference", ""},
		{"builtin:attempt:hog", graders.CodeGraderOOM},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			out, _ := runAttempt(t, e, Spec{AttemptID: fmt.Sprintf("m%d", i), Task: task, Agent: tc.agent})
			a := out.Attempt
			if tc.code == "" {
				if !a.Pass {
					t.Fatalf("got reasons %v, want a pass", a.Reasons)
				}
				return
			}
			if a.Pass || !slices.Contains(codes(a.Reasons), tc.code) {
				t.Fatalf("got pass %v reasons %v, want a failure with %s", a.Pass, a.Reasons, tc.code)
			}
		})
	}
}
