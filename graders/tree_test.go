package graders

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"benchd.dev/internal/testenv"
	"benchd.dev/tasks"
)

// rt01Solved is RT-01's workspace with its reference applied: a pass.
func rt01Solved(t *testing.T) (*tasks.Task, string) {
	t.Helper()
	task := loadRepoTask(t, "rt-01")
	return task, materialize(t, task, task.Reference())
}

// TestTreeRules builds what the overlay format cannot hold (links,
// FIFOs, chains deeper than PATH_MAX) in RT-01's solved workspace and
// requires a failure with the tree rule's code, never a pass or an infra
// error; the legitimate variants must still pass.
func TestTreeRules(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	deepChain := func(t *testing.T, ws, top string) {
		// Each component is 200 bytes: 30 of them pass PATH_MAX.
		p := filepath.Join(ws, top)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.Repeat("d", 200)
		for range 30 {
			if err := syscall.Mkdirat(fd, name, 0o755); err != nil {
				t.Fatal(err)
			}
			nfd, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
			syscall.Close(fd)
			if err != nil {
				t.Fatal(err)
			}
			fd = nfd
		}
		syscall.Close(fd)
	}
	cases := []struct {
		name  string
		build func(t *testing.T, ws string)
		code  string // "" = pass
	}{
		{"link at the allowed file to a solution outside", func(t *testing.T, ws string) {
			// A readable copy of the solution outside the workspace: a
			// followed link would pass.
			task := loadRepoTask(t, "rt-01")
			sol := filepath.Join(t.TempDir(), "counter.py")
			b, err := os.ReadFile(filepath.Join(task.SolutionDir(), "src", "counter.py"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Dir(sol), "counter.py", string(b))
			os.Remove(filepath.Join(ws, "src", "counter.py"))
			if err := os.Symlink(sol, filepath.Join(ws, "src", "counter.py")); err != nil {
				t.Fatal(err)
			}
		}, CodeUnsafeLink},
		{"relative link inside the tree at a read path", func(t *testing.T, ws string) {
			writeFile(t, ws, "src/real.py", readFile(t, filepath.Join(ws, "src", "counter.py")))
			os.Remove(filepath.Join(ws, "src", "counter.py"))
			if err := os.Symlink("real.py", filepath.Join(ws, "src", "counter.py")); err != nil {
				t.Fatal(err)
			}
		}, CodeUnsafeLink},
		{"escaping link in an ignored path", func(t *testing.T, ws string) {
			os.MkdirAll(filepath.Join(ws, "__pycache__"), 0o755)
			if err := os.Symlink("../../../etc/passwd", filepath.Join(ws, "__pycache__", "x.pyc")); err != nil {
				t.Fatal(err)
			}
		}, CodeUnsafeLink},
		{"fifo in __pycache__", func(t *testing.T, ws string) {
			os.MkdirAll(filepath.Join(ws, "src", "__pycache__"), 0o755)
			if err := syscall.Mkfifo(filepath.Join(ws, "src", "__pycache__", "counter.cpython-311.pyc"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, CodeSpecialFile},
		{"fifo as a *.tmp file", func(t *testing.T, ws string) {
			if err := syscall.Mkfifo(filepath.Join(ws, "src", "counter.py.tmp"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, CodeSpecialFile},
		{"chain deeper than PATH_MAX in an ignored path", func(t *testing.T, ws string) {
			deepChain(t, ws, "__pycache__")
		}, CodeTreeLimits},
		// Legitimate trees in other styles.
		{"internal link in an ignored path", func(t *testing.T, ws string) {
			os.MkdirAll(filepath.Join(ws, "__pycache__"), 0o755)
			writeFile(t, ws, "__pycache__/a.pyc", "x")
			if err := os.Symlink("a.pyc", filepath.Join(ws, "__pycache__", "b.pyc")); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"caches left behind", func(t *testing.T, ws string) {
			writeFile(t, ws, "src/__pycache__/counter.cpython-311.pyc", "junk")
			writeFile(t, ws, ".pytest_cache/v/cache/nodeids", "[]")
			writeFile(t, ws, "src/counter.py.tmp", "partial")
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task, ws := rt01Solved(t)
			c.build(t, ws)
			v := gradeDir(t, task, ws)
			if c.code == "" {
				if !v.Pass {
					t.Fatalf("got codes %v, want a pass\n%v", v.Codes(), v.Reasons)
				}
				return
			}
			if v.Pass || v.Reward != 0 || !v.Has(c.code) {
				t.Fatalf("got pass %v, codes %v; want a failure with %s", v.Pass, v.Codes(), c.code)
			}

			// The daemon's copy decides the same, and its copy passes
			// the check (nothing it may not copy is in it).
			dst := filepath.Join(t.TempDir(), "copy")
			rs, err := CopyWorkspace(ws, dst, task.Policy)
			if err != nil {
				t.Fatalf("CopyWorkspace: %v", err)
			}
			if !verdictOf("", rs, "").Has(c.code) {
				t.Fatalf("CopyWorkspace gave %v, want %s", rs, c.code)
			}
			zero := 0
			tc, err := checkTree(dst, task.Policy)
			if err != nil || len(tc.Reasons()) > 0 {
				t.Fatalf("the copy: %v, %v; want clean", tc.Reasons(), err)
			}
			v2, err := Grade(t.Context(), Input{Task: task, Workspace: dst, AgentExit: &zero, ScratchRoot: t.TempDir(), TreeReasons: rs}, ExecRunner{})
			if err != nil || !v2.Has(c.code) {
				t.Fatalf("grading the copy with its reasons: %v, %v; want %s", v2.Codes(), err, c.code)
			}
		})
	}
}

// TestTreeLimitsEntries checks the entry limit, lowered to 1000, with a
// tree of 1001 empty files in an ignored directory. (At the real limit
// the test process would grow, and ExecRunner's MaxRSS of every later
// command with it: a vfork'ed child's ru_maxrss starts at its parent's.)
func TestTreeLimitsEntries(t *testing.T) {
	defer func(n int) { maxTreeEntries = n }(maxTreeEntries)
	maxTreeEntries = 1000
	task := loadRepoTask(t, "rt-01")
	ws := t.TempDir()
	d := filepath.Join(ws, "__pycache__")
	os.Mkdir(d, 0o755)
	for i := range maxTreeEntries + 1 {
		f, err := os.Create(filepath.Join(d, "f"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	tc, err := checkTree(ws, task.Policy)
	if err != nil {
		t.Fatal(err)
	}
	if !verdictOf("", tc.Reasons(), "").Has(CodeTreeLimits) {
		t.Fatalf("got %v, want tree_limits", tc.Reasons())
	}
}

func TestLinkEscapes(t *testing.T) {
	for _, c := range []struct {
		rel, target string
		want        bool
	}{
		{"a/b", "/etc/passwd", true},
		{"a/b", "../../x", true},
		{"a/b", "../x", false},
		{"a/b", "c", false},
		{"b", "..", true},
		{"a/b", "", true},
	} {
		if got := linkEscapes(c.rel, c.target); got != c.want {
			t.Errorf("linkEscapes(%q, %q) = %v, want %v", c.rel, c.target, got, c.want)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
