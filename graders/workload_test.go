package graders

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
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
		{"answers-for-server", []string{CodeWorkloadWrong}},
	} {
		t.Run(tc.attempt, func(t *testing.T) {
			v := gradeNamed(t, task, tc.attempt)
			checkCodes(t, v, tc.want...)
			t.Logf("%s: %v\n%s", tc.attempt, v.Reasons, v.Detail)
		})
	}
}

// TestWorkloadRuntimeGuard hides a sqlite3 import from the static scan
// (the module name is computed). The server refuses it at run time, so a
// map that needs it fails its answers; one that only tries it and goes
// on without it is judged by its answers.
func TestWorkloadRuntimeGuard(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	task := loadRepoTask(t, "rt-04")
	for _, tc := range []struct {
		name, add string
		want      []string
	}{
		{"needs it", "\n\nimport importlib\n\n_db = importlib.import_module(\"sql\" + \"ite3\")\n", []string{CodeWorkloadWrong}},
		{"tries it", "\n\nimport importlib\n\ntry:\n    _db = importlib.import_module(\"sql\" + \"ite3\")\nexcept ImportError:\n    _db = None\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := materialize(t, task, task.Reference())
			p := filepath.Join(dir, "kv", "tiny_map.py")
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, append(src, tc.add...), 0o644); err != nil {
				t.Fatal(err)
			}
			checkCodes(t, gradeDir(t, task, dir), tc.want...)
		})
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

// TestJudgeMapRun: caps, wrong answers and answers that stop early.
func TestJudgeMapRun(t *testing.T) {
	const margin = 8 << 20
	wall := 5 * time.Second
	wl := newMapWorkload(1)
	all := len(wl.ops)
	base := mapRun{res: RunResult{MaxRSS: 10 << 20, PeakAnonShmem: 9 << 20}, wl: wl, answered: all}
	for _, tc := range []struct {
		name string
		run  mapRun
		want []string
	}{
		{"pass", mapRun{res: RunResult{Wall: time.Second, MaxRSS: 12 << 20, PeakAnonShmem: 11 << 20}, answered: all}, nil},
		{"at the caps", mapRun{res: RunResult{Wall: wall, MaxRSS: 18 << 20, PeakAnonShmem: 17 << 20}, answered: all}, nil},
		{"timed out", mapRun{res: RunResult{TimedOut: true, Wall: wall, ExitCode: -1, MaxRSS: 12 << 20}, answered: 10}, []string{CodeTimeCap}},
		{"slow but finished", mapRun{res: RunResult{Wall: wall + time.Millisecond, MaxRSS: 12 << 20}, answered: all}, []string{CodeTimeCap}},
		{"over RSS", mapRun{res: RunResult{Wall: time.Second, MaxRSS: 18<<20 + 1}, answered: all}, []string{CodeMemoryCap}},
		{"over anon+shmem, RSS low", mapRun{res: RunResult{Wall: time.Second, MaxRSS: 11 << 20, PeakAnonShmem: 17<<20 + 1}, answered: all}, []string{CodeMemoryCap}},
		{"oom killed", mapRun{res: RunResult{OOM: true, ExitCode: -1, Signal: 9, Wall: time.Second}, answered: 5}, []string{CodeMemoryCap}},
		{"wrong answer", mapRun{res: RunResult{Wall: time.Second, MaxRSS: 12 << 20}, answered: 7, wrong: "load: put answered None"}, []string{CodeWorkloadWrong}},
		{"crash", mapRun{res: RunResult{ExitCode: 1, Wall: time.Second, MaxRSS: 12 << 20}, answered: 100}, []string{CodeWorkloadWrong}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run.wl = wl
			var got []string
			for _, r := range judgeMapRun(tc.run, base, margin, wall, nil) {
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

// TestMapWorkload: the workload is a function of the seed, its phases
// hold, and the answers of a model map pass while wrong ones do not.
func TestMapWorkload(t *testing.T) {
	a, b, c := newMapWorkload(7), newMapWorkload(7), newMapWorkload(8)
	if len(a.ops) != len(b.ops) || a.ops[100] != b.ops[100] || string(a.keys[5]) != string(b.keys[5]) {
		t.Fatal("seed 7 made two different workloads")
	}
	if string(a.keys[5]) == string(c.keys[5]) && a.ops[300] == c.ops[300] {
		t.Fatal("seeds 7 and 8 made the same workload")
	}
	if a.puts < 3000 || a.deletes < 300 || a.gets < 4000 || a.liveBytes < 10<<20 {
		t.Fatalf("workload too small: %d puts, %d deletes, %d gets, %d live bytes", a.puts, a.deletes, a.gets, a.liveBytes)
	}
	// A model map answering in Go: the answers a correct map gives.
	answers := func(w *mapWorkload, lie int) []byte {
		store := map[int32]int32{}
		var out []byte
		gets := 0
		for _, op := range w.ops {
			switch op.code {
			case reqPut:
				store[op.key] = op.version
			case reqDelete:
				delete(store, op.key)
			case reqGet:
				gets++
				v, ok := store[op.key]
				if gets == lie {
					ok = false
				}
				if !ok {
					out = append(out, 'n')
					continue
				}
				h := sha256.New()
				h.Write(challenge(op))
				h.Write(w.value(op.key, v))
				out = append(append(out, 'v'), h.Sum(nil)...)
				continue
			}
			out = append(out, 'k')
		}
		return out
	}
	run := mapRun{wl: a}
	run.compare(answers(a, -1))
	if run.wrong != "" || run.answered != len(a.ops) {
		t.Fatalf("a right map: wrong %q, %d of %d answered", run.wrong, run.answered, len(a.ops))
	}
	run = mapRun{wl: a}
	run.compare(answers(a, 2000))
	if run.wrong == "" {
		t.Fatal("a map that forgot one value passed")
	}
	run = mapRun{wl: a}
	run.compare(answers(c, -1)) // another seed's answers
	if run.wrong == "" {
		t.Fatal("another workload's answers passed")
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
