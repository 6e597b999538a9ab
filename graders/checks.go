package graders

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
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
//  3. The calls probe runs the same cases on the agent's workspace in
//     the agent's world (newAgentWorld, agentSpec): the workspace copy
//     with its plan at /workspace, the agent's uid, host name and
//     environment, hash randomisation on, the probe given as "-c" and
//     the cases on stdin. Nothing hidden (the generator, the solution,
//     the expected answers) is in its view.
//  4. The judge, here, compares the two runs' answers. The agent's probe
//     is only ever a source of answers to compare: its exit status, its
//     messages and any verdict it might print count for nothing, and
//     whatever it prints besides the answers is kept out of them (its
//     stdout is moved to stderr before the agent's code is imported).
//
// `[bench.grader.checks_poisoned]` maps workspace files the code under
// test must not use to twins in the bundle's tests/ that behave
// otherwise wherever a caller could notice. The agent's probe runs a
// second time with the twins in their place; its answers must not
// change. Answers that do are `checks_poisoned_code` (RT-03:
// bin_calls_text): the code under test calls the files. Code that uses
// them only when they are absent, or only when they look like the
// originals by name, cannot tell: the twins are there, and named alike.
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
	poisoned, err := paramTable(in, "checks_poisoned")
	if err != nil {
		return nil, "", err
	}
	poisonCode, err := paramString(in, "checks_poisoned_code", CodeChecksFailed)
	if err != nil {
		return nil, "", err
	}
	if !reasonCodeRE.MatchString(poisonCode) {
		return nil, "", infraf("task %s: checks_poisoned_code %q is not a reason code", in.Task.ID, poisonCode)
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
		if err := putPlan(in, ws); err != nil {
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
	got, rs, detail, err := judgeProbe(ctx, in, r, cases, raw, want, nil)
	if err != nil || len(poisoned) == 0 {
		return rs, detail, err
	}
	// Again with the twins in place of the files the code must not use:
	// answers that change mean it calls them.
	again, _, detail2, err := judgeProbe(ctx, in, r, cases, raw, want, poisoned)
	if err != nil {
		return nil, "", err
	}
	if !reflect.DeepEqual(got, again) {
		names := sortedKeys(poisoned)
		rs = append(rs, Reason{Code: poisonCode, Message: fmt.Sprintf("the seeded checks answer otherwise when %s %s replaced by twins that behave otherwise: the code under test uses %s (seed %d)",
			shortList(names, 4), isAre(len(names)), itThem(len(names)), in.Seed)})
		detail = strings.TrimSpace(detail + "\n" + detail2 + "\n" + firstDiff(cases, got, again))
	}
	return rs, detail, nil
}

// firstDiff names the first case whose answers differ between a and b,
// for the operator.
func firstDiff(cases checkCases, a, b probeAnswer) string {
	if a.ImportError != b.ImportError {
		return fmt.Sprintf("import error %q, then %q", a.ImportError, b.ImportError)
	}
	for i := range cases.Cases {
		if !reflect.DeepEqual(at(a.Results, i), at(b.Results, i)) {
			return fmt.Sprintf("with the twins, case %d: %s\nanswered %s\nthen     %s", i, cases.Cases[i], jsonText(at(a.Results, i)), jsonText(at(b.Results, i)))
		}
	}
	return ""
}

// judgeProbe runs the calls probe on the agent's world, with the twins
// of poisoned (workspace path: file of the bundle's tests/) in place,
// and compares its answers with want. It returns the answers too, for
// comparison with another run.
func judgeProbe(ctx context.Context, in Input, r Runner, cases checkCases, raw []byte, want probeAnswer, poisoned map[string]string) (probeAnswer, []Reason, string, error) {
	got, err := probeRun(ctx, in, r, "probe", raw, func(sc *scratch) (string, error) {
		ws, err := sc.copyWorkspace(in, "ws")
		if err != nil {
			return "", err
		}
		if err := putPlan(in, ws); err != nil {
			return "", err
		}
		for _, rel := range sortedKeys(poisoned) {
			if err := copyOne(filepath.Join(in.Task.TestsDir(), filepath.FromSlash(poisoned[rel])), filepath.Join(ws, filepath.FromSlash(rel))); err != nil {
				return "", infraf("task %s: twin of %s: %v", in.Task.ID, rel, err)
			}
		}
		return ws, nil
	})
	var pe *probeError
	switch {
	case errors.As(err, &pe):
		return got, []Reason{{Code: CodeChecksFailed, Message: "the seeded checks got no answer: " + pe.public}}, pe.detail, nil
	case err != nil:
		return got, nil, "", err
	case got.ImportError != "":
		return got, []Reason{{Code: CodeChecksFailed, Message: fmt.Sprintf("the module under test could not be imported (%s)", got.ImportError)}}, "", nil
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
	detail := fmt.Sprintf("seeded checks (seed %d, twins %v): first failing case %d: %s\nwant %s\ngot  %s",
		in.Seed, sortedKeys(poisoned), first, cases.Cases[first], jsonText(want.Results[first]), jsonText(at(got.Results, first)))
	return got, []Reason{{Code: CodeChecksFailed, Message: fmt.Sprintf("%d of %d seeded checks gave other answers than the task's own (seed %d)", failed, len(want.Results), in.Seed)}}, detail, nil
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
	spec := agentSpec(ws, verifierTimeout(in), Python, "-c", probeCalls)
	spec.Stdin = bytes.NewReader(cases)
	res, err := r.Run(ctx, spec)
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
