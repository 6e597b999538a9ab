package graders

import (
	"context"
	"encoding/json"
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
	CodeTestsReadImpl      = "tests_read_impl"      // the tests read the implementation's source or bytes
	CodeTestsImportOracle  = "tests_import_oracle"  // the tests import a hidden oracle
)

func init() { register("dual-run", gradeDualRun) }

// gradeDualRun is kind "dual-run": the agent writes tests, not code. Its
// tests must pass against a correct implementation and fail against the
// planted one, judged by behaviour alone.
//
// Parameters ([bench.grader]):
//
//	tests          = ["tests/test_fold.py"]   the agent's test files (workspace paths)
//	impl           = "impl/fold.py"           the implementation path; each variant
//	                                          is copied over it in turn
//	reference      = "oracle/fold_ref.py"     correct (a file of the bundle's tests/)
//	correct_alt    = [...]                    more correct implementations, written
//	                                          differently
//	planted        = "..."                    optional: the planted implementation;
//	                                          default the bundle's workspace copy of impl
//	planted_alt    = [...]                    more implementations with the same bug,
//	                                          written differently
//	oracle_modules = ["oracle", ...]          module names the tests may not import
//
// First the test files are read (Python's ast): reading the
// implementation (open, io/os/codecs open, Path.read_text/read_bytes/open,
// inspect.getsource and kin, importlib.resources, pkgutil.get_data,
// linecache, subprocess, os.read/popen/system, __file__, __code__,
// __loader__, a call given the implementation's file name) is
// tests_read_impl; importing an oracle
// module is tests_import_oracle. Then the tests run against every variant,
// each in a fresh copy of the workspace:
//
//	reference fails                         tests_fail_reference
//	planted does not fail (or no tests)     bug_not_caught
//	a correct_alt fails, reference passes   tests_detect_file
//	a planted_alt passes, planted fails     tests_detect_file
//	any run past the time limit             grader_timeout
//
// "Fails" means pytest ran the tests and at least one failed; a
// collection error is not a caught bug.
func gradeDualRun(ctx context.Context, in Input, r Runner) (Verdict, error) {
	p, err := dualRunParams(in)
	if err != nil {
		return Verdict{}, err
	}
	var v Verdict
	scan, err := scanTests(ctx, in, r, p)
	if err != nil {
		return Verdict{}, err
	}
	for _, code := range []string{CodeTestsReadImpl, CodeTestsImportOracle} {
		if len(scan[code]) > 0 {
			what := "read the implementation instead of calling it"
			if code == CodeTestsImportOracle {
				what = "import a hidden oracle"
			}
			v.Reasons = append(v.Reasons, Reason{code, fmt.Sprintf("the tests %s: %s", what, shortList(scan[code], 5))})
		}
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
		v.Reasons = append(v.Reasons, Reason{CodeBugNotCaught, "the tests collect no test at all"})
	case !refOK:
		v.Reasons = append(v.Reasons, Reason{CodeTestsFailReference, "the tests do not all pass on a correct implementation: " + ref.Describe()})
	}
	if !planted.TimedOut && !caught && !ref.NoTests() {
		v.Reasons = append(v.Reasons, Reason{CodeBugNotCaught, "no test fails on the planted implementation: " + planted.Describe()})
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
		v.Reasons = append(v.Reasons, Reason{CodeTestsDetectFile, "the tests detect the file, not the behaviour: " + strings.Join(detect, "; ")})
	}
	if timedOut {
		v.Reasons = append(v.Reasons, Reason{CodeGraderTimeout, fmt.Sprintf("a run of the tests went past the %s limit", verifierTimeout(in))})
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
	oracles    []string
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
	if p.oracles, err = paramStrings(in, "oracle_modules"); err != nil {
		return p, err
	}
	return p, nil
}

// runVariant runs the agent's tests on a fresh workspace copy whose
// implementation is the file variant.
func runVariant(ctx context.Context, in Input, r Runner, p dualParams, variant string) (pytestRun, error) {
	sc, ws, err := newWorkspaceScratch(in, "dual")
	if err != nil {
		return pytestRun{}, err
	}
	defer sc.Close()
	if err := copyOne(variant, filepath.Join(ws, filepath.FromSlash(p.impl))); err != nil {
		return pytestRun{}, infraf("installing variant %s: %v", variant, err)
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
	return runPytest(ctx, r, pytestSpec{Dir: ws, RootDir: sc.Dir, Paths: paths, Timeout: verifierTimeout(in)})
}

// testScanScript reads the agent's test files and reports, as JSON
// {"tests_read_impl": [...], "tests_import_oracle": [...]}, every place
// that reads the implementation or imports an oracle.
const testScanScript = `
import ast, json, sys
cfg = json.load(open(sys.argv[1], encoding="utf-8"))
impl = cfg["impl"]
oracles = set(cfg["oracles"])
READ_MODULES = {"importlib.resources", "importlib_resources", "pkgutil", "linecache", "subprocess", "tokenize", "dis", "marshal", "mmap"}
READ_FUNCS = {"getsource", "getsourcelines", "getsourcefile", "getfile", "findsource", "getcomments",
              "read_text", "read_bytes", "get_data", "get_source", "open_text", "open_binary", "read_binary", "open"}
# Functions that read files only when called on these modules.
READ_ON = {"os": {"read", "popen", "system"}, "resources": {"files"}, "importlib_resources": {"files"}}
READ_ATTRS = {"__file__", "__code__", "__loader__", "__spec__", "__cached__", "co_code", "co_consts", "co_names"}
out = {"tests_read_impl": [], "tests_import_oracle": []}
def flag(code, rel, node, what):
    out[code].append("%s:%d: %s" % (rel, getattr(node, "lineno", 0), what))
def is_oracle(mod):
    parts = mod.split(".")
    return any(p in oracles for p in parts)
for rel in cfg["files"]:
    try:
        tree = ast.parse(open(rel, "rb").read(), filename=rel)
    except (OSError, SyntaxError, ValueError):
        continue
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if is_oracle(a.name):
                    flag("tests_import_oracle", rel, node, "import " + a.name)
                elif a.name in READ_MODULES or a.name.split(".")[0] in ("subprocess", "linecache", "tokenize", "dis", "marshal"):
                    flag("tests_read_impl", rel, node, "import " + a.name)
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            names = [a.name for a in node.names]
            if is_oracle(mod) or any(n in oracles for n in names):
                flag("tests_import_oracle", rel, node, "from %s import %s" % (mod, ", ".join(names)))
            elif mod in READ_MODULES or mod.split(".")[0] in ("subprocess", "linecache", "tokenize", "dis", "marshal") or (mod == "importlib" and "resources" in names):
                flag("tests_read_impl", rel, node, "from %s import %s" % (mod, ", ".join(names)))
            elif mod in ("inspect", "io", "os", "codecs", "pathlib") and any(n in READ_FUNCS or n in READ_ON.get(mod, ()) for n in names):
                flag("tests_read_impl", rel, node, "from %s import %s" % (mod, ", ".join(names)))
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open":
                flag("tests_read_impl", rel, node, "open(...)")
            elif isinstance(f, ast.Attribute):
                base = f.value.id if isinstance(f.value, ast.Name) else ""
                if f.attr in READ_FUNCS or f.attr in READ_ON.get(base, ()):
                    flag("tests_read_impl", rel, node, "%s.%s(...)" % (base or "...", f.attr))
            for a in list(node.args) + [k.value for k in node.keywords]:
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and (impl in a.value or impl.rsplit("/", 1)[-1] in a.value):
                    flag("tests_read_impl", rel, node, "passes the file name %r" % a.value[:60])
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in ("__import__", "import_module") and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) and is_oracle(node.args[0].value):
                flag("tests_import_oracle", rel, node, "%s(%r)" % (name, node.args[0].value))
        elif isinstance(node, ast.Attribute) and node.attr in READ_ATTRS:
            flag("tests_read_impl", rel, node, "." + node.attr)
        elif isinstance(node, ast.Name) and node.id in READ_ATTRS:
            flag("tests_read_impl", rel, node, node.id)
print(json.dumps(out))
`

// scanTests runs testScanScript on the agent's test files.
func scanTests(ctx context.Context, in Input, r Runner, p dualParams) (map[string][]string, error) {
	sc, err := newScratch(in, "scan")
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var files []string
	for _, t := range p.tests {
		src := filepath.Join(in.Workspace, filepath.FromSlash(t))
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := copyOne(src, filepath.Join(sc.Dir, filepath.FromSlash(t))); err != nil {
			return nil, infraf("copying %s: %v", t, err)
		}
		files = append(files, t)
	}
	if len(files) == 0 {
		return nil, nil
	}
	oracles := p.oracles
	if oracles == nil {
		oracles = []string{}
	}
	cfg, _ := json.Marshal(map[string]any{"files": files, "impl": p.impl, "oracles": oracles})
	cfgPath := filepath.Join(sc.Dir, ".benchd-scan.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, infraf("writing scan config: %v", err)
	}
	res, err := runPython(ctx, r, sc.Dir, verifierTimeout(in), testScanScript, cfgPath)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 || res.TimedOut {
		return nil, infraf("test scan exited %d (timed out %v): %s", res.ExitCode, res.TimedOut, tail(res.Stderr, 400))
	}
	var out map[string][]string
	if err := json.Unmarshal(res.Stdout, &out); err != nil {
		return nil, infraf("test scan output: %v: %q", err, tail(res.Stdout, 200))
	}
	return out, nil
}
