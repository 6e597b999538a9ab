package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

func TestBadUsage(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	env := map[string]string{"API_KEY": "k"}
	tests := []struct {
		name    string
		args    []string
		wantErr string // in the one line on stderr
	}{
		{"no command", nil, "usage: benchctl"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown global flag", []string{"--nope", "list"}, "flag provided but not defined: -nope"},
		{"run without task", []string{"run", "--agent", "builtin:null"}, "missing --task"},
		{"run without agent", []string{"run", "--task", "rt-01"}, "missing --agent"},
		{"run zero attempts", []string{"run", "--task", "rt-01", "--agent", "x", "--attempts", "0"}, "--attempts 0: want 1 to 100"},
		{"run too many attempts", []string{"run", "--task", "rt-01", "--agent", "x", "--attempts", "101"}, "--attempts 101"},
		{"run attempts not a number", []string{"run", "--task", "rt-01", "--agent", "x", "--attempts", "many"}, "invalid value \"many\""},
		{"run bad timeout", []string{"run", "--task", "rt-01", "--agent", "x", "--timeout", "soon"}, `--timeout "soon"`},
		{"run timeout too short", []string{"run", "--task", "rt-01", "--agent", "x", "--timeout", "500ms"}, "--timeout 500ms: want 1s to 6h0m0s"},
		{"run timeout too long", []string{"run", "--task", "rt-01", "--agent", "x", "--timeout", "7h"}, "--timeout 7h0m0s"},
		{"run env with value", []string{"run", "--task", "rt-01", "--agent", "x", "--env", "API_KEY=secret"}, "give only the NAME"},
		{"run env unset", []string{"run", "--task", "rt-01", "--agent", "x", "--env", "OTHER"}, "--env OTHER: not set"},
		{"run env bad name", []string{"run", "--task", "rt-01", "--agent", "x", "--env", "1X"}, `--env "1X": not a variable name`},
		{"run env twice", []string{"run", "--task", "rt-01", "--agent", "x", "--env", "API_KEY", "--env", "API_KEY"}, "given twice"},
		{"run bad gateway", []string{"run", "--task", "rt-01", "--agent", "x", "--gateway", "api.example:443"}, "or NAME=HOST:PORT"},
		{"run gateway bad port", []string{"run", "--task", "rt-01", "--agent", "x", "--gateway", "m=h:99999"}, "not 1 to 65535"},
		{"run extra argument", []string{"run", "--task", "rt-01", "--agent", "x", "extra"}, `unexpected argument "extra"`},
		{"show without attempt", []string{"show"}, "missing ATTEMPT"},
		{"show two attempts", []string{"show", "a-1", "a-2"}, `unexpected argument "a-2"`},
		{"show unknown flag", []string{"show", "--verbose", "a-1"}, "flag provided but not defined: -verbose"},
		{"cancel nothing", []string{"cancel"}, "missing ATTEMPT"},
		{"list zero limit", []string{"list", "--limit", "0"}, "--limit 0"},
		{"diff at zero", []string{"diff", "a-1", "--at", "0"}, "--at 0"},
		{"export without file", []string{"export", "a-1"}, "missing -o FILE"},
		{"export into a missing directory", []string{"export", "a-1", "-o", "/nonexistent-benchd/a.tar"}, "-o /nonexistent-benchd/a.tar: directory /nonexistent-benchd does not exist"},
		{"transcript both streams", []string{"transcript", "a-1", "--stdout", "--stderr"}, "exclude each other"},
		{"tasks without subcommand", []string{"tasks"}, "want \"tasks list\""},
		{"tasks unknown subcommand", []string{"tasks", "run"}, `unknown subcommand "run"`},
		{"tasks check two ids", []string{"tasks", "check", "rt-01", "rt-02"}, `unexpected argument "rt-02"`},
		{"verify without file", []string{"verify"}, "missing FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := d.requestCount()
			code, stdout, stderr := runCLI(t, d.Socket, env, false, tt.args...)
			if code != exitError {
				t.Errorf("got exit %d, want %d", code, exitError)
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("got stderr %q, want it to contain %q", stderr, tt.wantErr)
			}
			if tt.args != nil && strings.Count(stderr, "\n") != 1 {
				t.Errorf("got stderr %q, want one line", stderr)
			}
			if stdout != "" {
				t.Errorf("got stdout %q, want nothing", stdout)
			}
			if n := d.requestCount() - before; n != 0 {
				t.Errorf("got %d requests to benchd, want 0", n)
			}
		})
	}
}

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPos  []string
		wantJSON bool
		wantSock string
	}{
		{"flags first", []string{"--json", "a-1"}, []string{"a-1"}, true, ""},
		{"flags after", []string{"a-1", "--json"}, []string{"a-1"}, true, ""},
		{"socket per command", []string{"a-1", "--socket", "/tmp/s"}, []string{"a-1"}, false, "/tmp/s"},
		{"double dash", []string{"--json", "--", "--odd", "-x"}, []string{"--odd", "-x"}, true, ""},
		{"several positional", []string{"a", "--json", "b", "c"}, []string{"a", "b", "c"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &CLI{}
			f := c.newFlags("show")
			pos, _, ok := c.parse(f, tt.args)
			if !ok {
				t.Fatal("parse failed")
			}
			if !reflect.DeepEqual(pos, tt.wantPos) {
				t.Errorf("got positional %q, want %q", pos, tt.wantPos)
			}
			if f.json != tt.wantJSON {
				t.Errorf("got json %v, want %v", f.json, tt.wantJSON)
			}
			if c.socket != tt.wantSock {
				t.Errorf("got socket %q, want %q", c.socket, tt.wantSock)
			}
		})
	}
}

// TestErrorsJSON: given --json (before the command, after it, or after a
// bad flag), every kind of error is one JSON object on stdout with the
// message, the command and the exit status, which is the exit status
// too; nothing goes to stderr.
func TestErrorsJSON(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	tests := []struct {
		name    string
		args    []string
		command string
		code    int
		want    string // in the error
	}{
		{"unknown attempt", []string{"show", "a-404", "--json"}, "show", exitError, "no attempt a-404"},
		{"unknown attempt, global flag", []string{"--json", "log", "a-404"}, "log", exitError, "no attempt a-404"},
		{"unknown task", []string{"run", "--json", "--task", "rt-99", "--agent", "builtin:null"}, "run", exitError, `unknown task "rt-99"`},
		{"missing argument", []string{"--json", "show"}, "show", exitError, "missing ATTEMPT"},
		{"bad flag before --json", []string{"show", "--verbose", "a-1", "--json"}, "show", exitError, "flag provided but not defined: -verbose"},
		{"bad value", []string{"list", "--limit", "0", "--json"}, "list", exitError, "--limit 0"},
		{"unknown command", []string{"--json", "frobnicate"}, "", exitError, `unknown command "frobnicate"`},
		{"no command", []string{"--json"}, "", exitError, "no command given"},
		{"unknown subcommand", []string{"tasks", "run", "--json"}, "tasks", exitError, `unknown subcommand "run"`},
		{"unreadable archive", []string{"verify", "--json", filepath.Join(t.TempDir(), "none.tar")}, "verify", exitError, "none.tar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != tt.code || stderr != "" {
				t.Errorf("got exit %d, stderr %q; want %d and nothing on stderr", code, stderr, tt.code)
			}
			var e errorJSON
			dec := json.NewDecoder(strings.NewReader(stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil || dec.More() {
				t.Fatalf("stdout is not one error object (%v):\n%s", err, stdout)
			}
			if e.Command != tt.command || e.Code != code || !strings.Contains(e.Error, tt.want) || strings.Contains(e.Error, "\n") {
				t.Errorf("got %+v, want command %q, code %d, an error of one line with %q", e, tt.command, code, tt.want)
			}
		})
	}
	// cancel of several attempts, one refused: one object with the error
	// and the attempts canceled.
	d.mu.Lock()
	d.attempts["a-run"] = attemptWith(fx, "a-run", func(a *apitype.Attempt) { a.State, a.Finished = apitype.StateRunning, nil })
	d.mu.Unlock()
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "cancel", "a-1", "a-run", "--json")
	var ce struct {
		errorJSON
		Attempts []apitype.Attempt `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(stdout), &ce); err != nil || code != exitError || stderr != "" {
		t.Fatalf("cancel: got exit %d, %v, stderr %q:\n%s", code, err, stderr, stdout)
	}
	if ce.Code != exitError || ce.Command != "cancel" || !strings.Contains(ce.Error, "a-1: attempt a-1 has finished") ||
		len(ce.Attempts) != 1 || ce.Attempts[0].ID != "a-run" || ce.Attempts[0].State != apitype.StateCanceled {
		t.Errorf("cancel: got %+v, want the error of a-1 and a-run canceled", ce)
	}

	// --json=false is text again.
	code, stdout, stderr = runCLI(t, d.Socket, nil, false, "--json", "show", "a-404", "--json=false")
	if code != exitError || stdout != "" || stderr != "benchctl show: no attempt a-404\n" {
		t.Errorf("--json=false: got exit %d, stdout %q, stderr %q; want the error as text", code, stdout, stderr)
	}
}

func TestGlobalJSON(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	code, stdout, _ := runCLI(t, d.Socket, nil, false, "--json", "status")
	var st apitype.Status
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != exitOK || st.Version != "test" {
		t.Errorf("got exit %d, %q; want the status as JSON", code, stdout)
	}
}

func TestHelpExitsZero(t *testing.T) {
	tests := [][]string{{"help"}, {"--help"}, {"show", "--help"}, {"run", "-h"}, {"tasks", "--help"}}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", nil, false, args...)
			if code != exitOK || !strings.Contains(stdout, "usage: benchctl") || stderr != "" {
				t.Errorf("got exit %d, stdout %q, stderr %q; want 0 and usage on stdout", code, stdout, stderr)
			}
		})
	}
}

func TestDaemonNotRunning(t *testing.T) {
	sock := t.TempDir() + "/none.sock"
	code, _, stderr := runCLI(t, sock, nil, false, "show", "a-1")
	if code != exitError {
		t.Errorf("got exit %d, want %d", code, exitError)
	}
	if want := "benchctl show: benchd is not running at " + sock + "\n"; stderr != want {
		t.Errorf("got stderr %q, want %q", stderr, want)
	}
}

func TestAPIErrorIsOneLine(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown attempt", []string{"show", "a-404"}, "benchctl show: no attempt a-404\n"},
		{"unknown task", []string{"run", "--task", "rt-99", "--agent", "builtin:null"}, "benchctl run: unknown task \"rt-99\"\n"},
		{"cancel finished", []string{"cancel", "a-1"}, "benchctl cancel: a-1: attempt a-1 has finished\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != exitError || stderr != tt.want {
				t.Errorf("got exit %d, stderr %q; want %d, %q", code, stderr, exitError, tt.want)
			}
		})
	}
}

// attemptWith returns the fixture's attempt changed into another one.
func attemptWith(fx *fixture, id string, change func(*apitype.Attempt)) apitype.Attempt {
	a := fx.attempt
	a.ID, a.Run = id, "r-2"
	change(&a)
	return a
}

func TestRun(t *testing.T) {
	fx := newFixture(t)
	pass := func(id string) apitype.Attempt { return attemptWith(fx, id, func(*apitype.Attempt) {}) }
	fail := func(id string) apitype.Attempt {
		return attemptWith(fx, id, func(a *apitype.Attempt) {
			a.Pass, a.Reward, a.ExitCode = false, 0, 1
			a.Reasons = []apitype.Reason{{Code: "tests_failed", Message: "2 of 5 tests failed"}, {Code: "agent_exit", Message: "the agent exited with 1"}}
		})
	}
	infra := func(id string) apitype.Attempt {
		return attemptWith(fx, id, func(a *apitype.Attempt) {
			a.State, a.Pass, a.InfraError, a.Reasons = apitype.StateInfraError, false, "unable to mount: ENODEV", nil
		})
	}
	tests := []struct {
		name     string
		attempts []apitype.Attempt
		cut      bool // the event stream ends early: benchctl asks for the attempt
		args     []string
		wantCode int
		wantOut  []string
	}{
		{"all pass", []apitype.Attempt{pass("a-2"), pass("a-3")}, false, nil, exitOK,
			[]string{"ATTEMPT", "VERDICT", "a-2", "a-3", "pass", "2 of 2 attempts passed"}},
		{"one fails", []apitype.Attempt{pass("a-2"), fail("a-3")}, false, nil, exitNo,
			[]string{"FAIL", "tests_failed,agent_exit", "a-3: tests_failed: 2 of 5 tests failed", "1 of 2 attempts passed"}},
		{"infra error", []apitype.Attempt{fail("a-2"), infra("a-3")}, false, nil, exitError,
			[]string{"INFRA-ERROR", "a-3: infra error: unable to mount: ENODEV"}},
		{"left to review", []apitype.Attempt{pass("a-2"), attemptWith(fx, "a-3", func(a *apitype.Attempt) {
			a.Pass, a.Reward, a.Outcome = false, 0, apitype.OutcomeReview
			a.Reasons = []apitype.Reason{{Code: "needs_review", Message: "hedged"}}
		})}, false, nil, exitNo,
			[]string{"REVIEW", "1 of 2 attempts passed", "a-3: left to review, neither passed nor failed: benchctl review a-3 --pass|--fail --why TEXT"}},
		{"stream cut short", []apitype.Attempt{pass("a-2")}, true, nil, exitOK, []string{"1 of 1 attempts passed"}},
		{"detach", []apitype.Attempt{pass("a-2")}, false, []string{"--detach"}, exitOK, []string{"run r-2: 1 attempt(s) of rt-01 started", "a-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t, fx)
			d.runAttempts, d.cutEvents = tt.attempts, tt.cut
			args := append([]string{"run", "--task", "rt-01", "--agent", "builtin:reference", "--attempts", "2"}, tt.args...)
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, args...)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout, w) {
					t.Errorf("got stdout\n%s\nwant it to contain %q", stdout, w)
				}
			}
			if strings.Contains(stdout, "\x1b[") {
				t.Errorf("got terminal escapes in output that is not a terminal: %q", stdout)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	d.runAttempts = []apitype.Attempt{
		attemptWith(fx, "a-2", func(*apitype.Attempt) {}),
		attemptWith(fx, "a-3", func(a *apitype.Attempt) {
			a.Pass, a.TimedOut, a.ExitCode, a.Signal = false, true, -1, 9
			a.Reasons = []apitype.Reason{{Code: "timeout", Message: "killed at 600s"}}
		}),
	}
	env := map[string]string{"API_KEY": "s3cret-value"}
	code, stdout, stderr := runCLI(t, d.Socket, env, true, "run", "--task", "rt-01", "--agent", "codex exec",
		"--attempts", "2", "--env", "API_KEY", "--timeout", "90s", "--gateway", "openai=127.0.0.1:8080", "--model", "m1", "--json")
	if code != exitNo {
		t.Errorf("got exit %d, want %d (stderr %q)", code, exitNo, stderr)
	}
	if strings.Contains(stdout+stderr, "s3cret-value") {
		t.Errorf("the value of --env API_KEY was printed")
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	var atts []map[string]any
	if err := json.Unmarshal(out["attempts"], &atts); err != nil || len(atts) != 2 {
		t.Fatalf("got attempts %s, want an array of 2", out["attempts"])
	}
	for _, a := range atts {
		for _, k := range []string{"id", "task", "pass", "reasons", "exit_code", "timed_out", "wall_ms", "peak_memory_bytes"} {
			if _, ok := a[k]; !ok {
				t.Errorf("attempt %v has no key %q", a["id"], k)
			}
		}
		rs, ok := a["reasons"].([]any)
		if !ok {
			t.Errorf("attempt %v: got reasons %#v, want an array", a["id"], a["reasons"])
		}
		for _, r := range rs {
			m, _ := r.(map[string]any)
			if _, ok := m["code"].(string); !ok {
				t.Errorf("got reason %#v, want {code, message}", r)
			}
			if _, ok := m["message"].(string); !ok {
				t.Errorf("got reason %#v, want {code, message}", r)
			}
		}
	}
	if atts[1]["timed_out"] != true || atts[1]["pass"] != false || atts[0]["pass"] != true {
		t.Errorf("got attempts %v, want a-2 passed and a-3 timed out", atts)
	}
	if string(out["pass"]) != "false" {
		t.Errorf("got pass %s, want false", out["pass"])
	}
	// --detach: nothing ended yet, so no answer: pass is null.
	code, stdout, _ = runCLI(t, d.Socket, nil, true, "run", "--task", "rt-01", "--agent", "builtin:null", "--detach", "--json")
	out = nil
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != exitOK || string(out["pass"]) != "null" {
		t.Errorf("--detach --json: exit %d, got pass %s (%v), want 0 and null", code, out["pass"], err)
	}
	d.runBodies = d.runBodies[:1]
	var req apitype.RunRequest
	if len(d.runBodies) != 1 || json.Unmarshal([]byte(d.runBodies[0]), &req) != nil {
		t.Fatalf("got run requests %q, want one", d.runBodies)
	}
	want := apitype.RunRequest{Task: "rt-01", Agent: "codex exec", Attempts: 2, Timeout: "1m30s",
		Env: []apitype.EnvVar{{Name: "API_KEY", Value: "s3cret-value"}}, Gateways: []string{"openai=127.0.0.1:8080"}, Model: "m1"}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("got request %+v, want %+v", req, want)
	}
}

func TestRunInterrupted(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	d.holdEvents = true
	running := attemptWith(fx, "a-2", func(a *apitype.Attempt) { a.State, a.Phase, a.Pass = apitype.StateRunning, apitype.PhaseRun, false })
	d.runAttempts = []apitype.Attempt{running}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	code, _, stderr := runCLIContext(ctx, t, d.Socket, nil, false, "run", "--task", "rt-01", "--agent", "builtin:null")
	if code != exitError || stderr != "benchctl run: interrupted: canceled a-2\n" {
		t.Errorf("got exit %d, stderr %q; want %d and the attempts canceled", code, stderr, exitError)
	}
	d.mu.Lock()
	state := d.attempts["a-2"].State
	d.mu.Unlock()
	if state != apitype.StateCanceled {
		t.Errorf("got a-2 %s, want canceled", state)
	}
}

func TestRunLiveLines(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	d.runAttempts = []apitype.Attempt{attemptWith(fx, "a-2", func(*apitype.Attempt) {}), attemptWith(fx, "a-3", func(*apitype.Attempt) {})}
	code, stdout, _ := runCLI(t, d.Socket, nil, true, "run", "--task", "rt-01", "--agent", "builtin:null", "--attempts", "2")
	if code != exitOK {
		t.Errorf("got exit %d, want 0", code)
	}
	for _, w := range []string{"\r\x1b[2Ka-2", "\r\x1b[2Ka-3", "\x1b[2A", "ATTEMPT"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("got stdout %q, want it to contain %q", stdout, w)
		}
	}
}

func TestLiveLine(t *testing.T) {
	final := apitype.Attempt{ID: "a-1", State: apitype.StateDone, Pass: false, WallMS: 12300, PeakMemoryBytes: 3 << 20, Edits: 4, Denied: 2,
		Reasons: []apitype.Reason{{Code: "edit_violation"}}}
	tests := []struct {
		name  string
		ev    apitype.Event
		final *apitype.Attempt
		want  string
	}{
		{"queued", apitype.Event{State: apitype.StateQueued}, nil,
			"a-1            queued           0ms  mem         0 B  edits    0  denied   0"},
		{"running shows the phase", apitype.Event{State: apitype.StateRunning, Phase: apitype.PhaseRun, ElapsedMS: 1500, MemoryBytes: 45 << 20, Edits: 3, Denied: 1}, nil,
			"a-1            run             1.5s  mem    45.0 MiB  edits    3  denied   1"},
		{"finished shows the verdict", apitype.Event{}, &final,
			"a-1            FAIL           12.3s  peak    3.0 MiB  edits    4  denied   2  edit_violation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := liveLine("a-1", tt.ev, tt.final); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	bytesTests := []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {45 << 20, "45.0 MiB"}, {3 << 30, "3.0 GiB"}}
	for _, tt := range bytesTests {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d): got %q, want %q", tt.n, got, tt.want)
		}
	}
	msTests := []struct {
		ms   int64
		want string
	}{{0, "0ms"}, {850, "850ms"}, {12300, "12.3s"}, {245_000, "4m05s"}, {7_260_000, "2h01m"}}
	for _, tt := range msTests {
		if got := formatMS(tt.ms); got != tt.want {
			t.Errorf("formatMS(%d): got %q, want %q", tt.ms, got, tt.want)
		}
	}
}

func TestVerdictTable(t *testing.T) {
	var b strings.Builder
	verdictTable(&b, []apitype.Attempt{
		{ID: "a-1", Task: "rt-01", State: apitype.StateDone, Pass: true, WallMS: 2000, PeakMemoryBytes: 1 << 20, Edits: 2},
		{ID: "a-22", Task: "rt-01", State: apitype.StateDone, ExitCode: -1, Signal: 9, TimedOut: true, WallMS: 600000,
			Reasons: []apitype.Reason{{Code: "timeout"}, {Code: "tests_failed"}}},
		{ID: "a-3", Task: "rt-01", State: apitype.StateInfraError, InfraError: "no cgroup"},
	})
	want := "" +
		"ATTEMPT  TASK   VERDICT      EXIT      WALL    PEAK MEM  EDITS  DENIED  REASONS\n" +
		"a-1      rt-01  pass         0         2.0s    1.0 MiB   2      0       -\n" +
		"a-22     rt-01  FAIL         signal 9  10m00s  0 B       0      0       timeout,tests_failed\n" +
		"a-3      rt-01  INFRA-ERROR  none      none    0 B       0      0       infra: no cgroup\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestShow(t *testing.T) {
	fx := newFixture(t)
	fx.attempt.Host, fx.attempt.HostKeyID = "host-a", strings.Repeat("ab", 32)
	fx.attempt.ViewCPUMS, fx.attempt.GradeCPUMS = 1250, 3004
	d := newFakeDaemon(t, fx)
	code, stdout, _ := runCLI(t, d.Socket, nil, false, "show", "a-1")
	if code != exitOK {
		t.Fatalf("got exit %d, want 0", code)
	}
	for _, w := range []string{"verdict       pass (reward 1)", "exit status   0", "wall time     2.0s", "peak memory   48.0 MiB",
		"oom killed    no", "host          host-a (host key abababababab)", "tcp 93.184.216.34:443", "API_KEY (values not kept)", "  sha256      eeee", "  version     agent 1.2",
		"modified src/counter.py", "added src/new.py", "2 connection attempts",
		"tcp 169.254.169.254:80 at ", "(refused: the host's neighbourhood)", "limits        10m00s wall, 1.0 GiB memory, 1.5 CPUs",
		"benchd cpu    view 1.250s, grading 3.004s"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("got\n%s\nwant it to contain %q", stdout, w)
		}
	}
	code, stdout, _ = runCLI(t, d.Socket, nil, false, "show", "--json", "a-1")
	var a apitype.Attempt
	if err := json.Unmarshal([]byte(stdout), &a); err != nil || code != exitOK {
		t.Fatalf("got exit %d, %v: want an Attempt", code, err)
	}
	if a.JournalHead != fx.attempt.JournalHead || len(a.Changeset) != 2 || a.ViewCPUMS != 1250 || a.GradeCPUMS != 3004 {
		t.Errorf("got %+v, want the fixture's attempt", a)
	}
}

// TestShowExit: show answers with the attempt's verdict, as run does: 0
// a pass, 1 a fail, a verdict left to review or a canceled attempt, 2 an
// infra error or an attempt not ended yet; with --json too.
func TestShowExit(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	tests := []struct {
		id     string
		change func(*apitype.Attempt)
		want   int
	}{
		{"a-pass", func(*apitype.Attempt) {}, exitOK},
		{"a-fail", func(a *apitype.Attempt) {
			a.Pass, a.Reward, a.Reasons = false, 0, []apitype.Reason{{Code: "tests_failed", Message: "1 test failed"}}
		}, exitNo},
		{"a-review", func(a *apitype.Attempt) {
			a.Pass, a.Outcome, a.Reasons = false, apitype.OutcomeReview, []apitype.Reason{{Code: "needs_review", Message: "hedged"}}
		}, exitNo},
		{"a-reviewed-pass", func(a *apitype.Attempt) {
			a.Pass, a.Outcome = true, apitype.OutcomePass
			a.Review = &apitype.Review{Outcome: apitype.OutcomePass, Why: "fine", UID: 1000}
		}, exitOK},
		{"a-canceled", func(a *apitype.Attempt) { a.State, a.Pass = apitype.StateCanceled, false }, exitNo},
		{"a-infra", func(a *apitype.Attempt) {
			a.State, a.Pass, a.InfraError = apitype.StateInfraError, false, "unable to mount: ENODEV"
		}, exitError},
		{"a-running", func(a *apitype.Attempt) { a.State, a.Pass, a.Finished = apitype.StateRunning, false, nil }, exitError},
		{"a-queued", func(a *apitype.Attempt) {
			a.State, a.Pass, a.Started, a.Finished = apitype.StateQueued, false, nil, nil
		}, exitError},
	}
	d.mu.Lock()
	for _, tt := range tests {
		d.attempts[tt.id] = attemptWith(fx, tt.id, tt.change)
	}
	d.mu.Unlock()
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			for _, args := range [][]string{{"show", tt.id}, {"show", "--json", tt.id}} {
				code, stdout, stderr := runCLI(t, d.Socket, nil, false, args...)
				if code != tt.want {
					t.Errorf("%q: got exit %d, want %d (stderr %q)", args, code, tt.want, stderr)
				}
				if !strings.Contains(stdout, tt.id) || stderr != "" {
					t.Errorf("%q: got stdout %q, stderr %q; want the attempt shown and no error", args, stdout, stderr)
				}
			}
		})
	}
}

func TestCommandsJSON(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	tests := []struct {
		args     []string
		wantCode int
		wantKeys []string
	}{
		{[]string{"list"}, exitOK, []string{"attempts"}},
		{[]string{"transcript", "a-1"}, exitOK, []string{"stdout", "stderr", "stdout_truncated", "stderr_truncated"}},
		{[]string{"regrade", "a-1"}, exitOK, []string{"attempt", "same", "before", "after"}},
		{[]string{"tasks", "list"}, exitOK, []string{"tasks"}},
		{[]string{"status"}, exitOK, []string{"version", "queued", "running"}},
		{[]string{"log", "a-1"}, exitOK, []string{"attempt", "head", "verified", "records"}},
		{[]string{"diff", "a-1"}, exitOK, []string{"attempt", "at", "changeset", "diffs"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, append(tt.args, "--json")...)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(stdout), &m); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			for _, k := range tt.wantKeys {
				if _, ok := m[k]; !ok {
					t.Errorf("got keys of %s, want %q", stdout, k)
				}
			}
		})
	}
}

func TestTasksCheckText(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	code, stdout, _ := runCLI(t, d.Socket, nil, false, "tasks", "check")
	if code != exitNo {
		t.Errorf("got exit %d, want %d", code, exitNo)
	}
	for _, w := range []string{"builtin:attempt:off-by-one", "fail(tests_failed)", "MISMATCH", "1 of 2 verdicts differ"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("got\n%s\nwant it to contain %q", stdout, w)
		}
	}
}

// TestHelpNamesEveryFlag: every command's --help (each subcommand's too)
// exits 0 and names in its usage line each flag its set defines, and
// shows examples; run's names the presets and the https:// gateway.
func TestHelpNamesEveryFlag(t *testing.T) {
	flagRow := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	var argss [][]string
	for _, cmd := range commands {
		argss = append(argss, []string{cmd.name, "--help"})
	}
	argss = append(argss, []string{"tasks", "check", "--help"}, []string{"library", "index", "--help"}, []string{"library", "show", "--help"})
	for _, args := range argss {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, filepath.Join(t.TempDir(), "none.sock"), nil, false, args...)
			if code != exitOK {
				t.Fatalf("got exit %d, stderr %q; want 0", code, stderr)
			}
			usage, _, _ := strings.Cut(stdout, "\n")
			rows := flagRow.FindAllStringSubmatch(stdout, -1)
			if !strings.HasPrefix(usage, "usage: benchctl "+args[0]) || len(rows) == 0 {
				t.Fatalf("got\n%s\nwant a usage line and a flag list", stdout)
			}
			for _, r := range rows {
				if !strings.Contains(usage, "--"+r[1]) && !strings.Contains(usage, "-"+r[1]+" ") {
					t.Errorf("flag -%s is listed but not in the usage line %q", r[1], usage)
				}
			}
			if !strings.Contains(stdout, "\nexamples:\n  ") {
				t.Errorf("got\n%s\nwant examples", stdout)
			}
		})
	}
	_, stdout, _ := runCLI(t, "", nil, false, "run", "--help")
	for _, want := range []string{"codex", "claude", "qwen", "NAME=https://HOST", "--gateway model=https://api.openai.com"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run --help does not say %q", want)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, "", nil, false, "--version")
	if code != exitOK || !regexp.MustCompile(`^benchctl \S.* go1\.\d+`).MatchString(stdout) {
		t.Errorf("got exit %d, %q; want 0 and \"benchctl VERSION goVERSION\"", code, stdout)
	}
	version = "v9.9.9-test"
	defer func() { version = "" }()
	if _, stdout, _ := runCLI(t, "", nil, false, "--version"); !strings.HasPrefix(stdout, "benchctl v9.9.9-test ") {
		t.Errorf("with version set: got %q", stdout)
	}
}
