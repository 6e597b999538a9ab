package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

func TestParseTaskList(t *testing.T) {
	drawn, err := os.ReadFile("../../draw/testdata/draw-20261004.list")
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(drawn), "\ntasks\n")
	tests := []struct {
		name    string
		list    string
		want    []string // the first ids, when it parses
		wantN   int      // how many ids
		wantErr string
	}{
		{"drawn list", string(drawn), []string{"mail-summarize-inbox-1", "trip-book-hotel-5", "cal-focus-block-1"}, 0, ""},
		{"plain", "rt-01\nrt-02\n", []string{"rt-01", "rt-02"}, 2, ""},
		{"comments, blanks, spaces, CRLF", "# the gate\n\n  rt-03  \r\nrt-01\r\n# end\n", []string{"rt-03", "rt-01"}, 2, ""},
		{"no final newline", "rt-04", []string{"rt-04"}, 1, ""},
		{"two words on a line", "rt-01\nrt-02 rt-03\n", nil, 0, `line 2: "rt-02 rt-03" is not one task id`},
		{"a drawn list's task line in a plain file", "1 rt-01 world group first\n", nil, 0, "line 1: \"1 rt-01 world group first\" is not one task id (want one task id a line, or a list benchctl draw wrote, whose first line is \"benchd draw list 1\")"},
		{"not an id", "rt-01\nrt_02!\n", nil, 0, `line 2: "rt_02!" is not a task id`},
		{"twice", "rt-01\nrt-02\nRT-01\n", nil, 0, "line 3: task RT-01 again (first on line 1)"},
		{"empty", "\n# nothing\n", nil, 0, "no task ids in it"},
		{"drawn list without tasks", head + "\n", nil, 0, "a drawn list (its first line is \"benchd draw list 1\") without a tasks section"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTaskList([]byte(tt.list))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want an error saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if len(got) < len(tt.want) || !slices.Equal(got[:len(tt.want)], tt.want) {
				t.Errorf("got %v, want it to start %v", got, tt.want)
			}
			if tt.wantN > 0 && len(got) != tt.wantN {
				t.Errorf("got %d ids, want %d", len(got), tt.wantN)
			}
		})
	}
	// The drawn list's every task line, in order.
	got, _ := parseTaskList(drawn)
	if want := strings.Count(string(drawn), "\n") - strings.Count(head, "\n"); len(got) == 0 || len(got) >= want {
		t.Errorf("got %d ids of the drawn list, want as many as its task lines", len(got))
	}
}

func TestRunTaskFlags(t *testing.T) {
	tests := []struct {
		name    string
		rf      runFlags
		want    []string
		wantErr string
	}{
		{"tasks", runFlags{tasks: "rt-01,RT-02, rt-03"}, []string{"rt-01", "RT-02", "rt-03"}, ""},
		{"one of tasks", runFlags{tasks: "rt-02"}, []string{"rt-02"}, ""},
		{"task repeated", runFlags{task: stringList{"rt-01", "rt-02"}}, []string{"rt-01", "rt-02"}, ""},
		{"task repeated with the same id", runFlags{task: stringList{"rt-01", "RT-01"}}, nil, "--task, given 2 times: --tasks: task RT-01 given twice"},
		{"task and tasks", runFlags{task: stringList{"rt-01"}, tasks: "rt-02"}, nil, "give one of --task, --tasks and --list"},
		{"tasks and list", runFlags{tasks: "rt-02", list: "x"}, nil, "give one of --task, --tasks and --list"},
		{"an empty id", runFlags{tasks: "rt-01,,rt-02"}, nil, `an empty task id`},
		{"twice", runFlags{tasks: "rt-01,rt-01"}, nil, "task rt-01 given twice"},
		{"a bad id", runFlags{tasks: "rt-01,../x"}, nil, `"../x" is not a task id`},
		{"one task", runFlags{task: stringList{"rt-03"}}, nil, ""},
		{"none", runFlags{}, nil, "missing --task ID (or --tasks ID,ID... or --list LIST)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rf.agent, tt.rf.attempts = apitype.AgentNull, 2
			req, err := tt.rf.request(func(string) (string, bool) { return "", false })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.rf.task) == 1 && (req.Task != tt.rf.task[0] || req.Tasks != nil) {
				t.Errorf("one --task: got task %q, tasks %v; want task %q alone", req.Task, req.Tasks, tt.rf.task[0])
			}
			if len(tt.rf.task) != 1 && !slices.Equal(req.Tasks, tt.want) || req.Attempts != 2 {
				t.Errorf("got tasks %v, %d attempts; want %v, 2", req.Tasks, req.Attempts, tt.want)
			}
		})
	}
}

// progressAt is a fixed moment of the progress tests.
var progressAt = time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)

// slot makes an attempt of a run's status: ended ones took took.
func slot(id, task, state string, pass bool, host string, took time.Duration) apitype.Attempt {
	a := apitype.Attempt{ID: id, Task: task, State: state, Pass: pass, Host: host, Reasons: []apitype.Reason{}}
	if state != apitype.StateQueued {
		s := progressAt
		a.Started = &s
	}
	if finished(a) {
		f := progressAt.Add(took)
		a.Finished = &f
		a.WallMS = took.Milliseconds()
	}
	if state == apitype.StateDone && !pass {
		a.Reasons = []apitype.Reason{{Code: "tests_failed"}}
	}
	return a
}

func TestViewCounts(t *testing.T) {
	slots := []apitype.Attempt{
		slot("a-1", "rt-01", apitype.StateDone, true, "h1", 10*time.Second),
		slot("a-2", "rt-01", apitype.StateDone, false, "h2", 20*time.Second),
		slot("a-3", "rt-02", apitype.StateInfraError, false, "h1", 0),
		slot("a-4", "rt-02", apitype.StateRunning, false, "h2", 0),
		slot("a-5", "rt-03", apitype.StateQueued, false, "", 0),
		slot("a-6", "rt-03", apitype.StateCanceled, false, "", 0),
	}
	slots[2].Started = nil // an infra error before it started: not in the mean
	v := viewOf("r-1", slots, 2)
	want := runCounts{Attempts: 6, Done: 4, Passed: 1, Failed: 1, Infra: 1, Canceled: 1, Running: 1, Queued: 1}
	if v.Total != want {
		t.Errorf("got counts %+v, want %+v", v.Total, want)
	}
	var hosts []string
	for _, h := range v.Hosts {
		hosts = append(hosts, h.Host)
	}
	if !slices.Equal(hosts, []string{"", "h1", "h2"}) {
		t.Errorf("got hosts %q, want \"\", h1, h2", hosts)
	}
	if h := v.Hosts[1]; h.Passed != 1 || h.Infra != 1 || h.Attempts != 2 {
		t.Errorf("got h1 %+v, want 1 passed and 1 infra error of 2", h)
	}
	// The mean of a-1 and a-2, 15 s (a-3 did not start, a-6 was
	// canceled); 2 attempts left, 2 at once: 15 s.
	if v.ETAMS != 15_000 {
		t.Errorf("got eta %d ms, want 15000", v.ETAMS)
	}
	lines := v.tableLines()
	wantLines := []string{
		"HOST  DONE  PASSED  FAILED  REVIEW  INFRA  CANCELED  RUNNING  QUEUED",
		"-     1/2   0       0       0       0      1         0        1",
		"h1    2/2   1       0       0       1      0         0        0",
		"h2    1/2   0       1       0       0      0         1        0",
		"all   4/6   1       1       0       1      1         1        1",
		"run r-1: eta 15.0s",
	}
	if strings.Join(lines, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("got table\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}
	if got, want := v.plainLine(), "run r-1: 4 of 6 done, 1 passed, 1 failed, 1 infra errors, 1 canceled, 1 running, 1 queued; h2 running 1; eta 15.0s"; got != want {
		t.Errorf("got plain line\n%q\nwant\n%q", got, want)
	}
	// Without hosts: the run's row alone.
	for i := range slots {
		slots[i].Host = ""
	}
	if lines := viewOf("r-1", slots, 2).tableLines(); len(lines) != 3 || !strings.HasPrefix(lines[1], "all ") {
		t.Errorf("got table without hosts\n%s\nwant the header, the run's row and the estimate", strings.Join(lines, "\n"))
	}
}

func TestETA(t *testing.T) {
	done := func(took time.Duration) apitype.Attempt { return slot("a", "t", apitype.StateDone, true, "", took) }
	queued := slot("q", "t", apitype.StateQueued, false, "", 0)
	running := slot("r", "t", apitype.StateRunning, false, "", 0)
	tests := []struct {
		name        string
		slots       []apitype.Attempt
		concurrency int
		want        int64
	}{
		{"nothing ended yet", []apitype.Attempt{running, queued}, 2, -1},
		{"all ended", []apitype.Attempt{done(time.Second)}, 2, 0},
		{"one at a time", []apitype.Attempt{done(4 * time.Second), queued, queued, queued}, 1, 12_000},
		{"three at once", []apitype.Attempt{done(4 * time.Second), queued, queued, queued}, 3, 4_000},
		{"more at once than are left", []apitype.Attempt{done(4 * time.Second), queued}, 8, 4_000},
		{"concurrency unknown: the running count", []apitype.Attempt{done(6 * time.Second), running, running, queued, queued}, 0, 12_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eta(tt.slots, tt.concurrency); got != tt.want {
				t.Errorf("got %d ms, want %d", got, tt.want)
			}
		})
	}
}

// TestProgressPlain: off a terminal, one line as each attempt ends (once
// each, however many statuses show it ended), a periodic line every
// --every, the last line at the end; never a terminal escape.
func TestProgressPlain(t *testing.T) {
	run := apitype.Run{ID: "r-1", Tasks: []string{"rt-01", "rt-02"}, Agent: "builtin:null", Attempts: []string{"a-1", "a-2"}}
	var b bytes.Buffer
	p := newProgressWriter(&b, formPlain, run, 5*time.Second)
	now := progressAt
	p.now = func() time.Time { return now }
	p.start()
	st := apitype.RunStatus{Run: run, Concurrency: 1, Attempts: []apitype.Attempt{
		slot("a-1", "rt-01", apitype.StateRunning, false, "", 0), slot("a-2", "rt-02", apitype.StateQueued, false, "", 0)}}
	p.update(st) // nothing ended, no time passed: no line
	st.Attempts[0] = slot("a-1", "rt-01", apitype.StateDone, false, "h1", 3*time.Second)
	st.Attempts[1] = slot("a-2", "rt-02", apitype.StateRunning, false, "", 0)
	p.update(st)
	p.update(st) // a-1's end again: no second line
	now = now.Add(4 * time.Second)
	p.update(st) // not yet 5 s: no periodic line
	now = now.Add(time.Second)
	p.update(st) // the periodic line
	st.Attempts[1] = slot("a-2", "rt-02", apitype.StateDone, true, "", 1500*time.Millisecond)
	st.Attempts[1].WallMS = 600 // the agent's part of the attempt's 1.5 s
	st.Ended = true
	p.update(st)
	p.end(st, false)
	want := strings.Join([]string{
		"run r-1: 2 attempts of 2 tasks by builtin:null",
		"a-1 rt-01: FAIL, attempt 3.0s, agent wall 3.0s on h1 (tests_failed) [1 of 2 done]",
		"run r-1: 1 of 2 done, 1 failed, 1 running; eta 3.0s",
		"a-2 rt-02: pass, attempt 1.5s, agent wall 600ms [2 of 2 done]",
		"run r-1: 2 of 2 done, 1 passed, 1 failed",
	}, "\n") + "\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestProgressPlainTogether: attempts that end between two statuses are
// counted one by one, and a status that ends the run when a periodic
// line is due prints no line before end's (the run's last line once).
func TestProgressPlainTogether(t *testing.T) {
	run := apitype.Run{ID: "r-1", Tasks: []string{"rt-01"}, Agent: "builtin:null", Attempts: []string{"a-1", "a-2", "a-3"}}
	var b bytes.Buffer
	p := newProgressWriter(&b, formPlain, run, 5*time.Second)
	now := progressAt
	p.now = func() time.Time { return now }
	p.start()
	st := apitype.RunStatus{Run: run, Concurrency: 2, Attempts: []apitype.Attempt{
		slot("a-1", "rt-01", apitype.StateDone, true, "", time.Second), slot("a-2", "rt-01", apitype.StateDone, true, "", time.Second),
		slot("a-3", "rt-01", apitype.StateRunning, false, "", 0)}}
	p.update(st)
	now = now.Add(10 * time.Second)
	st.Attempts[2] = slot("a-3", "rt-01", apitype.StateDone, true, "", time.Second)
	st.Ended = true
	p.update(st)
	p.end(st, true)
	want := strings.Join([]string{
		"run r-1: 3 attempts of 1 task by builtin:null",
		"a-1 rt-01: pass, attempt 1.0s, agent wall 1.0s [1 of 3 done]",
		"a-2 rt-01: pass, attempt 1.0s, agent wall 1.0s [2 of 3 done]",
		"a-3 rt-01: pass, attempt 1.0s, agent wall 1.0s [3 of 3 done]",
		"run r-1: 3 of 3 done, 3 passed",
	}, "\n") + "\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestProgressJSON: with --json, one JSON object a line: start, an
// attempt line per end, the end with the result.
func TestProgressJSON(t *testing.T) {
	run := apitype.Run{ID: "r-1", Tasks: []string{"rt-01"}, Agent: "builtin:null", Attempts: []string{"a-1"}}
	var b bytes.Buffer
	p := newProgressWriter(&b, formJSON, run, defaultEvery)
	p.now = func() time.Time { return progressAt }
	p.start()
	st := apitype.RunStatus{Run: run, Ended: true, Attempts: []apitype.Attempt{slot("a-1", "rt-01", apitype.StateDone, true, "", time.Second)}}
	p.update(st)
	p.end(st, true)
	var types []string
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		var ev progressEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		types = append(types, ev.Type)
		if ev.Run != "r-1" {
			t.Errorf("line %q: got run %q, want r-1", line, ev.Run)
		}
		switch ev.Type {
		case "attempt":
			if ev.Attempt == nil || ev.Attempt.ID != "a-1" || ev.View == nil || ev.View.Total.Passed != 1 {
				t.Errorf("got attempt line %q, want a-1 passed", line)
			}
		case "end":
			if ev.Pass == nil || !*ev.Pass || len(ev.Attempts) != 1 {
				t.Errorf("got end line %q, want passed with 1 attempt", line)
			}
		}
	}
	if !slices.Equal(types, []string{"start", "attempt", "end"}) {
		t.Errorf("got lines %v, want start, attempt, end", types)
	}
}

// TestProgressTableRedraw: on a terminal the table is drawn over itself.
func TestProgressTableRedraw(t *testing.T) {
	run := apitype.Run{ID: "r-1", Tasks: []string{"rt-01"}, Attempts: []string{"a-1"}}
	var b bytes.Buffer
	p := newProgressWriter(&b, formTable, run, defaultEvery)
	st := apitype.RunStatus{Run: run, Attempts: []apitype.Attempt{slot("a-1", "rt-01", apitype.StateRunning, false, "", 0)}}
	p.update(st)
	first := b.Len()
	p.update(st)
	out := b.String()
	if strings.Contains(out[:first], "\x1b[3A") || !strings.Contains(out[first:], "\x1b[3A") {
		t.Errorf("got %q, want the second drawing to move up over the 3 lines of the first", out)
	}
	if !strings.Contains(out, "\r\x1b[2Kall   0/1") {
		t.Errorf("got %q, want the run's row", out)
	}
}

// TestRunBatch: run --tasks and --list send the tasks as one request and
// follow the run: plain lines off a terminal, the table on one, the
// verdicts and an exit status by them at the end.
func TestRunBatch(t *testing.T) {
	fx := newFixture(t)
	pass := attemptWith(fx, "a-2", func(a *apitype.Attempt) { a.Task = "rt-01" })
	fail := attemptWith(fx, "a-3", func(a *apitype.Attempt) {
		a.Task, a.Pass, a.Reward = "rt-02", false, 0
		a.Reasons = []apitype.Reason{{Code: "tests_failed", Message: "1 of 5 tests failed"}}
	})
	list := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(list, []byte("rt-01\nrt-02\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		terminal bool
		wantOut  []string
		noOut    string
	}{
		{"tasks", []string{"--tasks", "rt-01,rt-02"}, false,
			[]string{"run r-2: 2 attempts of 2 tasks by builtin:null\n", "a-2 rt-01: pass", "a-3 rt-02: FAIL", "(tests_failed) [2 of 2 done]",
				"run r-2: 2 of 2 done, 1 passed, 1 failed\n", "ATTEMPT", "1 of 2 attempts passed (run r-2)", "a-3: tests_failed: 1 of 5 tests failed"}, "\x1b["},
		{"list", []string{"--list", list}, false, []string{"2 of 2 done, 1 passed, 1 failed"}, "\x1b["},
		{"on a terminal", []string{"--tasks", "rt-01,rt-02"}, true,
			[]string{"\r\x1b[2KHOST  DONE", "\r\x1b[2Kall   2/2   1       1", "run r-2: done", "1 of 2 attempts passed"}, "[2 of 2 done]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t, fx)
			d.runAttempts = []apitype.Attempt{pass, fail}
			args := append([]string{"run", "--agent", "builtin:null"}, tt.args...)
			code, stdout, stderr := runCLI(t, d.Socket, nil, tt.terminal, args...)
			if code != exitNo {
				t.Errorf("got exit %d, want %d: a fail (stderr %q)", code, exitNo, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout, w) {
					t.Errorf("got stdout\n%s\nwant it to contain %q", stdout, w)
				}
			}
			if strings.Contains(stdout, tt.noOut) {
				t.Errorf("got stdout\n%q\nwant no %q", stdout, tt.noOut)
			}
			var req apitype.RunRequest
			if len(d.runBodies) != 1 || json.Unmarshal([]byte(d.runBodies[0]), &req) != nil {
				t.Fatalf("got run requests %q, want one", d.runBodies)
			}
			if !slices.Equal(req.Tasks, []string{"rt-01", "rt-02"}) || req.Task != "" {
				t.Errorf("got request tasks %v and task %q, want rt-01, rt-02 and none", req.Tasks, req.Task)
			}
		})
	}
}

func TestRunBatchErrors(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("rt-01\nrt-02 extra\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a bad list", []string{"run", "--list", bad, "--agent", "x"}, "benchctl run: --list " + bad + `: line 2: "rt-02 extra" is not one task id`},
		{"no list", []string{"run", "--list", bad + ".none", "--agent", "x"}, "no such file"},
		{"an unknown task", []string{"run", "--tasks", "rt-01,rt-98", "--agent", "x"}, `benchctl run: unknown task "rt-98"`},
		{"wait of an attempt", []string{"wait", "a-1"}, `benchctl wait: "a-1" is not a run id (r-...)`},
		{"wait of no run", []string{"wait", "r-404"}, "benchctl wait: no run r-404"},
		{"wait without a run", []string{"wait"}, "benchctl wait: missing RUN"},
		{"every zero", []string{"run", "--tasks", "rt-01", "--agent", "x", "--every", "0s"}, "benchctl run: --every 0s: want a positive duration"},
		{"wait every negative", []string{"wait", "r-2", "--every", "-1s"}, "benchctl wait: --every -1s: want a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != exitError || !strings.Contains(stderr, tt.want) {
				t.Errorf("got exit %d, stderr %q; want %d and %q", code, stderr, exitError, tt.want)
			}
		})
	}
	if len(d.runBodies) != 0 {
		t.Errorf("got run requests %q, want none", d.runBodies)
	}
}

// TestRunBatchInterrupted: a run of several tasks interrupted is
// canceled whole; wait interrupted leaves the run going.
func TestRunBatchInterrupted(t *testing.T) {
	fx := newFixture(t)
	running := func(id string) apitype.Attempt {
		return attemptWith(fx, id, func(a *apitype.Attempt) { a.State, a.Phase, a.Pass = apitype.StateRunning, apitype.PhaseRun, false })
	}
	for _, tt := range []struct {
		name      string
		args      []string
		wantErr   string
		wantState string
	}{
		{"run", []string{"run", "--tasks", "rt-01,rt-02", "--agent", "builtin:null"}, "benchctl run: interrupted: canceled 2 attempts of run r-2\n", apitype.StateCanceled},
		{"wait", []string{"wait", "r-2"}, "benchctl wait: interrupted; run r-2 goes on (benchctl wait r-2)\n", apitype.StateRunning},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t, fx)
			d.runAttempts = []apitype.Attempt{running("a-2"), running("a-3")}
			if tt.name == "wait" {
				if code, _, stderr := runCLI(t, d.Socket, nil, false, "run", "--tasks", "rt-01,rt-02", "--agent", "builtin:null", "--detach"); code != exitOK {
					t.Fatalf("run --detach: exit %d, %s", code, stderr)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			code, _, stderr := runCLIContext(ctx, t, d.Socket, nil, false, tt.args...)
			if code != exitError || stderr != tt.wantErr {
				t.Errorf("got exit %d, stderr %q; want %d, %q", code, stderr, exitError, tt.wantErr)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			for _, id := range []string{"a-2", "a-3"} {
				if got := d.attempts[id].State; got != tt.wantState {
					t.Errorf("got %s %s, want %s", id, got, tt.wantState)
				}
			}
		})
	}
}

// TestCancelRun: cancel of a run id cancels the run's attempts, and
// cancel of an attempt id still cancels that attempt alone.
func TestCancelRun(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	running := func(id string) apitype.Attempt {
		return attemptWith(fx, id, func(a *apitype.Attempt) { a.State, a.Pass = apitype.StateRunning, false })
	}
	d.runAttempts = []apitype.Attempt{running("a-2"), running("a-3"), running("a-4")}
	if code, _, stderr := runCLI(t, d.Socket, nil, false, "run", "--tasks", "rt-01,rt-02,rt-03", "--agent", "x", "--detach"); code != exitOK {
		t.Fatalf("run --detach: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "cancel", "a-4")
	if code != exitOK || stdout != "a-4: canceled\n" {
		t.Errorf("cancel a-4: got exit %d, %q %q; want a-4 canceled", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, d.Socket, nil, false, "cancel", "r-2")
	if code != exitOK || stdout != "a-2: canceled\na-3: canceled\n" {
		t.Errorf("cancel r-2: got exit %d, %q %q; want a-2 and a-3 canceled", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, d.Socket, nil, false, "cancel", "r-2")
	if code != exitError || !strings.Contains(stderr, "r-2: run r-2 has no queued or running attempt") {
		t.Errorf("cancel r-2 again: got exit %d, %q; want the conflict", code, stderr)
	}
}
