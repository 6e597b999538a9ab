package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/draw"
)

// suiteDaemon serves the six suite tasks. Each run's attempts get the
// next outcomes of their task's script ("pass", "fail", "infra"; "pass"
// when the script is used up), and are stored newest first.
type suiteDaemon struct {
	Socket string

	mu       sync.Mutex
	script   map[string][]string
	attempts []apitype.Attempt // newest first
	runs     []apitype.RunRequest
	n        int
	clock    time.Time
	queries  []url.Values           // of GET /v1/attempts, in order
	prunes   []apitype.PruneRequest // of POST /v1/prune, in order
}

func newSuiteDaemon(t *testing.T, script map[string][]string) *suiteDaemon {
	t.Helper()
	d := &suiteDaemon{Socket: filepath.Join(t.TempDir(), "s.sock"), script: script,
		clock: time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)}
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.RunRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(w, 400, apitype.Error{Code: apitype.CodeInvalid, Message: "bad json"})
			return
		}
		if !slices.Contains(draw.SuiteTasks, req.Task) {
			reply(w, 400, apitype.Error{Code: apitype.CodeInvalid, Message: "unknown task"})
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.runs = append(d.runs, req)
		run := apitype.Run{ID: fmt.Sprintf("r-%d", len(d.runs)), Task: req.Task, Agent: req.Agent}
		for range max(req.Attempts, 1) {
			out := "pass"
			if s := d.script[req.Task]; len(s) > 0 {
				out, d.script[req.Task] = s[0], s[1:]
			}
			a := d.newAttempt(req.Task, req.Agent, req.Model, out)
			a.Run, a.Purpose = run.ID, req.Purpose
			d.attempts = append([]apitype.Attempt{a}, d.attempts...)
			run.Attempts = append(run.Attempts, a.ID)
		}
		reply(w, 201, run)
	})
	find := func(id string) (apitype.Attempt, bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, a := range d.attempts {
			if a.ID == id {
				return a, true
			}
		}
		return apitype.Attempt{}, false
	}
	mux.HandleFunc("GET /v1/attempts/{id}", func(w http.ResponseWriter, r *http.Request) {
		if a, ok := find(r.PathValue("id")); ok {
			reply(w, 200, a)
			return
		}
		reply(w, 404, apitype.Error{Code: apitype.CodeNotFound, Message: "no attempt"})
	})
	mux.HandleFunc("GET /v1/attempts/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		a, ok := find(r.PathValue("id"))
		if !ok {
			reply(w, 404, apitype.Error{Code: apitype.CodeNotFound, Message: "no attempt"})
			return
		}
		enc := json.NewEncoder(w)
		enc.Encode(apitype.Event{Attempt: a.ID, State: apitype.StateRunning, Phase: apitype.PhaseRun, ElapsedMS: 100})
		enc.Encode(apitype.Event{Attempt: a.ID, State: a.State, Done: true, Final: &a})
	})
	mux.HandleFunc("GET /v1/attempts", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		q := r.URL.Query()
		d.queries = append(d.queries, q)
		list := apitype.AttemptList{Attempts: []apitype.Attempt{}}
		for _, a := range d.attempts {
			purpose := a.Purpose
			if purpose == "" {
				purpose = apitype.PurposeRun
			}
			if task := q.Get("task"); task != "" && task != a.Task {
				continue
			}
			if ps := q["purpose"]; len(ps) > 0 && !slices.Contains(ps, purpose) {
				continue
			}
			list.Attempts = append(list.Attempts, a)
		}
		list.Total = len(list.Attempts)
		if n, err := strconv.Atoi(q.Get("limit")); err == nil && n < len(list.Attempts) {
			list.Attempts = list.Attempts[:n]
		}
		reply(w, 200, list)
	})
	mux.HandleFunc("POST /v1/prune", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.PruneRequest
		json.NewDecoder(r.Body).Decode(&req)
		d.mu.Lock()
		d.prunes = append(d.prunes, req)
		d.mu.Unlock()
		reply(w, 200, apitype.Prune{DryRun: req.DryRun, Attempts: []string{"a-001", "a-002"}, Runs: 1, Blobs: 3,
			BlobBytes: 3 << 20, RecordBytes: 1 << 20, WorkBytes: 0, Kept: []string{"a-003: backing is mounted"}, KeptForRetries: []string{"a-004"}})
	})
	mux.HandleFunc("GET /v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		var list apitype.TaskList
		for _, t := range draw.SuiteTasks {
			list.Tasks = append(list.Tasks, apitype.TaskInfo{ID: t, SHA256: "bundle-" + t})
		}
		reply(w, 200, list)
	})
	l, err := net.Listen("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return d
}

// newAttempt makes a finished attempt; d.mu is held.
func (d *suiteDaemon) newAttempt(task, agent, model, out string) apitype.Attempt {
	d.n++
	d.clock = d.clock.Add(time.Minute)
	f := strings.Fields(agent)
	a := apitype.Attempt{ID: fmt.Sprintf("a-%03d", d.n), Task: task, State: apitype.StateDone,
		Agent:      apitype.AgentIdentity{Spec: agent, Exe: "/usr/bin/" + f[0], SHA256: "sha-" + f[0], Args: f[1:], Model: model},
		TaskSHA256: "bundle-" + task, Created: d.clock, Reasons: []apitype.Reason{}}
	switch out {
	case "pass":
		a.Pass, a.Reward = true, 1
	case "fail":
		a.Reasons = []apitype.Reason{{Code: "tests_failed", Message: "hidden tests failed"}}
	case "infra":
		a.State, a.InfraError = apitype.StateInfraError, "mount failed"
	case "review":
		a.Outcome = apitype.OutcomeReview
		a.Reasons = []apitype.Reason{{Code: "needs_review", Message: "the claim is hedged"}}
	}
	return a
}

// seed stores older attempts: for each task, outs newest first.
func (d *suiteDaemon) seed(agent, model string, outs map[string]string) {
	d.seedPurpose(agent, model, "", outs)
}

// seedPurpose is seed with attempts of purpose.
func (d *suiteDaemon) seedPurpose(agent, model, purpose string, outs map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for task, letters := range outs {
		for i := len(letters) - 1; i >= 0; i-- {
			out := map[byte]string{'P': "pass", 'F': "fail", 'I': "infra", 'U': "review"}[letters[i]]
			a := d.newAttempt(task, agent, model, out)
			a.Purpose = purpose
			d.attempts = append([]apitype.Attempt{a}, d.attempts...)
		}
	}
}

func (d *suiteDaemon) ranTasks() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ts []string
	for _, r := range d.runs {
		ts = append(ts, r.Task+"/"+r.Model)
	}
	return ts
}

func everyTask(s string) map[string]string {
	m := map[string]string{}
	for _, t := range draw.SuiteTasks {
		m[t] = s
	}
	return m
}

func TestBoard(t *testing.T) {
	const agent = "agent --fast"
	all := func(model string) []string {
		var out []string
		for _, t := range draw.SuiteTasks {
			out = append(out, t+"/"+model)
		}
		return out
	}
	tests := []struct {
		name       string
		script     map[string][]string
		seed       map[string]string
		args       []string
		wantCode   int
		wantRan    []string
		wantOut    []string // in this order on stdout
		wantAbsent string
	}{
		{
			name: "green after two earlier passes", seed: everyTask("PP"), args: []string{"board", "--agent", agent},
			wantCode: exitOK, wantRan: all(""),
			wantOut: []string{"board: agent --fast, 1 attempt(s) per task, streak target 3", "rt-01  pass  streak 3 of 3", "rt-06  pass  streak 3 of 3",
				"board agent --fast: GREEN", "rt-04  pass      pass      3 of 3 (met)  sha256:sha-agent args [--fast]"},
			wantAbsent: "not green",
		},
		{
			name: "gate fails: rt-03 to rt-05 skipped, not failed", script: map[string][]string{"rt-01": {"fail"}}, seed: everyTask("PP"),
			args: []string{"board", "--agent", agent}, wantCode: exitNo,
			wantRan: []string{"rt-01/", "rt-02/", "rt-06/"},
			wantOut: []string{"rt-01  fail  streak 0 of 3", "rt-03  skipped (gate rt-01 did not pass)", "rt-05  skipped", "rt-06  pass",
				"NOT GREEN", "rt-03  skipped", "gate rt-01 did not pass: rt-03, rt-04, rt-05 skipped (not failed)", "not green: rt-01: streak 0 of 3"},
		},
		{
			name: "infra error neither counts nor breaks", script: map[string][]string{"rt-04": {"infra"}}, seed: everyTask("PPP"),
			args: []string{"board", "--agent", agent}, wantCode: exitOK, wantRan: all(""),
			wantOut: []string{"rt-04  infra error  streak 3 of 3", "GREEN"},
		},
		{
			name: "short streaks", args: []string{"board", "--agent", agent, "--attempts", "2"}, wantCode: exitNo, wantRan: all(""),
			wantOut: []string{"2 attempt(s) per task", " rt-01: pass [1 of 2 done]\n", " rt-01: pass [2 of 2 done]\n", "rt-01  pass, pass  streak 2 of 3",
				" rt-02: pass [2 of 2 done]\n", "not green: rt-01: streak 2 of 3"},
		},
		{
			name: "streak target", args: []string{"board", "--agent", agent, "--streak", "1"}, wantCode: exitOK, wantRan: all(""),
			wantOut: []string{"streak target 1", "GREEN"},
		},
		{
			name: "one board per model", seed: everyTask("PP"), args: []string{"board", "--agent", agent, "--model", "m1", "--model", "m2"},
			wantCode: exitNo, wantRan: append(all("m1"), all("m2")...),
			wantOut: []string{"board: agent --fast [model m1]", "board agent --fast [model m1]: NOT GREEN", "streak 1 of 3",
				"board: agent --fast [model m2]", "board agent --fast [model m2]: NOT GREEN"},
		},
		{
			name: "left to review: unresolved, not failed", script: map[string][]string{"rt-06": {"review"}}, seed: everyTask("PP"),
			args: []string{"board", "--agent", agent}, wantCode: exitNo, wantRan: all(""),
			wantOut: []string{"rt-06  unresolved  streak 0 of 3 (counted up to a-", "NOT GREEN",
				"rt-06  unresolved  unresolved  0 of 3", "unresolved: 1 attempt of this run left to review, neither passed nor failed (a-",
				"not green: rt-06: streak 0 of 3 (counted up to a-"},
			wantAbsent: "  fail",
		},
		{
			name: "infra error and not green", script: map[string][]string{"rt-02": {"infra"}},
			args: []string{"board", "--agent", agent}, wantCode: exitError, wantRan: all(""),
			wantOut: []string{"rt-02  infra error  streak 0 of 3", "NOT GREEN"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSuiteDaemon(t, tt.script)
			if tt.seed != nil {
				d.seed(agent, "", tt.seed)
			}
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			t.Logf("stdout:\n%s", stdout)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d; stderr %q\n%s", code, tt.wantCode, stderr, stdout)
			}
			if got := d.ranTasks(); !slices.Equal(got, tt.wantRan) {
				t.Errorf("got runs %v, want %v", got, tt.wantRan)
			}
			rest := stdout
			for _, w := range tt.wantOut {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("got stdout without %q after the earlier lines:\n%s", w, stdout)
				}
				rest = rest[i+len(w):]
			}
			if tt.wantAbsent != "" && strings.Contains(stdout, tt.wantAbsent) {
				t.Errorf("got %q in stdout, want none:\n%s", tt.wantAbsent, stdout)
			}
		})
	}
}

func TestBoardJSON(t *testing.T) {
	d := newSuiteDaemon(t, map[string][]string{"rt-01": {"fail"}})
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "board", "--agent", "agent", "--model", "m1", "--json")
	if code != exitNo {
		t.Errorf("got exit %d, want %d", code, exitNo)
	}
	var res boardResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("got stdout %q, want one JSON object: %v", stdout, err)
	}
	if res.Green || len(res.Boards) != 1 || res.Boards[0].Model != "m1" || res.Boards[0].GatePassed {
		t.Errorf("got %+v, want one not-green board for m1 with its gate failed", res)
	}
	var statuses []string
	for _, r := range res.Boards[0].Rows {
		statuses = append(statuses, r.Status)
	}
	if want := []string{"fail", "pass", "skipped", "skipped", "skipped", "pass"}; !slices.Equal(statuses, want) {
		t.Errorf("got statuses %v, want %v", statuses, want)
	}
	if !strings.Contains(stderr, "rt-03  skipped") {
		t.Errorf("got stderr %q, want the progress there", stderr)
	}
}

func TestBoardLive(t *testing.T) {
	d := newSuiteDaemon(t, nil)
	code, stdout, _ := runCLI(t, d.Socket, nil, true, "board", "--agent", "agent", "--streak", "1")
	if code != exitOK {
		t.Errorf("got exit %d, want %d", code, exitOK)
	}
	if !strings.Contains(stdout, "\x1b[2K") || strings.Count(stdout, "streak 1 of 1") != 6 {
		t.Errorf("got stdout %q, want live attempt lines and a line per task", stdout)
	}
	if strings.Contains(stdout, "done]") {
		t.Errorf("got stdout %q, want no line per ended attempt under the live lines", stdout)
	}
}

func TestBoardUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no agent", []string{"board"}, "missing --agent"},
		{"zero streak", []string{"board", "--agent", "a", "--streak", "0"}, "--streak 0"},
		{"too many attempts", []string{"board", "--agent", "a", "--attempts", "101"}, "--attempts 101"},
		{"extra argument", []string{"board", "--agent", "a", "x"}, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newSuiteDaemon(t, nil)
			code, _, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != exitError || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("got exit %d, stderr %q; want %d and %q", code, stderr, exitError, tt.wantErr)
			}
			if got := d.ranTasks(); len(got) != 0 {
				t.Errorf("got runs %v, want none", got)
			}
		})
	}
}
