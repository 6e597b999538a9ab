package graders

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Reason codes of kind dual-run.
const (
	CodeTestsFailReference = "tests_fail_reference" // the agent's tests fail on the correct implementation
	CodeBugNotCaught       = "bug_not_caught"       // no test fails on the planted implementation
	CodeTestsDetectFile    = "tests_detect_file"    // the tests tell implementations apart by something other than behaviour
)

func init() { register("dual-run", gradeDualRun) }

// gradeDualRun is kind "dual-run": the agent writes tests, not code. Its
// tests must pass against every correct implementation and fail against
// every planted one; behaviour is all that can tell them apart.
//
// Parameters ([bench.grader]):
//
//	tests          = ["tests/test_fold.py"]   the agent's test files (workspace paths)
//	impl           = "impl/fold.py"           the implementation path; each variant
//	                                          is installed there in turn
//	reference      = "oracle/fold_ref.py"     correct (a file of the bundle's tests/)
//	correct_alt    = [...]                    more correct implementations: the planted
//	                                          file with only the bug fixed, and ones
//	                                          written differently
//	planted        = "..."                    optional: the planted implementation;
//	                                          default the bundle's workspace copy of impl
//	planted_alt    = [...]                    more implementations with the bug: the
//	                                          reference with only the bug injected, and
//	                                          ones written differently
//	sourceless     = true                     install each variant as bytecode only
//	                                          (impl's .pyc, no source beside it);
//	                                          default false: as source at impl, where
//	                                          an instruction says implementations go
//
// Nothing reads the agent's tests to judge them. Each variant runs in a
// fresh copy of the workspace in the agent's world (newAgentWorld), at
// the same module path, with nothing else of the bundle in view (the
// oracle directory included), pytest run as the instruction says:
//
//	reference fails                         tests_fail_reference
//	planted does not fail (or no tests)     bug_not_caught
//	a correct_alt fails, reference passes   tests_detect_file
//	a planted_alt passes, planted fails     tests_detect_file
//	any run past the time limit             grader_timeout
//
// So a suite that decides by the file (its names, code objects, source
// text or bytes, however disguised) breaks on a twin that differs from
// its sibling only by the bug, and one that reads the source finds none
// when the variants are sourceless. "Fails" means pytest ran the tests
// and at least one failed; a collection error is not a caught bug.
//
// What is trusted: pytest's report of a run of the agent's own tests on
// a variant. The tests are the agent's code, so they could forge that
// report; but a forgery has to choose pass or fail per variant, and the
// variants differ only in behaviour, so forging is no better than
// testing.
func gradeDualRun(ctx context.Context, in Input, r Runner) (Verdict, error) {
	p, err := dualRunParams(in)
	if err != nil {
		return Verdict{}, err
	}
	var v Verdict
	if p.sourceless {
		if err := compileVariants(ctx, in, r, &p); err != nil {
			return Verdict{}, err
		}
		defer os.RemoveAll(p.compiledDir)
	}

	run := func(label, variant string) (pytestRun, error) {
		res, err := runVariant(ctx, in, r, p, variant)
		if err != nil {
			return res, fmt.Errorf("variant %s: %w", label, err)
		}
		return res, nil
	}
	ref, err := run("reference", p.reference)
	if err != nil {
		return Verdict{}, err
	}
	planted, err := run("planted", p.planted)
	if err != nil {
		return Verdict{}, err
	}
	timedOut := ref.TimedOut || planted.TimedOut
	var details []string
	details = append(details, "reference: "+ref.operatorLine(), "planted: "+planted.operatorLine())
	refOK := ref.Passed()
	caught := planted.FailedTests()
	switch {
	case ref.TimedOut:
	case ref.NoTests():
		v.Reasons = append(v.Reasons, Reason{Code: CodeBugNotCaught, Message: "the tests collect no test at all"})
	case !refOK:
		v.Reasons = append(v.Reasons, Reason{Code: CodeTestsFailReference, Message: "the tests do not all pass on a correct implementation: " + ref.Describe()})
	}
	if !planted.TimedOut && !caught && !ref.NoTests() {
		v.Reasons = append(v.Reasons, Reason{Code: CodeBugNotCaught, Message: "no test fails on the planted implementation: " + planted.Describe()})
	}
	var detect []string
	// The other implementations matter only where the first pair judged
	// the tests well: a suite that already fails there gains no reason.
	if !refOK {
		p.correctAlt = nil
	}
	if !caught {
		p.plantedAlt = nil
	}
	for _, alt := range p.correctAlt {
		res, err := run(alt, alt)
		if err != nil {
			return Verdict{}, err
		}
		timedOut = timedOut || res.TimedOut
		details = append(details, variantLabel(in, alt)+": "+res.operatorLine())
		if !res.TimedOut && !res.Passed() {
			detect = append(detect, fmt.Sprintf("they pass on the reference but fail on another correct implementation (%s)", res.Describe()))
		}
	}
	for _, alt := range p.plantedAlt {
		res, err := run(alt, alt)
		if err != nil {
			return Verdict{}, err
		}
		timedOut = timedOut || res.TimedOut
		details = append(details, variantLabel(in, alt)+": "+res.operatorLine())
		if !res.TimedOut && !res.FailedTests() {
			detect = append(detect, fmt.Sprintf("they fail on the planted file but not on another implementation with the same bug (%s)", res.Describe()))
		}
	}
	if len(detect) > 0 {
		v.Reasons = append(v.Reasons, Reason{Code: CodeTestsDetectFile, Message: "the tests detect the file, not the behaviour: " + strings.Join(detect, "; ")})
	}
	if timedOut {
		v.Reasons = append(v.Reasons, Reason{Code: CodeGraderTimeout, Message: fmt.Sprintf("a run of the tests went past the %s limit", verifierTimeout(in))})
	}
	v.Detail = strings.Join(details, "\n")
	if len(v.Reasons) == 0 {
		v.Reward, v.Pass = 1, true
	}
	return v, nil
}

// variantLabel names a variant file by its path in the bundle's tests/.
func variantLabel(in Input, abs string) string {
	if rel, err := filepath.Rel(in.Task.TestsDir(), abs); err == nil {
		return filepath.ToSlash(rel)
	}
	return abs
}

type dualParams struct {
	tests      []string
	impl       string
	reference  string // absolute path of the variant file
	planted    string
	correctAlt []string
	plantedAlt []string
	sourceless bool
	// compiled maps a variant's path to its bytecode, in compiledDir,
	// when sourceless.
	compiled    map[string]string
	compiledDir string
}

func dualRunParams(in Input) (dualParams, error) {
	var p dualParams
	var err error
	if p.tests, err = paramStrings(in, "tests"); err != nil {
		return p, err
	}
	if p.impl, err = paramString(in, "impl", ""); err != nil {
		return p, err
	}
	ref, err := paramString(in, "reference", "")
	if err != nil {
		return p, err
	}
	if len(p.tests) == 0 || p.impl == "" || ref == "" {
		return p, infraf("task %s: kind dual-run needs tests, impl and reference", in.Task.ID)
	}
	hiddenPath := func(rel string) (string, error) {
		abs := filepath.Join(in.Task.TestsDir(), filepath.FromSlash(rel))
		if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
			return "", infraf("task %s: dual-run variant %s is not a file of tests/", in.Task.ID, rel)
		}
		return abs, nil
	}
	if p.reference, err = hiddenPath(ref); err != nil {
		return p, err
	}
	planted, err := paramString(in, "planted", "")
	if err != nil {
		return p, err
	}
	if planted == "" {
		p.planted = filepath.Join(in.Task.WorkspaceDir(), filepath.FromSlash(p.impl))
	} else if p.planted, err = hiddenPath(planted); err != nil {
		return p, err
	}
	for _, key := range []string{"correct_alt", "planted_alt"} {
		rels, err := paramStrings(in, key)
		if err != nil {
			return p, err
		}
		for _, rel := range rels {
			abs, err := hiddenPath(rel)
			if err != nil {
				return p, err
			}
			if key == "correct_alt" {
				p.correctAlt = append(p.correctAlt, abs)
			} else {
				p.plantedAlt = append(p.plantedAlt, abs)
			}
		}
	}
	if v, ok := in.Task.Grader.Params["sourceless"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return p, infraf("task %s: sourceless must be true or false", in.Task.ID)
		}
		p.sourceless = b
	}
	return p, nil
}

// compileScript (compile_variant.py) compiles argv[1] to bytecode at argv[2], recording
// argv[3] as its file name, so that every variant's code objects name
// the same file.
//
//go:embed compile_variant.py
var compileScript string

// compileVariants compiles every variant once, in a scratch of its own
// (trusted code only: the bundle's variants and the interpreter).
func compileVariants(ctx context.Context, in Input, r Runner, p *dualParams) error {
	sc, err := newScratch(in, "compile")
	if err != nil {
		return err
	}
	p.compiledDir = sc.Dir
	p.compiled = map[string]string{}
	all := append([]string{p.reference, p.planted}, p.correctAlt...)
	all = append(all, p.plantedAlt...)
	for i, variant := range all {
		src := filepath.Join(sc.Dir, fmt.Sprintf("v%d.py", i))
		dst := filepath.Join(sc.Dir, fmt.Sprintf("v%d.pyc", i))
		if err := copyOne(variant, src); err != nil {
			return infraf("variant %s: %v", variantLabel(in, variant), err)
		}
		res, err := runPython(ctx, r, sc.Dir, verifierTimeout(in), compileScript, src, dst, p.impl)
		if err != nil {
			return err
		}
		if res.ExitCode != 0 || res.TimedOut {
			return infraf("compiling variant %s: exit %d: %s", variantLabel(in, variant), res.ExitCode, tail(res.Stderr, 300))
		}
		p.compiled[variant] = dst
	}
	return nil
}

// runVariant runs the agent's tests on a fresh workspace copy whose
// implementation is the file variant.
func runVariant(ctx context.Context, in Input, r Runner, p dualParams, variant string) (pytestRun, error) {
	sc, ws, err := newAgentWorld(in, "dual")
	if err != nil {
		return pytestRun{}, err
	}
	defer sc.Close()
	impl := filepath.Join(ws, filepath.FromSlash(p.impl))
	if p.sourceless {
		// Bytecode alone where the source was: Python loads a .pyc
		// beside the package's other modules when no .py is there.
		if err := os.Remove(impl); err != nil && !os.IsNotExist(err) {
			return pytestRun{}, infraf("installing variant %s: %v", variantLabel(in, variant), err)
		}
		impl = strings.TrimSuffix(impl, ".py") + ".pyc"
		variant = p.compiled[variant]
	}
	if err := copyOne(variant, impl); err != nil {
		return pytestRun{}, infraf("installing variant %s: %v", variantLabel(in, variant), err)
	}
	var paths []string
	for _, t := range p.tests {
		if _, err := os.Stat(filepath.Join(ws, filepath.FromSlash(t))); err == nil {
			paths = append(paths, t)
		}
	}
	if len(paths) == 0 {
		// The agent deleted its test files: nothing to collect.
		return pytestRun{Exit: 5, Counts: map[string]int{}}, nil
	}
	return runPytest(ctx, r, pytestSpec{Dir: ws, Paths: paths, Timeout: verifierTimeout(in), Agent: true})
}
