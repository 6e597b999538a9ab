package graders

// Helpers shared by the grader kinds. Every kind grades a copy, never
// the workspace itself, and runs its commands through the Runner it was
// given, so that the daemon can confine them.
//
//	newScratch(in, name)           make a scratch directory (close it when done)
//	newWorkspaceScratch(in, name)  the same with a copy of the workspace at "ws"
//	newAgentWorld(in, name)        the same with the plan back at ws/plan.md:
//	                               the agent's world, for commands that run its code
//	agentSpec(ws, timeout, args...) such a command: /workspace, AgentEnv, no -I
//	(*scratch).copyWorkspace(in, rel)
//	                               copy the finished workspace to scratch/rel
//	                               (checkTree in tree.go: no link followed, the
//	                               policy's ignored paths left out)
//	(*scratch).copyHidden(in, rel, files)
//	                               copy files of the bundle's tests/ to scratch/rel
//	restorePristine(in, dst, rels) overwrite dst/rel with the bundle's starting
//	                               copy (public tests run as shipped, not as edited)
//	runPytest(ctx, r, pytestSpec)  run "/usr/bin/python3 -m pytest -q -p
//	                               no:cacheprovider ..." and parse its summary
//	runPython(ctx, r, dir, timeout, script, args...)
//	                               run a Python script (stdlib only) in dir
//	paramString, paramStrings, paramCodes
//	                               read the kind's [bench.grader] parameters
//	verifierTimeout(in)            the time limit of one grader command
//	tail(b, n)                     the last n bytes of output, for messages
//
// Python is always Debian's /usr/bin/python3. The grader's own scripts
// (generators, scans) run with a small fixed environment (pythonEnv): no
// user site, no bytecode written, no pytest plugins loaded from the
// system but the ones named. Commands that run the agent's code run in
// the agent's world instead (agentSpec), with nothing of the grader's.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"benchd.dev/tasks"
)

// Python is the interpreter graders run: Debian's, never one from PATH.
const Python = "/usr/bin/python3"

// ErrInfra marks a grading failure that is the harness's fault (a broken
// bundle parameter, pytest missing, a command that could not start). It
// is never scored as an agent failure.
var ErrInfra = errors.New("grader infrastructure error")

func infraf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInfra, fmt.Sprintf(format, args...))
}

// scratch is a temporary directory a kind runs its commands in.
type scratch struct {
	Dir string
}

// newScratch makes a scratch directory below in.ScratchRoot (or the
// system's temporary directory). The caller must Close it.
// newWorkspaceScratch makes a scratch directory holding a copy of the
// workspace at "ws" (ignored paths left out) and returns both; the
// caller closes the scratch.
func newWorkspaceScratch(in Input, name string) (*scratch, string, error) {
	sc, err := newScratch(in, name)
	if err != nil {
		return nil, "", err
	}
	ws, err := sc.copyWorkspace(in, "ws")
	if err != nil {
		sc.Close()
		return nil, "", err
	}
	return sc, ws, nil
}

// newAgentWorld makes a scratch directory holding the agent's world at
// "ws": a copy of the finished workspace as newWorkspaceScratch makes
// it, with the task's instruction back at plan.md, where the agent had
// it. Commands that run the agent's code run there through agentSpec.
func newAgentWorld(in Input, name string) (*scratch, string, error) {
	sc, ws, err := newWorkspaceScratch(in, name)
	if err != nil {
		return nil, "", err
	}
	if err := putPlan(in, ws); err != nil {
		sc.Close()
		return nil, "", err
	}
	return sc, ws, nil
}

// putPlan writes the task's instruction to ws/plan.md (mode 0644), as
// the daemon lays it out for the agent.
func putPlan(in Input, ws string) error {
	plan, err := os.ReadFile(in.Task.InstructionPath())
	if err != nil {
		return infraf("reading the plan: %v", err)
	}
	p := filepath.Join(ws, "plan.md")
	os.Remove(p)
	if err := os.WriteFile(p, plan, 0o644); err != nil {
		return infraf("writing the plan: %v", err)
	}
	return nil
}

// agentSpec is a command that runs the agent's code in the agent's
// world ws (newAgentWorld): /workspace, the agent's environment
// (AgentEnv), and Python as the agent runs it, without -I or any
// variable of the grader's (so hash randomisation is on, as it was for
// the agent). Scripts of the grader's go as "-c SOURCE", never as a
// file in view; their input comes on stdin.
func agentSpec(ws string, timeout time.Duration, args ...string) RunSpec {
	return RunSpec{
		Args:      args,
		Dir:       ws,
		Workspace: ws,
		Env:       append([]string(nil), AgentEnv...),
		Timeout:   timeout,
	}
}

func newScratch(in Input, name string) (*scratch, error) {
	dir, err := os.MkdirTemp(in.ScratchRoot, "benchd-grade-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("unable to make scratch dir: %w", err)
	}
	// The scratch holds copies of hidden tests: no other user may read
	// it. A confined runner hands it to the uid its commands run as.
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("unable to make scratch dir: %w", err)
	}
	return &scratch{Dir: dir}, nil
}

// Close removes the scratch directory.
func (s *scratch) Close() error { return os.RemoveAll(s.Dir) }

// copyWorkspace copies the finished workspace to scratch/rel as
// checkTree decides (no link followed or copied, ignored paths left out)
// and returns the copy's path.
func (s *scratch) copyWorkspace(in Input, rel string) (string, error) {
	dst := filepath.Join(s.Dir, rel)
	tc, err := checkTree(in.Workspace, in.Task.Policy)
	if err != nil {
		return "", err
	}
	// Grade refused a tree that fails the check before any kind ran.
	if rs := tc.Reasons(); len(rs) > 0 {
		return "", infraf("the workspace changed during grading: %s", rs[0].Code)
	}
	if err := tc.copyTo(in.Workspace, dst); err != nil {
		return "", infraf("unable to copy workspace: %v", err)
	}
	return dst, nil
}

// copyHidden copies files (relative to the bundle's tests/) to
// scratch/rel, keeping their relative paths, and returns the directory.
func (s *scratch) copyHidden(in Input, rel string, files []string) (string, error) {
	dst := filepath.Join(s.Dir, rel)
	for _, f := range files {
		if err := copyOne(filepath.Join(in.Task.TestsDir(), filepath.FromSlash(f)), filepath.Join(dst, filepath.FromSlash(f))); err != nil {
			return "", infraf("hidden file %s: %v", f, err)
		}
	}
	return dst, nil
}

// restorePristine overwrites dst/rel, for each rel, with the bundle's
// starting workspace copy of it.
func restorePristine(in Input, dst string, rels []string) error {
	for _, rel := range rels {
		if err := copyOne(filepath.Join(in.Task.WorkspaceDir(), filepath.FromSlash(rel)), filepath.Join(dst, filepath.FromSlash(rel))); err != nil {
			return infraf("restoring %s: %v", rel, err)
		}
	}
	return nil
}

// copyOne copies one regular file, making parent directories and
// replacing whatever was at dst. A symbolic link at src is not followed:
// it is an error.
func copyOne(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	return copyNoFollow(src, dst, fi.Mode().Perm()|0o444)
}

// pythonEnv is the environment of every Python a grader runs.
func pythonEnv(home string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONNOUSERSITE=1",
		"PYTHONHASHSEED=0",
		"PYTHONIOENCODING=utf-8",
		"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
	}
}

// verifierTimeout is the time limit of one grader command.
func verifierTimeout(in Input) time.Duration {
	if in.Task.VerifierTimeout > 0 {
		return in.Task.VerifierTimeout
	}
	return tasks.DefaultVerifierTimeout
}

// runPython runs script (Python source) with args in dir.
func runPython(ctx context.Context, r Runner, dir string, timeout time.Duration, script string, args ...string) (RunResult, error) {
	spec := RunSpec{
		Args:    append([]string{Python, "-I", "-c", script}, args...),
		Dir:     dir,
		Env:     pythonEnv(dir),
		Timeout: timeout,
	}
	res, err := r.Run(ctx, spec)
	if err != nil {
		return res, fmt.Errorf("%w: running python: %w", ErrInfra, err)
	}
	return res, nil
}

// pytestSpec is one pytest run.
type pytestSpec struct {
	Dir      string   // the working directory: the workspace copy (on sys.path)
	RootDir  string   // pytest's rootdir; "" = Dir
	Paths    []string // test files, relative to Dir or absolute
	Args     []string // more pytest arguments, before Paths
	Timeout  time.Duration
	ExtraEnv []string
	// Agent runs pytest in the agent's world (agentSpec): Dir is the
	// world's workspace, the command is the instruction's "python3 -m
	// pytest -q" and Paths, and RootDir, Args and ExtraEnv are unused.
	Agent bool
}

// pytestRun is what a pytest run gave.
type pytestRun struct {
	Exit     int // pytest's exit status: 0 passed, 1 failed, 2 interrupted, 3 internal, 4 usage, 5 no tests
	TimedOut bool
	Counts   map[string]int // "passed", "failed", "error", "skipped", ...
	Failed   []string       // node ids of failed and erroring tests, as printed
	Output   []byte         // stdout then stderr
}

// Passed reports whether every collected test passed (and there was one).
func (p pytestRun) Passed() bool { return !p.TimedOut && p.Exit == 0 && p.Counts["passed"] > 0 }

// FailedTests reports whether the run ran and some test failed.
func (p pytestRun) FailedTests() bool { return !p.TimedOut && p.Exit == 1 && p.Counts["failed"] > 0 }

// NoTests reports whether pytest collected no test.
func (p pytestRun) NoTests() bool { return !p.TimedOut && p.Exit == 5 }

// Describe is a short account of the run for a reason's message: what
// ended it, or its counts. It never quotes the run's output or a test
// id (the output may carry hidden tests' names and source); detail does.
func (p pytestRun) Describe() string {
	switch {
	case p.TimedOut:
		return "timed out"
	case p.Exit == 5:
		return "collected no tests"
	case p.Exit == 2:
		return "stopped (pytest exit 2: interrupted, or a file failed to import)"
	case p.Exit == 3:
		return "pytest hit an internal error"
	}
	var parts []string
	for _, k := range []string{"failed", "error", "passed", "skipped", "xfailed", "xpassed"} {
		if n := p.Counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

// operatorLine is Describe with the failed ids, for Verdict.Detail.
func (p pytestRun) operatorLine() string {
	if len(p.Failed) == 0 {
		return p.Describe()
	}
	return p.Describe() + ": " + shortList(p.Failed, 10)
}

// detail is the operator's account of the run for Verdict.Detail: the
// failed ids, then the last n bytes of the output.
func (p pytestRun) detail(n int) string {
	s := ""
	if len(p.Failed) > 0 {
		s = "failed: " + shortList(p.Failed, 20) + "\n"
	}
	return s + string(tail(p.Output, n))
}

// runPytest runs pytest and parses its summary. Exit 4 (usage) and a
// missing pytest are infra errors; every other outcome is a result.
func runPytest(ctx context.Context, r Runner, ps pytestSpec) (pytestRun, error) {
	var spec RunSpec
	if ps.Agent {
		spec = agentSpec(ps.Dir, ps.Timeout, append([]string{Python, "-m", "pytest", "-q"}, ps.Paths...)...)
	} else {
		root := ps.RootDir
		if root == "" {
			root = ps.Dir
		}
		args := []string{Python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "--tb=short",
			"-c", os.DevNull, "--rootdir=" + root}
		args = append(append(args, ps.Args...), ps.Paths...)
		spec = RunSpec{Args: args, Dir: ps.Dir, Env: append(pythonEnv(ps.Dir), ps.ExtraEnv...), Timeout: ps.Timeout}
	}
	res, err := r.Run(ctx, spec)
	if err != nil {
		return pytestRun{}, fmt.Errorf("%w: running pytest: %w", ErrInfra, err)
	}
	out := append(append([]byte{}, res.Stdout...), res.Stderr...)
	run := pytestRun{Exit: res.ExitCode, TimedOut: res.TimedOut, Output: out}
	if res.TimedOut {
		return run, nil
	}
	if bytes.Contains(res.Stderr, []byte("No module named pytest")) {
		return run, infraf("pytest is not installed for %s", Python)
	}
	if res.ExitCode == 4 || res.ExitCode < 0 {
		return run, infraf("pytest exited %d (signal %d): %s", res.ExitCode, res.Signal, tail(out, 400))
	}
	run.Counts, run.Failed = parsePytest(res.Stdout)
	return run, nil
}

var (
	countRE  = regexp.MustCompile(`(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b`)
	failedRE = regexp.MustCompile(`(?m)^(FAILED|ERROR) (\S+)`)
)

// parsePytest reads the counts from the final summary line of pytest's
// output and the ids of failed and erroring tests from the short test
// summary (-rfE).
func parsePytest(out []byte) (map[string]int, []string) {
	counts := map[string]int{}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if !strings.Contains(l, " in ") {
			continue
		}
		ms := countRE.FindAllStringSubmatch(l, -1)
		if len(ms) == 0 && !strings.Contains(l, "no tests ran") {
			continue
		}
		for _, m := range ms {
			n, _ := strconv.Atoi(m[1])
			counts[normCount(m[2])] += n
		}
		break
	}
	var failed []string
	for _, m := range failedRE.FindAllStringSubmatch(string(out), -1) {
		failed = append(failed, shortID(m[2]))
	}
	return counts, failed
}

func normCount(w string) string {
	switch w {
	case "errors":
		return "error"
	case "warning", "warnings":
		return "warnings"
	}
	return w
}

// shortID drops the directories of a node id: "../hidden/test_x.py::t[1]"
// becomes "test_x.py::t[1]".
func shortID(id string) string {
	file, rest, ok := strings.Cut(id, "::")
	if !ok {
		return path.Base(id)
	}
	return path.Base(file) + "::" + rest
}

// testName is the function part of a node id without parameters:
// "test_x.py::TestA::test_b[1]" gives "test_b".
func testName(id string) string {
	if i := strings.LastIndex(id, "::"); i >= 0 {
		id = id[i+2:]
	}
	if i := strings.Index(id, "["); i >= 0 {
		id = id[:i]
	}
	return id
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// shortList joins at most n items, saying how many more there are.
func shortList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// paramString reads a string parameter; def when absent.
func paramString(in Input, key, def string) (string, error) {
	v, ok := in.Task.Grader.Params[key]
	if !ok {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", infraf("task %s: grader parameter %s: got %T, want a string", in.Task.ID, key, v)
	}
	return s, nil
}

// paramStrings reads a list-of-strings parameter (a single string is a
// list of one); nil when absent.
func paramStrings(in Input, key string) ([]string, error) {
	v, ok := in.Task.Grader.Params[key]
	if !ok {
		return nil, nil
	}
	return toStrings(in, key, v)
}

func toStrings(in Input, key string, v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, infraf("task %s: grader parameter %s[%d]: got %T, want a string", in.Task.ID, key, i, e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, infraf("task %s: grader parameter %s: got %T, want a list of strings", in.Task.ID, key, v)
}

// paramCodes reads a table of reason code -> test name globs (the
// "codes" parameter of pytest-based kinds).
func paramCodes(in Input, key string) (map[string][]string, error) {
	v, ok := in.Task.Grader.Params[key]
	if !ok {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, infraf("task %s: grader parameter %s: got %T, want a table", in.Task.ID, key, v)
	}
	out := map[string][]string{}
	for code, globs := range m {
		if !reasonCodeRE.MatchString(code) {
			return nil, infraf("task %s: grader parameter %s: %q is not a reason code", in.Task.ID, key, code)
		}
		gs, err := toStrings(in, key+"."+code, globs)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			if _, err := path.Match(g, ""); err != nil {
				return nil, infraf("task %s: grader parameter %s.%s: bad glob %q", in.Task.ID, key, code, g)
			}
		}
		out[code] = gs
	}
	return out, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// runPythonList runs a checking script that takes one argument, the path
// of a JSON file holding cfg (written into dir as cfgName), and prints a
// JSON list of strings: what it found. what names the check in errors,
// which are all infra errors.
func runPythonList(ctx context.Context, in Input, r Runner, dir, what, script, cfgName string, cfg any) ([]string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, infraf("%s config: %v", what, err)
	}
	cfgPath := filepath.Join(dir, cfgName)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		return nil, infraf("writing the %s config: %v", what, err)
	}
	res, err := runPython(ctx, r, dir, verifierTimeout(in), script, cfgPath)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || res.TimedOut {
		return nil, infraf("%s exited %d (timed out %v): %s", what, res.ExitCode, res.TimedOut, tail(res.Stderr, 400))
	}
	var found []string
	if err := json.Unmarshal(res.Stdout, &found); err != nil {
		return nil, infraf("%s output: %v: %q", what, err, tail(res.Stdout, 200))
	}
	return found, nil
}

// paramTable reads a table of string to string; nil when absent.
func paramTable(in Input, key string) (map[string]string, error) {
	v, ok := in.Task.Grader.Params[key]
	if !ok {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, infraf("task %s: grader parameter %s: got %T, want a table", in.Task.ID, key, v)
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, infraf("task %s: grader parameter %s.%s: got %T, want a string", in.Task.ID, key, k, x)
		}
		out[k] = s
	}
	return out, nil
}
