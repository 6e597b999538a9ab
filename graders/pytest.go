package graders

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Reason codes of the pytest-based kinds.
const (
	CodeTestsFailed   = "tests_failed"   // a public or hidden test failed, or the tests could not run
	CodeGraderTimeout = "grader_timeout" // the tests ran past the verifier's time limit
)

func init() { register("pytest", gradePytest) }

// gradePytest is kind "pytest": the workspace's public tests and the
// bundle's hidden tests must all pass, in one pytest run on a copy of the
// workspace.
//
// Parameters ([bench.grader]):
//
//	public = ["tests/test_public.py"]   workspace test files; each is run as the
//	                                    bundle ships it, whatever the agent did to it
//	hidden = ["test_hidden.py"]         files of the bundle's tests/, copied beside
//	                                    the workspace copy (never into it)
//	checks = "gen_checks.py"            optional: the judge's seeded checks
//	                                    (checks.go), run before pytest in probes
//	                                    of their own; they must pass too
//	[bench.grader.codes]                optional: a failed test whose function name
//	bin_calls_text = ["test_x_*"]       matches a glob carries that code instead
//	                                    of tests_failed
//
// Layout of a run: scratch/ws is the workspace copy and the working
// directory (so it is on sys.path: tests import "src.counter"), scratch/
// hidden holds the hidden files, pytest's rootdir is scratch and no ini
// file is read. Test files must have distinct base names.
func gradePytest(ctx context.Context, in Input, r Runner) (Verdict, error) {
	public, err := paramStrings(in, "public")
	if err != nil {
		return Verdict{}, err
	}
	hidden, err := paramStrings(in, "hidden")
	if err != nil {
		return Verdict{}, err
	}
	codes, err := paramCodes(in, "codes")
	if err != nil {
		return Verdict{}, err
	}
	if len(public)+len(hidden) == 0 {
		return Verdict{}, infraf("task %s: kind pytest needs public or hidden tests", in.Task.ID)
	}
	// The judge's checks first, in probes of their own, before any
	// pytest run of the agent's code.
	checkReasons, checkDetail, err := runChecks(ctx, in, r)
	if err != nil {
		return Verdict{}, err
	}
	// Without hidden tests, pytest runs the public ones in the agent's
	// world, as the instruction tells the agent to run them.
	var sc *scratch
	var ws string
	if len(hidden) == 0 {
		sc, ws, err = newAgentWorld(in, "pytest")
	} else {
		sc, ws, err = newWorkspaceScratch(in, "pytest")
	}
	if err != nil {
		return Verdict{}, err
	}
	defer sc.Close()
	if err := restorePristine(in, ws, public); err != nil {
		return Verdict{}, err
	}
	hid, err := sc.copyHidden(in, "hidden", hidden)
	if err != nil {
		return Verdict{}, err
	}
	paths := append([]string{}, public...)
	for _, h := range hidden {
		paths = append(paths, filepath.Join(hid, filepath.FromSlash(h)))
	}
	run, err := runPytest(ctx, r, pytestSpec{Dir: ws, RootDir: sc.Dir, Paths: paths, Timeout: verifierTimeout(in), Agent: len(hidden) == 0})
	if err != nil {
		return Verdict{}, err
	}
	v := verdictOf("", nil, strings.TrimSpace(run.detail(4000)+"\n"+checkDetail))
	switch {
	case run.TimedOut:
		v.Reasons = []Reason{{Code: CodeGraderTimeout, Message: fmt.Sprintf("the tests ran past the %s limit", verifierTimeout(in))}}
	case run.Passed() && len(checkReasons) == 0:
		v.Reward, v.Pass = 1, true
	case run.Passed():
	default:
		v.Reasons = failureReasons(run, codes, publicTests(in, public))
	}
	// pytest's report comes from a process that imported the agent's
	// code, which can patch pytest or print a summary of its own: a
	// "pass" from it counts only beside checks it cannot steer.
	v.Reasons = append(v.Reasons, checkReasons...)
	return v, nil
}

// publicTests names the test functions the bundle's public test files
// define, as "file.py::name" (base name, no class, no parameters): the
// only test names a reason's message may carry. They are read from the
// bundle, never from a run's output.
func publicTests(in Input, public []string) map[string]bool {
	names := map[string]bool{}
	for _, f := range public {
		b, err := os.ReadFile(filepath.Join(in.Task.WorkspaceDir(), filepath.FromSlash(f)))
		if err != nil {
			continue
		}
		for _, m := range defRE.FindAllStringSubmatch(string(b), -1) {
			names[path.Base(f)+"::"+m[1]] = true
		}
	}
	return names
}

var defRE = regexp.MustCompile(`(?m)^\s*(?:async\s+)?def\s+(test\w*)\s*\(`)

// publicName is the id's "file.py::name" when it names a public test,
// else "".
func publicName(id string, public map[string]bool) string {
	file, _, _ := strings.Cut(id, "::")
	n := path.Base(file) + "::" + testName(id)
	if public[n] {
		return n
	}
	return ""
}

// describeFailed says how many of ids failed, naming the public ones
// only: a failure id is a run's output, which the agent's code could
// forge, and a hidden test's name is not for the agent's owner.
func describeFailed(ids []string, public map[string]bool) string {
	var pub []string
	seen := map[string]bool{}
	for _, id := range ids {
		if n := publicName(id, public); n != "" && !seen[n] {
			seen[n] = true
			pub = append(pub, n)
		}
	}
	s := fmt.Sprintf("%d failed", len(ids))
	if len(pub) > 0 {
		s += ", public among them: " + shortList(pub, 5)
	}
	return s
}

// failureReasons turns a failed pytest run into reasons: failed tests
// whose names match a codes glob carry that code, the rest tests_failed.
// Messages carry counts and the names of public tests only.
func failureReasons(run pytestRun, codes map[string][]string, public map[string]bool) []Reason {
	byCode := map[string][]string{}
	var plain []string
	for _, id := range run.Failed {
		code := ""
		for _, c := range sortedKeys(codes) {
			for _, g := range codes[c] {
				if ok, _ := path.Match(g, testName(id)); ok && code == "" {
					code = c
				}
			}
		}
		if code == "" {
			plain = append(plain, id)
		} else {
			byCode[code] = append(byCode[code], id)
		}
	}
	var out []Reason
	for _, c := range sortedKeys(byCode) {
		out = append(out, Reason{Code: c, Message: "tests of this rule failed: " + describeFailed(byCode[c], public)})
	}
	if len(plain) > 0 || len(out) == 0 {
		msg := "the tests did not all pass: " + run.Describe()
		if len(plain) > 0 {
			msg += "; " + describeFailed(plain, public)
		}
		if run.Exit == 1 && len(plain) < len(run.Failed) {
			msg = "other tests failed: " + describeFailed(plain, public)
		}
		out = append(out, Reason{Code: CodeTestsFailed, Message: strings.TrimSpace(msg)})
	}
	return out
}
