package graders

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Reason codes of kind "workload".
const (
	CodeWorkloadWrong   = "workload_wrong"   // a read returned the wrong thing, or the code raised or crashed
	CodeMemoryCap       = "memory_cap"       // peak RSS above the baseline plus the margin
	CodeTimeCap         = "time_cap"         // the workload ran past its wall cap
	CodeForbiddenModule = "forbidden_module" // the code imports (or tried to import) a forbidden module
)

func init() { register("workload", gradeWorkload) }

// Defaults of kind "workload".
const (
	defaultWallSec    = 5.0
	defaultMarginMiB  = 8.0
	workloadAddrLimit = 2 << 30 // RLIMIT_AS of a workload run: a guard for the host, not a cap
	// maxSlowdown is how much slower than the target host this host may
	// run the calibration before grading is refused as an infra error:
	// past it, a wall cap scaled by the calibration means little.
	maxSlowdown = 12.0
)

// calibrationScript is a fixed, trusted CPU workload of the same kind as
// a map's (bytes keys, hashing, dict inserts and deletes, a sort). Its
// wall time in this grading run, against what it takes on the target
// host (calibration_sec), says how much slower this host is right now.
const calibrationScript = `
import hashlib
d = {}
for i in range(120000):
    k = b"k%06d" % i
    d[k] = hashlib.blake2b(k, digest_size=16).digest()
for i in range(0, 120000, 3):
    del d[b"k%06d" % i]
print(sum(len(v) for k, v in sorted(d.items())))
`

// forbidScanScript lists, as JSON, every import of a forbidden module in
// the workspace's Python files: import and from-import statements, and
// __import__ / importlib.import_module calls with a constant name.
// argv[1] is a JSON config: {"root": dir, "forbidden": [...], "skip": [...]}.
const forbidScanScript = `
import ast, json, os, sys
cfg = json.load(open(sys.argv[1], encoding="utf-8"))
forbidden = set(cfg["forbidden"])
skip = set(cfg["skip"])
root = cfg["root"]
hits = []
for d, dirs, files in os.walk(root):
    dirs[:] = sorted(x for x in dirs if x not in skip)
    for name in sorted(files):
        if not name.endswith(".py"):
            continue
        p = os.path.join(d, name)
        rel = os.path.relpath(p, root)
        try:
            tree = ast.parse(open(p, "rb").read(), filename=rel)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                f = node.func
                fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if fname in ("__import__", "import_module"):
                    names = [node.args[0].value]
            for n in names:
                if n.split(".")[0] in forbidden:
                    hits.append("%s:%d: %s" % (rel, node.lineno, n))
print(json.dumps(hits))
`

// forbiddenCompanions are the C halves of modules a task may forbid:
// forbidding the module forbids its C half too.
var forbiddenCompanions = map[string][]string{
	"sqlite3": {"_sqlite3"},
	"dbm":     {"_dbm", "_gdbm"},
}

// workloadResult is the driver's result line.
type workloadResult struct {
	Nonce     string         `json:"nonce"`
	OK        bool           `json:"ok"`
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Forbidden []string       `json:"forbidden"`
	Stats     map[string]any `json:"stats"`
}

// workloadRun is one run of the driver and what it measured.
type workloadRun struct {
	res    RunResult
	result workloadResult
	found  bool // a result line with the nonce was printed
}

// gradeWorkload is kind "workload": a hidden driver script runs a
// correctness workload against the agent's code in a fresh interpreter,
// under a wall cap and a peak-memory cap measured against a baseline.
//
// Parameters ([bench.grader]):
//
//	driver = "workload.py"          the driver, a file of the bundle's tests/
//	wall_sec = 5.0                  wall cap of the whole driver run, on the target host
//	calibration_sec = 0.3           wall time of calibrationScript on the target host
//	                                (0 or absent: the cap is not scaled)
//	memory_margin_mib = 8           peak RSS may exceed the baseline by this much
//	forbidden_modules = ["sqlite3"] modules the code may not use
//
// The driver protocol (tasks/rt-04-tiny-map/tests/workload.py is one):
// it runs as "/usr/bin/python3 -I DRIVER --nonce-file F --root DIR
// --forbid a,b,c [--baseline]" with a copy of the workspace as its
// working directory; it reads and removes F, refuses the forbidden
// modules with an import hook, runs its workload on a map rooted at DIR
// and prints its result line (workload_protocol.go): {"nonce", "ok",
// "code", "message", "forbidden", "stats"}. With --baseline it does
// everything but load the agent's code.
//
// The checks, in order:
//  1. forbidden modules, read from the code: every .py file of the
//     workspace is parsed with Python's ast (forbidden_module);
//  2. a baseline run: the driver with --baseline. Its peak RSS (the
//     Runner's MaxRSS) is the interpreter's baseline in this grading run,
//     on this host; the memory cap is baseline + memory_margin_mib;
//  3. where calibration_sec is set, a calibration run: calibrationScript,
//     trusted code run through the same Runner before any agent code,
//     whose wall time against calibration_sec is this host's slowdown
//     now (at least 1); the wall cap is wall_sec times the slowdown, so
//     that a host under load or under software emulation (the VM lane,
//     2-5x slower) grades the same map the same way. A slowdown above
//     maxSlowdown is an infra error: the host cannot grade fairly;
//  4. the workload run, with the wall cap as its time limit: a timeout or
//     a longer wall time is time_cap, an RSS above the cap (or an OOM
//     kill) memory_cap, an import the driver's hook refused
//     forbidden_module, a wrong read, an exception or a crash
//     workload_wrong.
//
// When step 1 finds a forbidden import, the workload is not run: the
// guard would make it fail for a reason that is not the agent's bug. The
// measurements go to Detail.
func gradeWorkload(ctx context.Context, in Input, r Runner) (Verdict, error) {
	driver, err := paramString(in, "driver", "")
	if err != nil {
		return Verdict{}, err
	}
	if driver == "" {
		return Verdict{}, infraf("task %s: kind workload needs a driver", in.Task.ID)
	}
	wallSec, err := numberParam(in, "wall_sec", defaultWallSec)
	if err != nil {
		return Verdict{}, err
	}
	marginMiB, err := numberParam(in, "memory_margin_mib", defaultMarginMiB)
	if err != nil {
		return Verdict{}, err
	}
	if wallSec <= 0 || marginMiB <= 0 {
		return Verdict{}, infraf("task %s: wall_sec and memory_margin_mib must be positive", in.Task.ID)
	}
	forbidden, err := paramStrings(in, "forbidden_modules")
	if err != nil {
		return Verdict{}, err
	}
	calSec, err := numberParam(in, "calibration_sec", 0)
	if err != nil {
		return Verdict{}, err
	}
	if calSec < 0 {
		return Verdict{}, infraf("task %s: calibration_sec must not be negative", in.Task.ID)
	}
	wall := time.Duration(wallSec * float64(time.Second))
	margin := int64(marginMiB * (1 << 20))

	sc, ws, err := newWorkspaceScratch(in, "workload")
	if err != nil {
		return Verdict{}, err
	}
	defer sc.Close()
	hid, err := sc.copyHidden(in, "hidden", []string{driver})
	if err != nil {
		return Verdict{}, err
	}
	driverPath := filepath.Join(hid, filepath.FromSlash(driver))

	if len(forbidden) > 0 {
		hits, err := scanForbidden(ctx, in, r, sc.Dir, ws, withCompanions(forbidden))
		if err != nil {
			return Verdict{}, err
		}
		if len(hits) > 0 {
			return Verdict{Reasons: []Reason{{CodeForbiddenModule, fmt.Sprintf(
				"the code imports a module the task forbids (%s): %s", strings.Join(forbidden, ", "), shortList(hits, 5))}}}, nil
		}
	}

	base, err := runDriver(ctx, r, sc, ws, driverPath, forbidden, true, verifierTimeout(in))
	if err != nil {
		return Verdict{}, err
	}
	if !base.found || !base.result.OK || base.res.ExitCode != 0 {
		return Verdict{}, infraf("the baseline run of %s failed (exit %d, timed out %v): %s",
			driver, base.res.ExitCode, base.res.TimedOut, tail(base.res.Stderr, 400))
	}
	if base.res.MaxRSS <= 0 {
		return Verdict{}, infraf("the runner reported no peak RSS for the baseline run")
	}
	memCap := base.res.MaxRSS + margin

	slowdown := 1.0
	if calSec > 0 {
		if slowdown, err = calibrate(ctx, in, r, sc.Dir, calSec); err != nil {
			return Verdict{}, err
		}
		wall = time.Duration(float64(wall) * slowdown)
	}

	run, err := runDriver(ctx, r, sc, ws, driverPath, forbidden, false, wall)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Detail: fmt.Sprintf("host slowdown %.2f (wall cap %s on the target host)\n", slowdown,
		time.Duration(wallSec*float64(time.Second))) + workloadDetail(base, run, memCap, wall)}
	v.Reasons = judgeWorkload(run, base.res.MaxRSS, memCap, wall)
	if len(v.Reasons) == 0 {
		v.Reward, v.Pass = 1, true
	}
	return v, nil
}

// judgeWorkload turns a workload run into reasons; none means it passed.
func judgeWorkload(run workloadRun, baseline, memCap int64, wall time.Duration) []Reason {
	var out []Reason
	res := run.res
	if res.TimedOut || res.Wall > wall {
		out = append(out, Reason{CodeTimeCap, fmt.Sprintf("the workload ran past its %s wall cap (stopped or done at %s)",
			wall, res.Wall.Round(10*time.Millisecond))})
	}
	if res.OOM || res.MaxRSS > memCap {
		out = append(out, Reason{CodeMemoryCap, fmt.Sprintf("peak RSS %s is above the cap %s (baseline %s + margin %s): the map holds too much in memory",
			mib(res.MaxRSS), mib(memCap), mib(baseline), mib(memCap-baseline))})
	}
	// The driver's report (which modules, what went wrong) is the
	// hidden workload's own words: Detail carries it.
	if run.found && len(run.result.Forbidden) > 0 {
		out = append(out, Reason{CodeForbiddenModule, fmt.Sprintf("the code tried to import %d module(s) the task forbids at run time", len(run.result.Forbidden))})
	}
	switch {
	case run.found && !run.result.OK:
		out = append(out, Reason{CodeWorkloadWrong, "the workload found a wrong result"})
	case !run.found && !res.TimedOut:
		out = append(out, Reason{CodeWorkloadWrong, fmt.Sprintf("the workload did not finish: exit %d, signal %d", res.ExitCode, res.Signal)})
	}
	return out
}

// runDriver runs the driver once (the baseline when baseline is set).
func runDriver(ctx context.Context, r Runner, sc *scratch, ws, driverPath string, forbidden []string, baseline bool, timeout time.Duration) (workloadRun, error) {
	nonce, noncePath, err := writeNonce(sc.Dir)
	if err != nil {
		return workloadRun{}, err
	}
	root, err := os.MkdirTemp(sc.Dir, "root-")
	if err != nil {
		return workloadRun{}, infraf("making the map root: %v", err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		return workloadRun{}, infraf("making the map root: %v", err)
	}
	args := []string{Python, "-I", driverPath, "--nonce-file", noncePath, "--root", root,
		"--forbid", strings.Join(forbidden, ",")}
	if baseline {
		args = append(args, "--baseline")
	}
	res, err := r.Run(ctx, RunSpec{Args: args, Dir: ws, Env: pythonEnv(ws), Timeout: timeout, MemoryLimit: workloadAddrLimit})
	if err != nil {
		return workloadRun{}, fmt.Errorf("%w: running the workload driver: %w", ErrInfra, err)
	}
	out := workloadRun{res: res}
	out.found, err = readResult(res.Stdout, nonce, &out.result)
	if err != nil {
		return workloadRun{}, infraf("workload driver: %v", err)
	}
	os.Remove(noncePath) // in case the driver never got to it
	os.RemoveAll(root)
	return out, nil
}

// calibrate runs calibrationScript and returns how much slower than the
// target host (ref seconds) this host ran it, at least 1.
func calibrate(ctx context.Context, in Input, r Runner, dir string, ref float64) (float64, error) {
	res, err := r.Run(ctx, RunSpec{Args: []string{Python, "-I", "-c", calibrationScript}, Dir: dir,
		Env: pythonEnv(dir), Timeout: verifierTimeout(in)})
	if err != nil {
		return 0, fmt.Errorf("%w: running the calibration: %w", ErrInfra, err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return 0, infraf("the calibration failed (exit %d, timed out %v): %s", res.ExitCode, res.TimedOut, tail(res.Stderr, 300))
	}
	slowdown := max(1, res.Wall.Seconds()/ref)
	if slowdown > maxSlowdown {
		return 0, infraf("task %s: this host ran the calibration %.1fx slower than the target host (at most %.0fx): too slow to grade its wall cap fairly",
			in.Task.ID, slowdown, maxSlowdown)
	}
	return slowdown, nil
}

// scanForbidden runs forbidScanScript over ws.
func scanForbidden(ctx context.Context, in Input, r Runner, dir, ws string, forbidden []string) ([]string, error) {
	return runPythonList(ctx, in, r, dir, "forbidden-module scan", forbidScanScript, ".benchd-forbid.json",
		map[string]any{"root": ws, "forbidden": forbidden, "skip": []string{"__pycache__", ".pytest_cache", ".git"}})
}

// withCompanions adds the C halves of the forbidden modules.
func withCompanions(names []string) []string {
	out := append([]string{}, names...)
	for _, n := range names {
		out = append(out, forbiddenCompanions[n]...)
	}
	return out
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// workloadDetail is the measurements, for people reading the verdict.
func workloadDetail(base, run workloadRun, memCap int64, wall time.Duration) string {
	stats, _ := json.Marshal(run.result.Stats)
	return fmt.Sprintf("baseline: peak RSS %s, wall %s\nworkload: peak RSS %s (cap %s), wall %s (cap %s), exit %d, timed out %v\nmessage: %s\nforbidden: %v\nstats: %s\nstderr: %s",
		mib(base.res.MaxRSS), base.res.Wall.Round(time.Millisecond),
		mib(run.res.MaxRSS), mib(memCap), run.res.Wall.Round(time.Millisecond), wall, run.res.ExitCode, run.res.TimedOut,
		run.result.Message, run.result.Forbidden, stats, tail(run.res.Stderr, 1500))
}
