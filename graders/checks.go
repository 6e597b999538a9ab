package graders

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"benchd.dev/tasks"
)

// CodeChecksFailed: the judge's seeded checks gave other answers than the
// bundle's solution gives on the same calls.
const CodeChecksFailed = "checks_failed"

// Seeded checks: the judge and its probes.
//
// A kind that takes `checks = "gen.py"` (a file of the bundle's tests/)
// runs, besides whatever else it runs, checks that no process running
// the agent's code can steer:
//
//  1. The generator, gen.py SEED, is the bundle's own code and runs in a
//     scratch of its own with nothing of the agent's; it prints the cases
//     (calls to make, see probe_calls.py) for this grading's seed, so a
//     fixed set of hidden values to special-case does not exist.
//  2. The calls probe runs the cases on the bundle's solution, in a
//     scratch of its own: the expected answers.
//  3. The calls probe runs the same cases on the agent's workspace, in a
//     fresh scratch holding only that workspace, the probe and the cases.
//     pytest is never imported there, and nothing hidden (the generator,
//     the solution, hidden tests) is in its view.
//  4. The judge, here, compares the two runs' answers. The agent's probe
//     is only ever a source of answers to compare: its exit status, its
//     messages and any verdict it might print count for nothing, and
//     whatever it prints besides the answers is kept out of them (its
//     stdout is moved to stderr before the agent's code is imported).
//
// `checks_absent = ["a.py", ...]` leaves those workspace files out of the
// agent's probe (never the solution's): code that must not reach them
// cannot, and code that does fails. When the checks fail that way, the
// reason carries `checks_absent_code`
// (RT-03: bin_calls_text) when its answers differ from the run with the
// files there, and checks_failed as well when those are wrong too.
//
// The seed is Input.Seed, recorded in the verdict, so that a regrade
// with the same seed makes the same checks.

//go:embed probe_calls.py
var probeCalls string

// newSeed returns a random nonzero seed for a grading.
func newSeed() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand does not fail on Linux
		}
		if s := binary.LittleEndian.Uint64(b[:]) >> 1; s != 0 {
			return s // below 2^63, so that it fits the int64 of SQLite and of flag parsing
		}
	}
}

type checkCases struct {
	Module string            `json:"module"`
	Cases  []json.RawMessage `json:"cases"`
}

type probeAnswer struct {
	ImportError string `json:"import_error"`
	Results     []any  `json:"results"`
}

// runChecks runs the seeded checks of in's task, if it names any, and
// returns the reasons they fail with (none when they pass) and an
// operator-only detail. An error is an infra error: the bundle's
// generator or solution failed, never the agent's code.
func runChecks(ctx context.Context, in Input, r Runner) ([]Reason, string, error) {
	gen, err := paramString(in, "checks", "")
	if err != nil || gen == "" {
		return nil, "", err
	}
	if in.Seed == 0 {
		return nil, "", infraf("task %s: seeded checks need a seed", in.Task.ID)
	}
	cases, raw, err := generateChecks(ctx, in, r, gen)
	if err != nil {
		return nil, "", err
	}
	want, err := probeRun(ctx, in, r, "oracle", raw, func(sc *scratch) (string, error) {
		ws := filepath.Join(sc.Dir, "ws")
		if err := tasks.CopyTree(in.Task.WorkspaceDir(), ws); err != nil {
			return "", err
		}
		return ws, tasks.ApplyOverlay(ws, in.Task.SolutionDir(), nil)
	})
	if err != nil {
		return nil, "", err
	}
	if want.ImportError != "" || len(want.Results) != len(cases.Cases) {
		return nil, "", infraf("task %s: the solution gave no answer to the seeded checks (import error %q, %d of %d cases)", in.Task.ID, want.ImportError, len(want.Results), len(cases.Cases))
	}
	absent, err := paramStrings(in, "checks_absent")
	if err != nil {
		return nil, "", err
	}
	absentCode, err := paramString(in, "checks_absent_code", CodeChecksFailed)
	if err != nil {
		return nil, "", err
	}
	if !reasonCodeRE.MatchString(absentCode) {
		return nil, "", infraf("task %s: checks_absent_code %q is not a reason code", in.Task.ID, absentCode)
	}
	got, rs, detail, err := judgeProbe(ctx, in, r, cases, raw, want, absent)
	if err != nil || len(rs) == 0 || len(absent) == 0 {
		return rs, detail, err
	}
	// The checks failed with the absent files gone. Run them again with
	// the files there: answers that change mean the code under test
	// reaches the files (absentCode); answers that are still wrong are
	// wrong in any case (checks_failed).
	again, rs2, detail2, err := judgeProbe(ctx, in, r, cases, raw, want, nil)
	if err != nil {
		return nil, "", err
	}
	var out []Reason
	if !reflect.DeepEqual(got, again) {
		out = append(out, Reason{absentCode, fmt.Sprintf("the seeded checks answer otherwise while %s %s absent: the code under test reaches %s (seed %d)",
			shortList(absent, 4), isAre(len(absent)), itThem(len(absent)), in.Seed)})
	}
	out = append(out, rs2...)
	if len(out) == 0 {
		out = rs // the same wrong answers both ways: cannot happen, kept safe
	}
	return out, strings.TrimSpace(detail + "\n" + detail2), nil
}

// judgeProbe runs the calls probe on a copy of the agent's workspace
// without the files absent, and compares its answers with want. It
// returns the answers too, for comparison with another run.
func judgeProbe(ctx context.Context, in Input, r Runner, cases checkCases, raw []byte, want probeAnswer, absent []string) (probeAnswer, []Reason, string, error) {
	got, err := probeRun(ctx, in, r, "probe", raw, func(sc *scratch) (string, error) {
		ws, err := sc.copyWorkspace(in, "ws")
		if err != nil {
			return "", err
		}
		for _, rel := range absent {
			if err := os.RemoveAll(filepath.Join(ws, filepath.FromSlash(rel))); err != nil {
				return "", infraf("unable to leave %s out of the probe: %v", rel, err)
			}
		}
		return ws, nil
	})
	var pe *probeError
	switch {
	case errors.As(err, &pe):
		return got, []Reason{{CodeChecksFailed, "the seeded checks got no answer: " + pe.public}}, pe.detail, nil
	case err != nil:
		return got, nil, "", err
	case got.ImportError != "":
		return got, []Reason{{CodeChecksFailed, fmt.Sprintf("the module under test could not be imported (%s)", got.ImportError)}}, "", nil
	}
	failed, first := 0, -1
	for i := range want.Results {
		if i >= len(got.Results) || !reflect.DeepEqual(want.Results[i], got.Results[i]) {
			failed++
			if first < 0 {
				first = i
			}
		}
	}
	if failed == 0 {
		return got, nil, "", nil
	}
	detail := fmt.Sprintf("seeded checks (seed %d, absent %v): first failing case %d: %s\nwant %s\ngot  %s",
		in.Seed, absent, first, cases.Cases[first], jsonText(want.Results[first]), jsonText(at(got.Results, first)))
	return got, []Reason{{CodeChecksFailed, fmt.Sprintf("%d of %d seeded checks gave other answers than the task's own (seed %d)", failed, len(want.Results), in.Seed)}}, detail, nil
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func itThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// generateChecks runs the bundle's generator for in.Seed.
func generateChecks(ctx context.Context, in Input, r Runner, gen string) (checkCases, []byte, error) {
	var cc checkCases
	sc, err := newScratch(in, "gen")
	if err != nil {
		return cc, nil, err
	}
	defer sc.Close()
	if err := copyOne(filepath.Join(in.Task.TestsDir(), filepath.FromSlash(gen)), filepath.Join(sc.Dir, "gen.py")); err != nil {
		return cc, nil, infraf("task %s: checks generator %s: %v", in.Task.ID, gen, err)
	}
	res, err := r.Run(ctx, RunSpec{
		Args:    []string{Python, "-I", "gen.py", strconv.FormatUint(in.Seed, 10)},
		Dir:     sc.Dir,
		Env:     pythonEnv(sc.Dir),
		Timeout: verifierTimeout(in),
	})
	if err != nil {
		return cc, nil, fmt.Errorf("%w: running the checks generator: %w", ErrInfra, err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return cc, nil, infraf("task %s: checks generator %s failed (exit %d): %s", in.Task.ID, gen, res.ExitCode, tail(res.Stderr, 400))
	}
	if err := json.Unmarshal(res.Stdout, &cc); err != nil || cc.Module == "" || len(cc.Cases) == 0 {
		return cc, nil, infraf("task %s: checks generator %s printed no cases (%v)", in.Task.ID, gen, err)
	}
	return cc, res.Stdout, nil
}

// probeError is a probe of the agent's code that gave no usable answer.
type probeError struct{ public, detail string }

func (e *probeError) Error() string { return e.public }

// probeRun makes a scratch, lets fill put the code to probe in it (and
// return its directory), and runs the calls probe on the cases there.
// For the agent's code, a probe that times out, dies or prints no
// answer is a *probeError; for the solution, an infra error.
func probeRun(ctx context.Context, in Input, r Runner, name string, cases []byte, fill func(*scratch) (string, error)) (probeAnswer, error) {
	var ans probeAnswer
	agent := name == "probe"
	sc, err := newScratch(in, name)
	if err != nil {
		return ans, err
	}
	defer sc.Close()
	ws, err := fill(sc)
	if err != nil {
		if agent {
			return ans, err
		}
		return ans, infraf("task %s: unable to lay out the solution: %v", in.Task.ID, err)
	}
	if err := os.WriteFile(filepath.Join(sc.Dir, "probe_calls.py"), []byte(probeCalls), 0o644); err != nil {
		return ans, infraf("unable to write the probe: %v", err)
	}
	if err := os.WriteFile(filepath.Join(sc.Dir, "cases.json"), cases, 0o644); err != nil {
		return ans, infraf("unable to write the cases: %v", err)
	}
	res, err := r.Run(ctx, RunSpec{
		Args:    []string{Python, "-I", "probe_calls.py", "cases.json", filepath.Base(ws)},
		Dir:     sc.Dir,
		Env:     pythonEnv(sc.Dir),
		Timeout: verifierTimeout(in),
	})
	if err != nil {
		return ans, fmt.Errorf("%w: running the calls probe: %w", ErrInfra, err)
	}
	line, _, _ := strings.Cut(string(res.Stdout), "\n")
	perr := json.Unmarshal([]byte(line), &ans)
	switch {
	case res.TimedOut:
		err = &probeError{fmt.Sprintf("the probe ran past the %s limit", verifierTimeout(in)), ""}
	case res.OOM:
		err = &probeError{"the probe was killed at the task's memory limit", ""}
	case perr != nil || (ans.ImportError == "" && ans.Results == nil):
		err = &probeError{fmt.Sprintf("the probe printed no answers (exit %d)", res.ExitCode), string(tail(res.Stderr, 2000))}
	}
	if err != nil && !agent {
		return ans, infraf("task %s: the seeded checks failed on the solution: %v %s", in.Task.ID, err, tail(res.Stderr, 400))
	}
	return ans, err
}

func at(xs []any, i int) any {
	if i < len(xs) {
		return xs[i]
	}
	return nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return truncate(string(b), 600)
}
