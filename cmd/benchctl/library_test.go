package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/draw"
	"benchd.dev/tasks"
)

const builtinTasks = "../../tasks"

// referenceDaemon serves runs of builtin:reference: each finishes at once
// with the changeset given for its task, passing unless the task is in
// failing.
type referenceDaemon struct {
	Socket string

	mu       sync.Mutex
	attempts map[string]apitype.Attempt
	runs     []apitype.RunRequest
}

func newReferenceDaemon(t *testing.T, changes map[string][]apitype.Change, failing map[string]bool) *referenceDaemon {
	t.Helper()
	d := &referenceDaemon{Socket: filepath.Join(t.TempDir(), "d.sock"), attempts: map[string]apitype.Attempt{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.RunRequest
		json.NewDecoder(r.Body).Decode(&req)
		d.mu.Lock()
		d.runs = append(d.runs, req)
		n := len(d.runs)
		a := apitype.Attempt{ID: fmt.Sprintf("a-%d", n), Run: fmt.Sprintf("r-%d", n), Task: req.Task,
			State: apitype.StateDone, Pass: !failing[req.Task], Reasons: []apitype.Reason{}, Changeset: changes[req.Task]}
		if failing[req.Task] {
			a.Reasons = []apitype.Reason{{Code: "tests_failed", Message: "1 test failed"}}
		}
		d.attempts[a.ID] = a
		d.mu.Unlock()
		w.WriteHeader(201)
		json.NewEncoder(w).Encode(apitype.Run{ID: a.Run, Task: req.Task, Agent: req.Agent, Attempts: []string{a.ID}, Created: time.Now()})
	})
	get := func(id string) (apitype.Attempt, bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		a, ok := d.attempts[id]
		return a, ok
	}
	mux.HandleFunc("GET /v1/attempts/{id}", func(w http.ResponseWriter, r *http.Request) {
		a, ok := get(r.PathValue("id"))
		if !ok {
			w.WriteHeader(404)
			json.NewEncoder(w).Encode(apitype.Error{Code: apitype.CodeNotFound, Message: "no attempt"})
			return
		}
		json.NewEncoder(w).Encode(a)
	})
	mux.HandleFunc("GET /v1/attempts/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		a, _ := get(r.PathValue("id"))
		json.NewEncoder(w).Encode(apitype.Event{Attempt: a.ID, State: a.State, Done: true, Final: &a})
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		abs, _ := filepath.Abs(builtinTasks)
		json.NewEncoder(w).Encode(apitype.Status{Version: "test", Tasks: abs})
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

// builtinChanges is a changeset per built-in bundle, with a rename for
// one and a read-free, one-change changeset for the others.
func builtinChanges(t *testing.T) ([]*tasks.Task, map[string][]apitype.Change) {
	t.Helper()
	bundles, err := tasks.LoadAll(builtinTasks)
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string][]apitype.Change{}
	for i, b := range bundles {
		changes[b.ID] = []apitype.Change{{Kind: "modified", Path: "src/main.py", Type: "file"}}
		if i == 0 {
			changes[b.ID] = append(changes[b.ID], apitype.Change{Kind: "renamed", From: "a.txt", Path: "b.txt", Type: "file"})
		}
	}
	return bundles, changes
}

func TestLibraryIndex(t *testing.T) {
	bundles, changes := builtinChanges(t)
	d := newReferenceDaemon(t, changes, nil)
	out := filepath.Join(t.TempDir(), "builtin.toml")
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "library", "index", "--tasks", builtinTasks, "-o", out)
	if code != exitOK {
		t.Fatalf("got exit %d, want 0 (stderr %q)", code, stderr)
	}
	if !strings.Contains(stdout, fmt.Sprintf("%d bundle(s) indexed", len(bundles))) {
		t.Errorf("got stdout\n%s\nwant the count of bundles", stdout)
	}
	d.mu.Lock()
	runs := slices.Clone(d.runs)
	d.mu.Unlock()
	if len(runs) != len(bundles) {
		t.Fatalf("got %d runs, want one per bundle (%d)", len(runs), len(bundles))
	}
	for i, r := range runs {
		if r.Agent != apitype.AgentReference || r.Task != bundles[i].ID || r.Attempts != 1 || r.Purpose != apitype.PurposeIndex {
			t.Errorf("run %d: got %+v, want one attempt of %s by %s, of purpose %s", i, r, bundles[i].ID, apitype.AgentReference, apitype.PurposeIndex)
		}
	}
	lib, err := draw.Load(draw.LoadConfig{Manifests: []string{out}, TasksDir: builtinTasks})
	if err != nil {
		t.Fatalf("the manifest written does not load with its bundles: %v", err)
	}
	for _, tk := range lib.Tasks {
		want := draw.ChangeLines(changes[tk.ID])
		if !slices.Equal(tk.Changeset, want) {
			t.Errorf("task %s: got changeset %q, want %q", tk.ID, tk.Changeset, want)
		}
	}
	if got := lib.Tasks[0].Changeset; !slices.Contains(got, "renamed a.txt -> b.txt") {
		t.Errorf("got %q, want the rename recorded", got)
	}

	t.Run("then draw with the bundles", func(t *testing.T) {
		list := filepath.Join(t.TempDir(), "b.list")
		code, _, stderr := runCLI(t, "", nil, false, "draw", "--library", out, "--library", drawFixture, "--tasks", builtinTasks, "--seed", "20261004", "-o", list)
		if code != exitOK {
			t.Fatalf("got exit %d (stderr %q)", code, stderr)
		}
		b, _ := os.ReadFile(list)
		if want := fmt.Sprintf("library %d\n", 312+len(bundles)); !strings.Contains(string(b), want) {
			t.Errorf("got list without %q", want)
		}
		code, stdout, stderr := runCLI(t, "", nil, false, "draw", "--verify", list, "--library", out, "--library", drawFixture, "--tasks", builtinTasks)
		if code != exitOK {
			t.Errorf("verify: got exit %d, want 0 (stdout %q, stderr %q)", code, stdout, stderr)
		}
		code, _, _ = runCLI(t, "", nil, false, "draw", "--verify", list, "--library", drawFixture)
		if code != exitNo {
			t.Errorf("verify without the bundles: got exit %d, want %d", code, exitNo)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, d.Socket, nil, false, "library", "index", "--tasks", builtinTasks, "-o", out, "--json")
		if code != exitOK {
			t.Fatalf("got exit %d (stderr %q)", code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		var types []string
		for i, l := range lines {
			var ev struct { // libraryEvent's, less the result
				Type    string           `json:"type"`
				View    *runView         `json:"view"`
				Attempt *apitype.Attempt `json:"attempt"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, l)
			}
			types = append(types, ev.Type)
			if ev.Type == "attempt" && (ev.Attempt == nil || ev.Attempt.Task != bundles[i-1].ID || ev.View.Total.Done != i) {
				t.Errorf("line %d: got %s, want the end of %s's reference run, %d done", i+1, l, bundles[i-1].ID, i)
			}
		}
		want := "start," + strings.Repeat("attempt,", len(bundles)) + "end"
		if got := strings.Join(types, ","); got != want {
			t.Errorf("got events %s, want %s", got, want)
		}
		// The last line is the result library index --json gave before.
		var m libraryIndexResult
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
			t.Fatalf("the last line is not JSON: %v", err)
		}
		if len(m.Tasks) != len(bundles) || m.Output != out || !strings.HasPrefix(m.LibraryHash, "sha256:") {
			t.Errorf("got %+v, want %d tasks written to %s", m, len(bundles), out)
		}
	})
}

// TestLibraryIndexProgress: off a terminal a line per bundle as its
// reference run ends, with the count done, and the status line at the
// end; on a terminal the status line redrawn under those lines; with -o -
// the lines go to stderr, and stdout is the manifest alone.
func TestLibraryIndexProgress(t *testing.T) {
	bundles, changes := builtinChanges(t)
	d := newReferenceDaemon(t, changes, nil)
	n := len(bundles)
	out := filepath.Join(t.TempDir(), "m.toml")
	wantPlain := []string{
		fmt.Sprintf("library index: the reference of %d bundles, one at a time\n", n),
		fmt.Sprintf("rt-01    a-1            2 changes [1 of %d done]\n         modified src/main.py\n         renamed a.txt -> b.txt\n", n),
		fmt.Sprintf("rt-02    a-2            1 change [2 of %d done]\n", n),
		fmt.Sprintf("library index: %d of %d done, %d passed\n", n, n, n),
		fmt.Sprintf("%d bundle(s) indexed into %s", n, out),
	}
	inOrder := func(t *testing.T, got string, want []string) {
		t.Helper()
		at := 0
		for _, w := range want {
			i := strings.Index(got[at:], w)
			if i < 0 {
				t.Fatalf("got\n%q\nwant %q after byte %d", got, w, at)
			}
			at += i + len(w)
		}
	}
	t.Run("plain", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, d.Socket, nil, false, "library", "index", "--tasks", builtinTasks, "-o", out)
		if code != exitOK {
			t.Fatalf("got exit %d (stderr %q)", code, stderr)
		}
		inOrder(t, stdout, wantPlain)
	})
	t.Run("terminal", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, d.Socket, nil, true, "library", "index", "--tasks", builtinTasks, "-o", out)
		if code != exitOK {
			t.Fatalf("got exit %d (stderr %q)", code, stderr)
		}
		inOrder(t, stdout, []string{
			fmt.Sprintf("\r\x1b[2Klibrary index: 0 of %d done; eta ?", n),
			fmt.Sprintf("\r\x1b[2Krt-01    a-%d", n+1),
			fmt.Sprintf("[1 of %d done]\n", n),
			fmt.Sprintf("\r\x1b[2Klibrary index: 1 of %d done, 1 passed; eta ?", n),
			fmt.Sprintf("\r\x1b[2Klibrary index: %d of %d done, %d passed\n", n, n, n),
		})
	})
	t.Run("manifest on stdout", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, d.Socket, nil, false, "library", "index", "--tasks", builtinTasks, "-o", "-")
		if code != exitOK {
			t.Fatalf("got exit %d (stderr %q)", code, stderr)
		}
		if !strings.Contains(stderr, fmt.Sprintf("[%d of %d done]", n, n)) || strings.Contains(stdout, "done]") || !strings.HasPrefix(stdout, "#") {
			t.Errorf("got stdout\n%s\nstderr\n%s\nwant the progress on stderr, the manifest alone on stdout", stdout, stderr)
		}
	})
}

// TestLibraryIndexDefaultTasks: without --tasks, library index reads the
// bundles benchd runs (the directory its status names), as the README's
// "library index -o FILE" does.
func TestLibraryIndexDefaultTasks(t *testing.T) {
	bundles, changes := builtinChanges(t)
	d := newReferenceDaemon(t, changes, nil)
	out := filepath.Join(t.TempDir(), "builtin.toml")
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "library", "index", "-o", out)
	if code != exitOK {
		t.Fatalf("got exit %d, want 0 (stderr %q)", code, stderr)
	}
	if !strings.Contains(stdout, fmt.Sprintf("%d bundle(s) indexed", len(bundles))) {
		t.Errorf("got stdout\n%s\nwant the count of bundles", stdout)
	}
	abs, _ := filepath.Abs(builtinTasks)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "the bundles in "+abs) {
		t.Errorf("got manifest\n%s\nwant it to name benchd's tasks dir %s", b, abs)
	}
	if _, err := draw.Load(draw.LoadConfig{Manifests: []string{out}, TasksDir: builtinTasks}); err != nil {
		t.Errorf("the manifest written does not load with its bundles: %v", err)
	}
}

func TestLibraryIndexFailures(t *testing.T) {
	bundles, changes := builtinChanges(t)
	noChanges := map[string][]apitype.Change{}
	for k, v := range changes {
		noChanges[k] = v
	}
	noChanges[bundles[1].ID] = nil
	tests := []struct {
		name    string
		changes map[string][]apitype.Change
		failing map[string]bool
		args    []string
		wantErr string
	}{
		{"a reference fails", changes, map[string]bool{bundles[2].ID: true}, nil, "the reference solution failed"},
		{"a reference makes no changes", noChanges, nil, nil, "not tagged reply-only"},
		{"no -o", changes, nil, []string{"-o", ""}, "missing -o"},
		{"-o in a missing directory", changes, nil, []string{"-o", "/nonexistent-benchd/m.toml"}, "directory /nonexistent-benchd does not exist"},
		{"-o a directory", changes, nil, []string{"-o", "/tmp"}, "-o /tmp: is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newReferenceDaemon(t, tt.changes, tt.failing)
			out := filepath.Join(t.TempDir(), "m.toml")
			args := append([]string{"library", "index", "--tasks", builtinTasks, "-o", out}, tt.args...)
			code, _, stderr := runCLI(t, d.Socket, nil, false, args...)
			if code != exitError {
				t.Errorf("got exit %d, want %d", code, exitError)
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("got stderr %q, want %q", stderr, tt.wantErr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a manifest was written")
			}
			d.mu.Lock()
			ran := len(d.runs)
			d.mu.Unlock()
			if strings.HasPrefix(tt.name, "-o ") && ran != 0 {
				t.Errorf("got %d reference runs before the bad -o was refused, want 0", ran)
			}
		})
	}
}

func TestLibraryShow(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", nil, false, "library", "show", "--library", drawFixture)
	if code != exitOK {
		t.Fatalf("got exit %d (stderr %q)", code, stderr)
	}
	for _, want := range []string{": 312 tasks, 309 eligible, 128 groups, 11 worlds", "mail/reply:needs=memory-across-sessions:faults=-"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("got stdout\n%s\nwant it to contain %q", stdout, want)
		}
	}
	code, stdout, _ = runCLI(t, "", nil, false, "library", "show", "--library", drawFixture, "--json")
	var m libraryShowResult
	if err := json.Unmarshal([]byte(stdout), &m); err != nil || code != exitOK {
		t.Fatalf("got exit %d and %v\n%s", code, err, stdout)
	}
	if m.Tasks != 312 || len(m.Groups) != 128 || len(m.Worlds) != 11 {
		t.Errorf("got %d tasks, %d groups, %d worlds, want 312, 128, 11", m.Tasks, len(m.Groups), len(m.Worlds))
	}
}
