package graders

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Reason codes of kind "workload".
const (
	CodeWorkloadWrong   = "workload_wrong"   // a read returned the wrong thing, or the code raised or crashed
	CodeMemoryCap       = "memory_cap"       // memory above the baseline plus the margin
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

// calibrationScript (calibrate.py) is a fixed, trusted CPU workload of the same kind as
// a map's (bytes keys, hashing, dict inserts and deletes, a sort). Its
// wall time in this grading run, against what it takes on the target
// host (calibration_sec), says how much slower this host is right now.
//
//go:embed calibrate.py
var calibrationScript string

// forbidScanScript (forbid_scan.py) lists, as JSON, every import of a forbidden module in
// the workspace's Python files: import and from-import statements, and
// __import__ / importlib.import_module calls with a constant name.
// argv[1] is a JSON config: {"root": dir, "forbidden": [...], "skip": [...]}.
//
//go:embed forbid_scan.py
var forbidScanScript string

// forbiddenCompanions are the C halves of modules a task may forbid:
// forbidding the module forbids its C half too.
var forbiddenCompanions = map[string][]string{
	"sqlite3": {"_sqlite3"},
	"dbm":     {"_dbm", "_gdbm"},
}

// gradeWorkload is kind "workload": the judge drives the agent's map with
// a workload it generates and checks every answer against its own model,
// under a wall cap and a memory cap measured against a baseline.
//
// Parameters ([bench.grader]):
//
//	server = "map_server.py"        the map probe, a file of the bundle's tests/
//	                                (its docstring gives the request protocol)
//	wall_sec = 5.0                  wall cap of the workload run, on the target host
//	calibration_sec = 0.3           wall time of calibrationScript on the target host
//	                                (0 or absent: the cap is not scaled)
//	memory_margin_mib = 8           memory above the baseline the map may use
//	mem_budget_bytes = 262144       passed to the map's constructor
//	forbidden_modules = ["sqlite3"] modules the code may not use
//
// What runs where, and what is trusted:
//
//   - The judge (this file) generates the workload from the grading's
//     seed (Input.Seed): keys, values of 2-10 KiB that do not compress,
//     and the phases (load, mixed puts, deletes and gets, drop_cache,
//     reads, flush, close, reopen on the same root, a check of every key,
//     more operations, close). Its model holds a version per key; values
//     are regenerated from the seed, key and version, so the judge holds
//     none of them either.
//   - The probe (the server with the agent's code imported) runs confined
//     in a scratch of its own that holds the workspace copy, the server
//     and an empty map root. Requests reach it through a pipe as the judge
//     writes them, so it never holds the workload ahead of time without
//     paying for it in memory or on disk. A get is answered with
//     sha256(challenge + value) for a challenge new to that get: only
//     code that has the value can answer. The probe's exit status and any
//     message it prints count for nothing; its answers are compared one by
//     one with the model.
//   - Processes: the workload is cut at each open (mapWorkload.segments):
//     each part runs in a process of its own, in the agent's world, on the
//     same map root, so a reopen after close (and after drop_cache) is in
//     a fresh process and a map that kept its state in the process has
//     lost it. The wall time is their sum; the memory readings their
//     largest.
//   - Memory: everything the probe's cgroup is charged for but the page
//     cache of files on disk (RunResult.PeakCharged: anon, shmem, tmpfs
//     and memfd, kernel memory, socket and pipe buffers, a helper process
//     it started) above the baseline's, and the peak RSS above the
//     baseline's, must both stay within the margin. The baseline is the same server and
//     stream with a map that keeps nothing, in the same grading. A runner
//     without a cgroup (ExecRunner) gives RSS only.
//   - Forbidden modules: every .py file of the workspace is parsed for
//     imports of them first (forbidden_module, and the workload does not
//     run). At run time the modules' files (sqlite3, every dbm backend,
//     shelve, their C halves and bytecode) are absent from the probe's
//     view where the runner can hide them (Hider), so loading one by path
//     fails too; the server also refuses them with an import hook. A map
//     that needs them then fails its answers (workload_wrong).
//   - Wall time: where calibration_sec is set, a calibration run
//     (calibrationScript, trusted code, before any agent code) says how
//     much slower than the target host this host runs now (at least 1); the
//     wall cap is wall_sec times that. A slowdown above maxSlowdown is an
//     infra error: the host cannot grade fairly.
//
// Reasons: time_cap (the run went past the cap), memory_cap, workload_wrong
// (a wrong answer, an exception, a crash, or answers that stop early),
// forbidden_module.
func gradeWorkload(ctx context.Context, in Input, r Runner) (Verdict, error) {
	server, err := paramString(in, "server", "")
	if err != nil {
		return Verdict{}, err
	}
	if server == "" {
		return Verdict{}, infraf("task %s: kind workload needs a server", in.Task.ID)
	}
	wallSec, err := numberParam(in, "wall_sec", defaultWallSec)
	if err != nil {
		return Verdict{}, err
	}
	marginMiB, err := numberParam(in, "memory_margin_mib", defaultMarginMiB)
	if err != nil {
		return Verdict{}, err
	}
	budget, err := numberParam(in, "mem_budget_bytes", 256<<10)
	if err != nil {
		return Verdict{}, err
	}
	if wallSec <= 0 || marginMiB <= 0 || budget <= 0 {
		return Verdict{}, infraf("task %s: wall_sec, memory_margin_mib and mem_budget_bytes must be positive", in.Task.ID)
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
	if in.Seed == 0 {
		return Verdict{}, infraf("task %s: the workload needs a seed", in.Task.ID)
	}
	wall := time.Duration(wallSec * float64(time.Second))
	margin := int64(marginMiB * (1 << 20))

	if len(forbidden) > 0 {
		sc, ws, err := newWorkspaceScratch(in, "scan")
		if err != nil {
			return Verdict{}, err
		}
		hits, err := scanForbidden(ctx, in, r, sc.Dir, ws, withCompanions(forbidden))
		sc.Close()
		if err != nil {
			return Verdict{}, err
		}
		if len(hits) > 0 {
			return verdictOf("", []Reason{{Code: CodeForbiddenModule, Message: fmt.Sprintf(
				"the code imports a module the task forbids (%s): %s", strings.Join(forbidden, ", "), shortList(hits, 5))}}, ""), nil
		}
	}
	var hide []string
	if h, ok := r.(Hider); ok && h.CanHide() && len(forbidden) > 0 {
		if hide, err = modulePaths(ctx, in, r, withCompanions(forbidden)); err != nil {
			return Verdict{}, err
		}
	}
	wl := newMapWorkload(in.Seed)
	probe := mapProbe{in: in, r: r, server: server, budget: int64(budget), forbidden: forbidden, hide: hide, wl: wl}

	base, err := probe.run(ctx, true, verifierTimeout(in))
	if err != nil {
		return Verdict{}, err
	}
	if base.res.ExitCode != 0 || base.res.TimedOut || base.total < len(wl.ops) {
		return Verdict{}, infraf("the baseline run of %s failed (exit %d, timed out %v, %d of %d answers): %s",
			server, base.res.ExitCode, base.res.TimedOut, base.total, len(wl.ops), tail(base.res.Stderr, 400))
	}
	if base.res.MaxRSS <= 0 {
		return Verdict{}, infraf("the runner reported no peak RSS for the baseline run")
	}

	slowdown := 1.0
	if calSec > 0 {
		sc, err := newScratch(in, "calibrate")
		if err != nil {
			return Verdict{}, err
		}
		slowdown, err = calibrate(ctx, in, r, sc.Dir, calSec)
		sc.Close()
		if err != nil {
			return Verdict{}, err
		}
		wall = time.Duration(float64(wall) * slowdown)
	}

	run, err := probe.run(ctx, false, wall)
	if err != nil {
		return Verdict{}, err
	}
	v := verdictOf("", judgeMapRun(run, base, margin, wall, hide), "")
	v.Detail = fmt.Sprintf("host slowdown %.2f (wall cap %s on the target host, %s here)\n", slowdown,
		time.Duration(wallSec*float64(time.Second)), wall) + mapDetail(base, run, margin, wl, hide)
	if len(v.Reasons) == 0 {
		v.Reward, v.Pass = 1, true
	}
	return v, nil
}

// judgeMapRun turns the probe's run into reasons; none means it passed.
func judgeMapRun(run, base mapRun, margin int64, wall time.Duration, hide []string) []Reason {
	var out []Reason
	res := run.res
	if res.TimedOut || res.Wall > wall {
		out = append(out, Reason{Code: CodeTimeCap, Message: fmt.Sprintf("the workload ran past its %s wall cap (stopped or done at %s)",
			wall, res.Wall.Round(10*time.Millisecond))})
	}
	rssOver := res.MaxRSS > base.res.MaxRSS+margin
	shmOver := base.res.PeakAnonShmem > 0 && res.PeakAnonShmem > base.res.PeakAnonShmem+margin
	chargedOver := base.res.PeakCharged > 0 && res.PeakCharged > base.res.PeakCharged+margin
	switch {
	case res.OOM:
		out = append(out, Reason{Code: CodeMemoryCap, Message: "the map was killed at the task's memory limit"})
	case chargedOver:
		out = append(out, Reason{Code: CodeMemoryCap, Message: fmt.Sprintf("memory charged to the map's processes, page cache of files aside, %s is above the cap %s (baseline %s + margin %s): the map holds too much outside its files",
			mib(res.PeakCharged), mib(base.res.PeakCharged+margin), mib(base.res.PeakCharged), mib(margin))})
	case shmOver:
		out = append(out, Reason{Code: CodeMemoryCap, Message: fmt.Sprintf("anonymous and shared memory %s is above the cap %s (baseline %s + margin %s): the map holds too much in memory",
			mib(res.PeakAnonShmem), mib(base.res.PeakAnonShmem+margin), mib(base.res.PeakAnonShmem), mib(margin))})
	case rssOver:
		out = append(out, Reason{Code: CodeMemoryCap, Message: fmt.Sprintf("peak RSS %s is above the cap %s (baseline %s + margin %s): the map holds too much in memory",
			mib(res.MaxRSS), mib(base.res.MaxRSS+margin), mib(base.res.MaxRSS), mib(margin))})
	}
	if run.wrong != "" {
		msg := run.wrong
		if len(hide) > 0 {
			msg += " (the modules the task forbids are absent from the probe)"
		}
		out = append(out, Reason{Code: CodeWorkloadWrong, Message: msg})
	} else if run.answered < len(run.wl.ops) && !res.TimedOut && !res.OOM {
		out = append(out, Reason{Code: CodeWorkloadWrong, Message: fmt.Sprintf("the map stopped answering after %d of %d operations (exit %d, signal %d)",
			run.answered, len(run.wl.ops), res.ExitCode, res.Signal)})
	}
	return out
}

// mapDetail is the measurements, for the operator.
func mapDetail(base, run mapRun, margin int64, wl *mapWorkload, hide []string) string {
	return fmt.Sprintf("workload: seed %d, %d operations (%d puts, %d deletes, %d gets), %d live keys, %s live at the end\n"+
		"baseline: peak RSS %s, anon+shmem %s, charged %s, wall %s\n"+
		"run: peak RSS %s, anon+shmem %s, charged %s (margin %s), wall %s, exit %d, timed out %v, %d answers\n"+
		"first wrong answer: %s\nhidden from the probe: %v\nstderr: %s",
		wl.seed, len(wl.ops), wl.puts, wl.deletes, wl.gets, wl.liveKeys, mib(wl.liveBytes),
		mib(base.res.MaxRSS), mib(base.res.PeakAnonShmem), mib(base.res.PeakCharged), base.res.Wall.Round(time.Millisecond),
		mib(run.res.MaxRSS), mib(run.res.PeakAnonShmem), mib(run.res.PeakCharged), mib(margin), run.res.Wall.Round(time.Millisecond),
		run.res.ExitCode, run.res.TimedOut, run.answered, run.wrongDetail, hide, tail(run.res.Stderr, 1500))
}

// modulePathsScript (module_paths.py) prints, as JSON, the files and directories that hold
// the modules named in argv[1:] (and their bytecode), as this Python
// finds them: what a probe must not see. Modules built into the
// interpreter have no file and are left out.
//
//go:embed module_paths.py
var modulePathsScript string

// modulePaths lists where the modules names live, for RunSpec.Hide.
func modulePaths(ctx context.Context, in Input, r Runner, names []string) ([]string, error) {
	sc, err := newScratch(in, "modules")
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	res, err := runPython(ctx, r, sc.Dir, verifierTimeout(in), modulePathsScript, names...)
	if err != nil {
		return nil, err
	}
	var paths []string
	if res.ExitCode != 0 || json.Unmarshal(res.Stdout, &paths) != nil {
		return nil, infraf("finding the forbidden modules' files failed (exit %d): %s", res.ExitCode, tail(res.Stderr, 300))
	}
	return paths, nil
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
