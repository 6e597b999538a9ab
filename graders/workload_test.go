package graders

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"benchd.dev/tasks"
)

// gradeNamed grades a known attempt (or "reference") of a repository task.
func gradeNamed(t *testing.T, task *tasks.Task, name string) Verdict {
	t.Helper()
	a, err := task.Attempt(name)
	if err != nil {
		t.Fatal(err)
	}
	return gradeDir(t, task, materialize(t, task, a))
}

// checkCodes fails t unless v carries exactly the codes want (in any
// order); an empty want means a pass.
func checkCodes(t *testing.T, v Verdict, want ...string) {
	t.Helper()
	got := slices.Clone(v.Codes())
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got codes %v, want %v\nreasons: %v\n%s", got, want, v.Reasons, v.Detail)
	}
	if wantPass := len(want) == 0; v.Pass != wantPass || (v.Reward == 1) != wantPass {
		t.Errorf("got pass %v reward %d, want pass %v", v.Pass, v.Reward, wantPass)
	}
}

// TestWorkloadAttempts grades RT-04's reference and known attempts once
// each and requires exactly the reasons each failure mode must cause, not
// only the one its expect.toml names.
func TestWorkloadAttempts(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	task := loadRepoTask(t, "rt-04")
	for _, tc := range []struct {
		attempt string
		want    []string
	}{
		{"reference", nil},
		{"in-ram-dict", []string{CodeWorkloadWrong, CodeMemoryCap}},
		{"dump-on-flush", []string{CodeMemoryCap}},
		{"full-scan", []string{CodeTimeCap}},
		{"sqlite", []string{CodeForbiddenModule}},
	} {
		t.Run(tc.attempt, func(t *testing.T) {
			v := gradeNamed(t, task, tc.attempt)
			checkCodes(t, v, tc.want...)
			t.Logf("%s: %v\n%s", tc.attempt, v.Reasons, v.Detail)
		})
	}
}

// TestWorkloadRuntimeGuard hides a sqlite3 import from the static scan
// (the module name is computed); the driver's import hook must catch it.
func TestWorkloadRuntimeGuard(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	task := loadRepoTask(t, "rt-04")
	dir := materialize(t, task, task.Reference())
	p := filepath.Join(dir, "kv", "tiny_map.py")
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	src = append(src, "\n\nimport importlib\n\ntry:\n    _db = importlib.import_module(\"sql\" + \"ite3\")\nexcept ImportError:\n    _db = None\n"...)
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	v := gradeDir(t, task, dir)
	checkCodes(t, v, CodeForbiddenModule)
	if len(v.Reasons) > 0 && !strings.Contains(v.Reasons[0].Message, "at run time") {
		t.Errorf("got message %q, want the run-time guard's", v.Reasons[0].Message)
	}
}

// TestScanForbidden checks the static scan on every import form it reads.
func TestScanForbidden(t *testing.T) {
	testenv.Require(t, testenv.Python)
	ws := t.TempDir()
	files := map[string]string{
		"a.py":               "import sqlite3\n",
		"b.py":               "from dbm import gnu\n",
		"c.py":               "import json, shelve as s\n",
		"d.py":               "x = __import__('sqlite3')\n",
		"e.py":               "import importlib\nm = importlib.import_module('dbm.dumb')\n",
		"f.py":               "import _sqlite3\n",
		"pkg/ok.py":          "import json\nfrom . import sqlite3\nimport sqlite3x\n",
		"broken.py":          "def (:\n",
		"__pycache__/dbm.py": "import dbm\n",
	}
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := Input{Task: &tasks.Task{ID: "scan", VerifierTimeout: 30 * time.Second}}
	hits, err := scanForbidden(context.Background(), in, ExecRunner{}, t.TempDir(), ws, withCompanions([]string{"sqlite3", "dbm", "shelve"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.py:1: sqlite3", "b.py:1: dbm", "c.py:1: shelve", "d.py:1: sqlite3", "e.py:2: dbm.dumb", "f.py:1: _sqlite3"}
	if !slices.Equal(hits, want) {
		t.Errorf("got hits %q, want %q", hits, want)
	}
}

func TestJudgeWorkload(t *testing.T) {
	const base, limit = 10 << 20, 18 << 20
	wall := 5 * time.Second
	ok := workloadResult{OK: true}
	for _, tc := range []struct {
		name string
		run  workloadRun
		want []string
	}{
		{"pass", workloadRun{res: RunResult{Wall: time.Second, MaxRSS: 12 << 20}, result: ok, found: true}, nil},
		{"at the caps", workloadRun{res: RunResult{Wall: wall, MaxRSS: limit}, result: ok, found: true}, nil},
		{"timed out", workloadRun{res: RunResult{TimedOut: true, Wall: wall, ExitCode: -1, MaxRSS: 12 << 20}}, []string{CodeTimeCap}},
		{"slow but finished", workloadRun{res: RunResult{Wall: wall + time.Millisecond, MaxRSS: 12 << 20}, result: ok, found: true}, []string{CodeTimeCap}},
		{"over memory", workloadRun{res: RunResult{Wall: time.Second, MaxRSS: limit + 1}, result: ok, found: true}, []string{CodeMemoryCap}},
		{"oom killed", workloadRun{res: RunResult{OOM: true, ExitCode: -1, Signal: 9, Wall: time.Second}}, []string{CodeMemoryCap, CodeWorkloadWrong}},
		{"wrong read", workloadRun{res: RunResult{Wall: time.Second, MaxRSS: 12 << 20}, result: workloadResult{Message: "get returned None"}, found: true}, []string{CodeWorkloadWrong}},
		{"crash", workloadRun{res: RunResult{ExitCode: 1, Wall: time.Second, MaxRSS: 12 << 20, Stderr: []byte("Segmentation fault")}}, []string{CodeWorkloadWrong}},
		{"forbidden at run time", workloadRun{res: RunResult{Wall: time.Second, MaxRSS: 12 << 20}, result: workloadResult{OK: true, Forbidden: []string{"dbm"}}, found: true}, []string{CodeForbiddenModule}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range judgeWorkload(tc.run, base, limit, wall) {
				got = append(got, r.Code)
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestReadResult(t *testing.T) {
	type res struct {
		Nonce string `json:"nonce"`
		OK    bool   `json:"ok"`
	}
	for _, tc := range []struct {
		name      string
		out       string
		wantFound bool
		wantOK    bool
	}{
		{"the line", "noise\nBENCH-RESULT {\"nonce\": \"n1\", \"ok\": true}\n", true, true},
		{"forged line without the nonce", "BENCH-RESULT {\"nonce\": \"guess\", \"ok\": true}\n", false, false},
		{"forged after the real one", "BENCH-RESULT {\"nonce\": \"n1\", \"ok\": false}\nBENCH-RESULT {\"ok\": true}\n", true, false},
		{"not json", "BENCH-RESULT nonce n1 ok\n", false, false},
		{"nothing", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r res
			found, err := readResult([]byte(tc.out), "n1", &r)
			if err != nil {
				t.Fatal(err)
			}
			if found != tc.wantFound || r.OK != tc.wantOK {
				t.Errorf("got found %v ok %v, want %v %v", found, r.OK, tc.wantFound, tc.wantOK)
			}
		})
	}
}

// slowRunner runs commands with ExecRunner and reports their wall time
// multiplied by factor, as a host that factor times slower would.
type slowRunner struct{ factor float64 }

func (s slowRunner) Run(ctx context.Context, spec RunSpec) (RunResult, error) {
	res, err := ExecRunner{}.Run(ctx, spec)
	res.Wall = time.Duration(float64(res.Wall) * s.factor)
	return res, err
}

// TestCalibrate: the slowdown is the calibration's wall time against the
// target host's, never below 1, and a host too slow to grade fairly is an
// infra error, not the agent's time_cap.
func TestCalibrate(t *testing.T) {
	testenv.Require(t, testenv.Python)
	task := loadRepoTask(t, "rt-04")
	in := Input{Task: task}
	dir := t.TempDir()
	// The reference time: what this host takes (the slowest of three).
	ref := 0.0
	for range 3 {
		res, err := ExecRunner{}.Run(t.Context(), RunSpec{Args: []string{Python, "-I", "-c", calibrationScript}, Dir: dir, Env: pythonEnv(dir), Timeout: time.Minute})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("calibration script: %v exit %d", err, res.ExitCode)
		}
		ref = max(ref, res.Wall.Seconds())
	}
	own, err := calibrate(t.Context(), in, slowRunner{1}, dir, ref)
	if err != nil {
		t.Fatalf("calibrate: %v", err)
	}
	if own < 1 || own > 3 {
		t.Errorf("slowdown %.2f on the host that set the reference, want 1 to 3", own)
	}
	// A host four times slower gets about four.
	got, err := calibrate(t.Context(), in, slowRunner{4}, dir, ref)
	if err != nil {
		t.Fatalf("calibrate: %v", err)
	}
	if got < 2 || got > 8 {
		t.Errorf("slowdown %.2f on a 4x slower host, want about 4", got)
	}
	if got, err := calibrate(t.Context(), in, slowRunner{1}, dir, ref*100); err != nil || got != 1 {
		t.Errorf("faster host: slowdown %.2f (%v), want 1", got, err)
	}
	_, err = calibrate(t.Context(), in, slowRunner{1000}, dir, ref)
	if !errors.Is(err, ErrInfra) {
		t.Errorf("a host 1000x slower: error %v, want an infra error", err)
	}
}
