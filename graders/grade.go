package graders

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"benchd.dev/fsmon/journal"
	"benchd.dev/reason"
	"benchd.dev/tasks"
)

// Reason codes of the shared rules, which hold for every task.
const (
	CodeAgentExit  = reason.AgentExit    // the agent exited with a non-zero status
	CodeTimeout    = reason.Timeout      // the agent hit its wall-clock limit: no partial credit
	CodeWrongFiles = reason.WrongFiles   // a path the edit policy denies changed
	CodeNetwork    = reason.Network      // the agent used the network on a closed task
	CodeNonStdlib  = reason.NonStdlib    // changed Python imports a module outside the standard library
	CodeNoReward   = reason.NoReward     // the kind gave reward 0 without a reason of its own
	CodeGraderOOM  = reason.GraderOOM    // a grader command (the agent's code ran there) hit the task's memory limit
	CodeCap        = reason.WorkspaceCap // the agent hit a cap of the workspace view (files, journal records, blob bytes) or filled its disk (storage_mb)
)

// ErrUnknownKind: the task names a grader kind no file registered.
var ErrUnknownKind = errors.New("unknown grader kind")

// kindFunc grades one task kind. It returns the kind's own verdict:
// Reward 1 and Pass when the kind's checks hold, else the reasons that
// failed. in.Changeset is always set (Grade derives it when the caller
// did not). An error is an infra error only: an agent's failure, however
// odd, is a verdict.
type kindFunc func(ctx context.Context, in Input, r Runner) (Verdict, error)

var (
	kindsMu sync.Mutex
	kinds   = map[string]kindFunc{}
)

// register makes fn the grader of kind. Each kind's file calls it from
// init(); registering a kind twice panics.
func register(kind string, fn kindFunc) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[kind]; dup {
		panic("graders: kind " + kind + " registered twice")
	}
	kinds[kind] = fn
}

// Kinds returns the registered grader kinds, sorted.
func Kinds() []string {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	return sortedKeys(kinds)
}

func lookupKind(kind string) (kindFunc, bool) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	fn, ok := kinds[kind]
	return fn, ok
}

var reasonCodeRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Grade grades a finished workspace: it runs the task's grader kind and
// applies the shared rules of every task, then composes the verdict.
//
// The shared rules:
//   - the agent exited 0, when its exit status is known (agent_exit_nonzero);
//   - the agent did not time out (timeout; no partial credit);
//   - only the files the task's policy allows changed (wrong_files); the
//     changes are in.Changeset, or when it is nil the difference between
//     the bundle's workspace and in.Workspace, ignored paths left out;
//   - no workspace cap was hit (workspace_cap, in.Caps): past one the
//     view refused the agent's operations, so the tree is not what it
//     meant to leave;
//   - no network use unless the task allows it (network_used);
//   - every Python file the attempt added or changed imports only the
//     standard library, local workspace modules and, in test files, pytest
//     (non_stdlib_import; checked with /usr/bin/python3's ast and
//     sys.stdlib_module_names).
//
// Before any of it, the tree rules (checkTree in tree.go): a workspace
// holding a symbolic link graders may not follow (unsafe_link), a FIFO,
// socket or device (special_file), or beyond the tree limits
// (tree_limits), or one copied from such a tree (in.TreeReasons), fails
// with those reasons and the agent's exit, timeout and network rules; no
// kind runs on it.
//
// The verdict passes when the kind gives reward 1 and pass and every
// shared rule holds; then Reward is 1, Outcome pass and Reasons is empty
// (not a "pass" reason). When the kind leaves its decision to review
// (Outcome review, a needs_review reason saying why) and nothing else
// failed, the verdict is left to review: Outcome review, Pass false,
// Reward 0, Reasons the needs_review reasons. Otherwise Outcome is fail,
// Reward is 0 and Reasons lists every rule that failed, the shared ones
// first, each with a stable code (a kind's needs_review is dropped: a
// failure is decided). An error return
// is an infra error only (wrapping ErrInfra or ErrUnknownKind, or the
// context's error): never an agent failure.
func Grade(ctx context.Context, in Input, r Runner) (Verdict, error) {
	if in.Task == nil {
		return Verdict{}, infraf("no task")
	}
	if r == nil {
		return Verdict{}, infraf("no runner")
	}
	fi, err := os.Stat(in.Workspace)
	if err != nil || !fi.IsDir() {
		return Verdict{}, infraf("workspace %q is not a directory", in.Workspace)
	}
	fn, ok := lookupKind(in.Task.Grader.Kind)
	if !ok {
		return Verdict{}, fmt.Errorf("%w %q (task %s)", ErrUnknownKind, in.Task.Grader.Kind, in.Task.ID)
	}
	if in.Seed == 0 {
		in.Seed = newSeed()
	}
	v, err := grade(ctx, in, fn, r)
	v.Seed = in.Seed
	return v, err
}

// grade is Grade once the input is checked and the seed drawn.
func grade(ctx context.Context, in Input, fn kindFunc, r Runner) (Verdict, error) {
	tc, err := checkTree(in.Workspace, in.Task.Policy)
	if err != nil {
		return Verdict{}, err
	}
	if tree := mergeReasons(in.TreeReasons, tc.Reasons()); len(tree) > 0 {
		// No kind grades a tree it may not copy.
		v := verdictOf(OutcomeFail, append(agentReasons(in), networkReasons(in)...), "")
		v.Reasons = append(v.Reasons, tree...)
		v.Reasons = withCaps(in, withDenied(in, v.Reasons))
		withholdHidden(in.Task, &v)
		return v, nil
	}
	if in.Changeset == nil {
		cs, err := DeriveChangeset(in.Task, in.Workspace)
		if err != nil {
			return Verdict{}, err
		}
		in.Changeset = cs
	}

	reasons := agentReasons(in)
	if bad := in.Task.Policy.Violations(in.Changeset); len(bad) > 0 {
		reasons = append(reasons, Reason{Code: CodeWrongFiles, Message: fmt.Sprintf("changed files the task does not allow (allowed: %s): %s",
			strings.Join(in.Task.Policy.Allow, ", "), shortList(bad, 8))})
	}
	reasons = withCaps(in, withDenied(in, reasons))
	reasons = append(reasons, networkReasons(in)...)
	// Every command below runs the agent's files or code: one the OOM
	// killer stopped (at the task's memory limit, which the daemon's
	// runner applies) is the agent's failure, whatever the kind makes
	// of its result.
	oomr := &oomRunner{Runner: r}
	r = oomr
	imp, err := checkImports(ctx, in, r)
	if err != nil && !oomr.oomed() {
		return Verdict{}, err
	}
	if len(imp) > 0 {
		reasons = append(reasons, Reason{Code: CodeNonStdlib, Message: "imports outside the standard library: " + shortList(imp, 8)})
	}

	var kv Verdict
	if err == nil {
		kv, err = fn(ctx, in, r)
	}
	if oomr.oomed() && (err == nil || errors.Is(err, ErrInfra)) {
		reasons = append(reasons, Reason{Code: CodeGraderOOM, Message: fmt.Sprintf("a grader command running the agent's code was killed at the task's memory limit (%d MiB)", in.Task.MemoryMB)})
		v := verdictOf(OutcomeFail, reasons, kv.Detail)
		for _, kr := range kv.Reasons {
			if kr.Code != tasks.CodePass && kr.Code != CodeNeedsReview && reasonCodeRE.MatchString(kr.Code) {
				v.Reasons = append(v.Reasons, kr)
			}
		}
		if err != nil {
			v.Detail += "\n" + err.Error()
		}
		withholdHidden(in.Task, &v)
		return v, nil
	}
	if err != nil {
		return Verdict{}, fmt.Errorf("grader %s for task %s: %w", in.Task.Grader.Kind, in.Task.ID, err)
	}
	kindReview := kv.Review() && !kv.Pass
	var review []Reason
	for _, kr := range kv.Reasons {
		if kr.Code == tasks.CodePass {
			continue // a kind may say "pass"; a verdict lists failures only
		}
		if kr.Code == CodeNeedsReview {
			if kindReview {
				review = append(review, kr)
			}
			continue // why a verdict needs review is no failure
		}
		if !reasonCodeRE.MatchString(kr.Code) {
			return Verdict{}, infraf("grader %s gave a malformed reason code %q", in.Task.Grader.Kind, kr.Code)
		}
		reasons = append(reasons, kr)
	}
	kindOK := kv.Reward == 1 && kv.Pass
	if !kindOK && !kindReview && len(kv.Reasons) == 0 {
		reasons = append(reasons, Reason{Code: CodeNoReward, Message: fmt.Sprintf("grader %s gave reward %d, pass %v", in.Task.Grader.Kind, kv.Reward, kv.Pass)})
	}
	v := verdictOf(OutcomeFail, reasons, kv.Detail)
	switch {
	case len(reasons) > 0:
	case kindOK:
		v.Reward, v.Pass, v.Outcome = 1, true, OutcomePass
	case kindReview:
		// Left to review only when nothing else failed.
		if len(review) == 0 {
			review = []Reason{{Code: CodeNeedsReview, Message: fmt.Sprintf("grader %s was not confident either way", in.Task.Grader.Kind)}}
		}
		v.Reasons, v.Outcome = review, OutcomeReview
	}
	withholdHidden(in.Task, &v)
	if v.Reasons == nil {
		v.Reasons = []Reason{}
	}
	return v, nil
}

// oomRunner notes whether a command it ran was OOM-killed.
type oomRunner struct {
	Runner
	mu  sync.Mutex
	oom bool
}

// CanHide is the wrapped runner's (see Hider).
func (o *oomRunner) CanHide() bool {
	h, ok := o.Runner.(Hider)
	return ok && h.CanHide()
}

func (o *oomRunner) Run(ctx context.Context, spec RunSpec) (RunResult, error) {
	res, err := o.Runner.Run(ctx, spec)
	if err == nil && res.OOM {
		o.mu.Lock()
		o.oom = true
		o.mu.Unlock()
	}
	return res, err
}

func (o *oomRunner) oomed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.oom
}

// agentReasons are the shared rules on the agent's own facts: its exit
// status and its time limit.
func agentReasons(in Input) []Reason {
	var reasons []Reason
	if in.AgentExit != nil && *in.AgentExit != 0 {
		reasons = append(reasons, Reason{Code: CodeAgentExit, Message: fmt.Sprintf("the agent exited with status %d, not 0", *in.AgentExit)})
	}
	if in.TimedOut {
		reasons = append(reasons, Reason{Code: CodeTimeout, Message: "the agent hit its time limit and was killed: a timeout fails with no partial credit"})
	}
	return reasons
}

// networkReasons is the network rule: no network unless the task
// allows it.
func networkReasons(in Input) []Reason {
	if len(in.Network) > 0 && !in.Task.AllowInternet {
		return []Reason{{Code: CodeNetwork, Message: fmt.Sprintf("the task allows no network, and the agent tried %s", shortList(in.Network, 5))}}
	}
	return nil
}

// mergeReasons is a then b, leaving out b's reasons whose code a has.
func mergeReasons(a, b []Reason) []Reason {
	out := append([]Reason(nil), a...)
	for _, r := range b {
		dup := false
		for _, x := range a {
			dup = dup || x.Code == r.Code
		}
		if !dup {
			out = append(out, r)
		}
	}
	return out
}

// Has reports whether the verdict carries a reason with code.
func (v Verdict) Has(code string) bool {
	for _, r := range v.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// Codes returns the verdict's reason codes in order.
func (v Verdict) Codes() []string {
	out := make([]string, len(v.Reasons))
	for i, r := range v.Reasons {
		out[i] = r.Code
	}
	return out
}

// DeriveChangeset compares the bundle's starting workspace with a
// finished one, leaving out the paths the policy ignores.
func DeriveChangeset(t *tasks.Task, workspace string) (journal.Changeset, error) {
	before, err := journal.ScanTree(t.WorkspaceDir())
	if err != nil {
		return nil, infraf("scanning the bundle workspace: %v", err)
	}
	after, err := journal.ScanTree(workspace)
	if err != nil {
		return nil, infraf("scanning the finished workspace: %v", err)
	}
	cs := journal.DiffTrees(before, after, t.Policy.IsIgnored)
	if cs == nil {
		cs = journal.Changeset{}
	}
	return cs, nil
}

// withDenied adds the edit violation only the journal knows: an
// operation the view's edit policy refused (in.Denied). Such an attempt
// fails with wrong_files even though the refused change never reached the
// tree; one reason when the changeset already gave wrong_files.
func withDenied(in Input, reasons []Reason) []Reason {
	if in.Denied <= 0 {
		return reasons
	}
	for _, r := range reasons {
		if r.Code == CodeWrongFiles {
			return reasons
		}
	}
	return append(reasons, Reason{Code: CodeWrongFiles, Message: fmt.Sprintf(
		"the agent tried %d change(s) the task's edit policy forbids; they were refused (see the journal's denied records)", in.Denied)})
}

// withCaps adds the rule on the view's caps: an attempt that hit any
// (in.Caps) fails with workspace_cap, whatever its tree. The storage cap
// (journal.CapStorage: the attempt's disk was full) is one of them.
func withCaps(in Input, reasons []Reason) []Reason {
	if len(in.Caps) == 0 {
		return reasons
	}
	names := make([]string, 0, len(in.Caps))
	for _, c := range in.Caps {
		if c == journal.CapStorage {
			c += " (the attempt's disk of [environment] storage_mb was full: writes past it failed with ENOSPC)"
		}
		names = append(names, c)
	}
	return append(reasons, Reason{Code: CodeCap, Message: fmt.Sprintf(
		"the agent hit the workspace's cap on %s; operations past it were refused (see the journal's cap records)", strings.Join(names, ", "))})
}

// importCheckScript (import_check.py) reads a JSON config (files, local names, test-only
// allowances) and prints the imports that are neither in the standard
// library nor local, as JSON.
//
//go:embed import_check.py
var importCheckScript string

// testImportAllow are the modules a test file may import beyond the
// standard library: pytest is the test runner every task names.
var testImportAllow = []string{"pytest", "_pytest"}

// checkImports applies the stdlib-only rule to every Python file the
// attempt added or changed. It returns "file:line: module" for each
// violation.
func checkImports(ctx context.Context, in Input, r Runner) ([]string, error) {
	var files []string
	for _, ch := range in.Changeset {
		if ch.Kind == journal.Deleted || ch.Type != "file" || !strings.HasSuffix(ch.Path, ".py") || in.Task.Policy.IsIgnored(ch.Path) {
			continue
		}
		files = append(files, ch.Path)
	}
	if len(files) == 0 {
		return nil, nil
	}
	local, err := localModules(in)
	if err != nil {
		return nil, err
	}
	sc, err := newScratch(in, "imports")
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	for _, f := range files {
		if err := copyOne(filepath.Join(in.Workspace, filepath.FromSlash(f)), filepath.Join(sc.Dir, filepath.FromSlash(f))); err != nil {
			return nil, infraf("copying %s: %v", f, err)
		}
	}
	return runPythonList(ctx, in, r, sc.Dir, "import check", importCheckScript, ".benchd-imports.json",
		map[string]any{"files": files, "local": local, "test_allow": testImportAllow})
}

// localModules names every module the workspace itself provides: the
// stem of each .py file and each directory name, at any depth (tests
// often put a source directory on sys.path).
func localModules(in Input) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(in.Workspace, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(in.Workspace, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if in.Task.Policy.IsIgnored(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		name := path.Base(rel)
		switch {
		case d.IsDir():
			seen[name] = true
		case strings.HasSuffix(name, ".py"):
			seen[strings.TrimSuffix(name, ".py")] = true
		}
		return nil
	})
	if err != nil {
		return nil, infraf("listing workspace modules: %v", err)
	}
	out := sortedKeys(seen)
	sort.Strings(out)
	return out, nil
}

// withholdHidden is the last guard of the rule that a reason's message
// carries codes, counts and public test names only: a message that still
// names hidden test material (the base name of a file of the bundle's
// tests/, a test function or class a hidden Python file defines, a run of six
// or more digits one of those files holds, such as a golden) is replaced
// by a plain one, and the original goes to Detail.
func withholdHidden(t *tasks.Task, v *Verdict) {
	if len(v.Reasons) == 0 {
		return
	}
	tokens := hiddenTokens(t)
	for i, r := range v.Reasons {
		for _, tok := range tokens {
			if strings.Contains(r.Message, tok) {
				v.Detail += "\nwithheld message of " + r.Code + ": " + r.Message
				v.Reasons[i].Message = "the check " + r.Code + " failed (its message named hidden test material and was withheld)"
				break
			}
		}
	}
}

var (
	hiddenDefRE    = regexp.MustCompile(`(?m)^\s*(?:async\s+)?(?:def|class)\s+([Tt]est\w*)`)
	hiddenDigitsRE = regexp.MustCompile(`\d{6,}`)
)

// hiddenTokens lists what names hidden test material, for withholdHidden.
func hiddenTokens(t *tasks.Task) []string {
	seen := map[string]bool{}
	filepath.WalkDir(t.TestsDir(), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b := d.Name(); len(b) >= 6 && b != "README" && b != "README.md" {
			seen[b] = true
		}
		src, err := os.ReadFile(p)
		if err != nil || len(src) > 1<<20 {
			return nil
		}
		if strings.HasSuffix(p, ".py") {
			for _, m := range hiddenDefRE.FindAllStringSubmatch(string(src), -1) {
				seen[m[1]] = true
			}
		}
		for _, m := range hiddenDigitsRE.FindAllString(string(src), -1) {
			seen[m] = true
		}
		return nil
	})
	return sortedKeys(seen)
}
