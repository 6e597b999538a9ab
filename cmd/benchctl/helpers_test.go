package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/dsse"
)

// fixture is a finished attempt with a real journal: counter.py
// modified, new.py added, a denied unlink of README.md, and ignored noise
// under __pycache__/.
type fixture struct {
	dir         string
	journalPath string
	recs        []journal.Record
	attempt     apitype.Attempt
	task        apitype.TaskInfo
	blobs       *journal.Blobs
	// key is the fixture's host key: archiveFiles signs attempt.json's
	// statement with it.
	key ed25519.PrivateKey
}

// fixtureKeyHex is the public half of the fixture's key, for --key.
func (fx *fixture) keyHex() string {
	return hex.EncodeToString(fx.key.Public().(ed25519.PublicKey))
}

// envelopeOf signs the statement of attempt.json and task.json's policy
// (as the archive has them) with key, as benchd does when an attempt
// ends.
func envelopeOf(t *testing.T, key ed25519.PrivateKey, attemptJSON, taskJSON []byte) []byte {
	t.Helper()
	var a apitype.Attempt
	if err := json.Unmarshal(attemptJSON, &a); err != nil {
		t.Fatal(err)
	}
	var task apitype.TaskInfo
	json.Unmarshal(taskJSON, &task)
	st := apitype.StatementOf(a)
	if task.Allow != nil || task.Ignore != nil {
		st.TaskPolicy = &apitype.TaskPolicy{Allow: task.Allow, Ignore: task.Ignore}
	}
	payload, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(dsse.Sign(key, apitype.StatementPayloadType, payload))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	counterBefore = "def count(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"
	counterAfter  = "def count(n):\n    total = 0\n    for i in range(n + 1):\n        total += i\n    return total\n"
	newFile       = "print('new')\n"
)

var testPolicy = journal.Policy{Allow: []string{"src/*.py"}, Ignore: []string{"__pycache__/"}}

func writeFile(t *testing.T, p, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	writeFile(t, filepath.Join(ws, "src", "counter.py"), counterBefore, 0o644)
	writeFile(t, filepath.Join(ws, "README.md"), "hello\n", 0o644)
	os.Chmod(filepath.Join(ws, "src"), 0o755)
	os.Chmod(ws, 0o755)

	fx := &fixture{dir: dir, journalPath: filepath.Join(dir, "journal.jsonl")}
	w, err := journal.Create(fx.journalPath)
	if err != nil {
		t.Fatal(err)
	}
	fx.blobs = w.Blobs()
	initial, err := journal.SnapshotTree(ws, fx.blobs)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mono int64
	add := func(r journal.Record) {
		t.Helper()
		mono += 125_000_000
		r.Mono, r.Wall = mono, start.Add(time.Duration(mono))
		if r.Result == "" {
			r.Result = "ok"
		}
		got, err := w.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		fx.recs = append(fx.recs, got)
	}
	const pid, comm = 4242, "python3"
	add(journal.Record{Op: journal.OpMount, SHA256: initial.ManifestHash()})
	writeFile(t, filepath.Join(ws, "src", "counter.py"), counterAfter, 0o644)
	add(journal.Record{Op: journal.OpOpen, Path: "src/counter.py", PID: pid, Comm: comm, Flags: 0o1001, Decision: journal.Allowed})
	add(journal.Record{Op: journal.OpWrite, Path: "src/counter.py", PID: pid, Comm: comm, Size: int64(len(counterAfter)), Decision: journal.Allowed})
	add(journal.Record{Op: journal.OpRelease, Path: "src/counter.py", PID: pid, Comm: comm, Size: int64(len(counterAfter)), SHA256: journal.HashBytes([]byte(counterAfter)), Decision: journal.Allowed})
	writeFile(t, filepath.Join(ws, "src", "new.py"), newFile, 0o644)
	add(journal.Record{Op: journal.OpCreate, Path: "src/new.py", PID: pid, Comm: comm, Mode: 0o644, Decision: journal.Allowed})
	add(journal.Record{Op: journal.OpWrite, Path: "src/new.py", PID: pid, Comm: comm, Size: int64(len(newFile)), Decision: journal.Allowed})
	add(journal.Record{Op: journal.OpRelease, Path: "src/new.py", PID: pid, Comm: comm, Size: int64(len(newFile)), SHA256: journal.HashBytes([]byte(newFile)), Decision: journal.Allowed})
	add(journal.Record{Op: journal.OpUnlink, Path: "README.md", PID: 4243, Comm: "rm", Result: "EACCES", Decision: journal.Denied})
	if err := os.Mkdir(filepath.Join(ws, "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(ws, "__pycache__"), 0o755)
	add(journal.Record{Op: journal.OpMkdir, Path: "__pycache__", PID: pid, Comm: comm, Mode: 0o755, Decision: journal.Ignored})
	writeFile(t, filepath.Join(ws, "__pycache__", "c.pyc"), "\x00\x01pyc", 0o644)
	add(journal.Record{Op: journal.OpCreate, Path: "__pycache__/c.pyc", PID: pid, Comm: comm, Mode: 0o644, Decision: journal.Ignored})
	add(journal.Record{Op: journal.OpRelease, Path: "__pycache__/c.pyc", PID: pid, Comm: comm, Size: 5, SHA256: journal.HashBytes([]byte("\x00\x01pyc")), Decision: journal.Ignored})
	final, err := journal.SnapshotTree(ws, fx.blobs)
	if err != nil {
		t.Fatal(err)
	}
	add(journal.Record{Op: journal.OpUnmount, SHA256: final.ManifestHash()})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := journal.VerifyReplay(fx.recs, fx.blobs); err != nil {
		t.Fatalf("the fixture's journal does not replay: %v", err)
	}
	cs, err := journal.ChangesetOf(fx.recs, fx.blobs, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.String(); got != "modified src/counter.py\nadded src/new.py\n" {
		t.Fatalf("the fixture's changeset is %q", got)
	}
	done := start.Add(2 * time.Second)
	fx.task = apitype.TaskInfo{ID: "rt-01", Name: "circular counter", Grader: "pytest", TimeoutSec: 600,
		KnownAttempts: []string{"off-by-one"}, SHA256: strings.Repeat("7", 64),
		Allow: testPolicy.Allow, Ignore: testPolicy.Ignore}
	fx.key = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	fx.attempt = apitype.Attempt{
		ID: "a-1", Run: "r-1", Task: "rt-01", State: apitype.StateDone, Pass: true, Reward: 1,
		Reasons:  []apitype.Reason{},
		Agent:    apitype.AgentIdentity{Spec: "python3 agent.py {plan}", Exe: "/usr/bin/python3", SHA256: strings.Repeat("e", 64), Args: []string{"agent.py", "/workspace/plan.md"}, Version: "agent 1.2", Env: []string{"API_KEY"}},
		ExitCode: 0, WallMS: 2000, PeakMemoryBytes: 48 << 20, MaxRSSBytes: 30 << 20, Edits: 6, Denied: 1,
		Changeset: cs,
		Network: apitype.Network{Mode: "open", Attempts: []apitype.NetAttempt{{Time: start, Proto: "tcp", Dst: "93.184.216.34:443"},
			{Time: start, Proto: "tcp", Dst: "169.254.169.254:80", Refused: true}}},
		Limits:      &apitype.Limits{TimeoutMS: 600000, MemoryBytes: 1 << 30, CPUs: 1.5},
		JournalHead: fx.recs[len(fx.recs)-1].Hash, TaskSHA256: fx.task.SHA256,
		Created: start, Started: &start, Finished: &done,
	}
	return fx
}

// exported is the fixture's attempt as benchd would have graded it: the
// denied unlink fails the verdict with wrong_files (composeVerdict), so
// that what the verdict claims agrees with the journal.
func (fx *fixture) exported() apitype.Attempt {
	a := fx.attempt
	a.Pass, a.Reward = false, 0
	a.Reasons = []apitype.Reason{{Code: "wrong_files", Message: "the agent tried 1 change(s) the task's edit policy forbids; they were refused (see the journal's denied records)"}}
	return a
}

// archiveFiles returns the files of the fixture's export archive, by
// name in the archive.
func (fx *fixture) archiveFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files["journal.jsonl"] = read(fx.journalPath)
	bdir := journal.BlobsDir(fx.journalPath)
	filepath.WalkDir(bdir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(bdir, p)
			files["journal.jsonl.blobs/"+filepath.ToSlash(rel)] = read(p)
		}
		return err
	})
	files["transcript/stdout"] = []byte("working\n")
	files["transcript/stderr"] = nil
	a, _ := json.Marshal(fx.exported())
	files["attempt.json"] = a
	tk, _ := json.Marshal(fx.task)
	files["task.json"] = tk
	files["attempt.dsse.json"] = envelopeOf(t, fx.key, a, tk)
	return files
}

// tarFiles makes a tar of files, in sorted order, with the directories.
func tarFiles(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	dirs := map[string]bool{}
	for _, n := range names {
		for i := range n {
			if n[i] == '/' && !dirs[n[:i]] {
				dirs[n[:i]] = true
				if err := tw.WriteHeader(&tar.Header{Name: n[:i] + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o444, Size: int64(len(files[n]))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[n])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fakeDaemon serves the API from a fixture on a unix socket in a temp
// dir. Runs get the attempts in runAttempts, streamed as events.
type fakeDaemon struct {
	Socket string
	fx     *fixture

	mu          sync.Mutex
	attempts    map[string]apitype.Attempt
	runAttempts []apitype.Attempt // what POST /v1/runs starts
	cutEvents   bool              // end event streams before the last event
	holdEvents  bool              // keep event streams open until the client leaves
	corruptBlob bool              // serve blobs with a byte changed
	checkFails  bool              // end the check's stream with an error event
	requests    []string
	runBodies   []string
	run         apitype.Run // the last run POST /v1/runs made
}

func newFakeDaemon(t *testing.T, fx *fixture) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{Socket: filepath.Join(t.TempDir(), "d.sock"), fx: fx,
		attempts: map[string]apitype.Attempt{fx.attempt.ID: fx.attempt}}
	mux := http.NewServeMux()
	errorf, reply := replyError, replyJSON
	attempt := func(w http.ResponseWriter, r *http.Request) (apitype.Attempt, bool) {
		d.mu.Lock()
		a, ok := d.attempts[r.PathValue("id")]
		d.mu.Unlock()
		if !ok {
			errorf(w, 404, apitype.CodeNotFound, "no attempt "+r.PathValue("id"))
		}
		return a, ok
	}
	mux.HandleFunc("POST /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req apitype.RunRequest
		if err := json.Unmarshal(b, &req); err != nil {
			errorf(w, 400, apitype.CodeInvalid, "bad json")
			return
		}
		for _, id := range append([]string{req.Task}, req.Tasks...) {
			if (len(req.Tasks) == 0 && id != "rt-01") || (id != "" && !strings.HasPrefix(id, "rt-0")) {
				errorf(w, 400, apitype.CodeInvalid, "unknown task \""+id+"\"")
				return
			}
		}
		d.mu.Lock()
		d.runBodies = append(d.runBodies, string(b))
		run := apitype.Run{ID: "r-2", Task: req.Task, Tasks: req.Tasks, Agent: req.Agent, Created: time.Now()}
		if len(run.Tasks) == 0 {
			run.Tasks = []string{req.Task}
		}
		for _, a := range d.runAttempts {
			d.attempts[a.ID] = a
			run.Attempts = append(run.Attempts, a.ID)
		}
		d.run = run
		d.mu.Unlock()
		w.WriteHeader(201)
		reply(w, run)
	})
	mux.HandleFunc("GET /v1/attempts", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		var list apitype.AttemptList
		for _, a := range d.attempts {
			if r.URL.Query().Get("task") == "" || r.URL.Query().Get("task") == a.Task {
				list.Attempts = append(list.Attempts, a)
			}
		}
		reply(w, list)
	})
	mux.HandleFunc("GET /v1/attempts/{id}", func(w http.ResponseWriter, r *http.Request) {
		if a, ok := attempt(w, r); ok {
			reply(w, a)
		}
	})
	mux.HandleFunc("GET /v1/attempts/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		a, ok := attempt(w, r)
		if !ok {
			return
		}
		enc := json.NewEncoder(w)
		for i, ph := range []string{apitype.PhasePrepare, apitype.PhaseRun, apitype.PhaseGrade} {
			enc.Encode(apitype.Event{Attempt: a.ID, State: apitype.StateRunning, Phase: ph, ElapsedMS: int64(i * 100), MemoryBytes: 1 << 20, Edits: int64(i)})
			w.(http.Flusher).Flush()
		}
		d.mu.Lock()
		cut, hold := d.cutEvents, d.holdEvents
		d.mu.Unlock()
		if hold {
			<-r.Context().Done()
			return
		}
		if !cut {
			enc.Encode(apitype.Event{Attempt: a.ID, State: a.State, Done: true, Final: &a})
		}
	})
	// The run POST /v1/runs made: its status, its cancel.
	runOf := func(w http.ResponseWriter, r *http.Request) (apitype.Run, []apitype.Attempt, bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.run.ID == "" || r.PathValue("id") != d.run.ID {
			errorf(w, 404, apitype.CodeNotFound, "no run "+r.PathValue("id"))
			return apitype.Run{}, nil, false
		}
		var as []apitype.Attempt
		for _, id := range d.run.Attempts {
			as = append(as, d.attempts[id])
		}
		return d.run, as, true
	}
	mux.HandleFunc("GET /v1/runs/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		run, as, ok := runOf(w, r)
		if !ok {
			return
		}
		st := apitype.RunStatus{Run: run, Attempts: as, Ended: true, Concurrency: 2}
		for _, a := range as {
			if !finished(a) {
				st.Ended = false
			}
		}
		reply(w, st)
	})
	mux.HandleFunc("POST /v1/runs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		run, as, ok := runOf(w, r)
		if !ok {
			return
		}
		rc := apitype.RunCancel{Run: run.ID}
		d.mu.Lock()
		for _, a := range as {
			if !finished(a) {
				a.State = apitype.StateCanceled
				d.attempts[a.ID] = a
				rc.Canceled = append(rc.Canceled, a)
			}
		}
		d.mu.Unlock()
		if len(rc.Canceled) == 0 {
			errorf(w, 409, apitype.CodeConflict, "run "+run.ID+" has no queued or running attempt")
			return
		}
		reply(w, rc)
	})
	mux.HandleFunc("POST /v1/attempts/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		a, ok := attempt(w, r)
		if !ok {
			return
		}
		if finished(a) {
			errorf(w, 409, apitype.CodeConflict, "attempt "+a.ID+" has finished")
			return
		}
		a.State = apitype.StateCanceled
		d.mu.Lock()
		d.attempts[a.ID] = a
		d.mu.Unlock()
		reply(w, a)
	})
	mux.HandleFunc("POST /v1/attempts/{id}/regrade", func(w http.ResponseWriter, r *http.Request) {
		a, ok := attempt(w, r)
		if !ok {
			return
		}
		v := apitype.Verdict{Pass: a.Pass, Reward: a.Reward, Reasons: a.Reasons}
		reply(w, apitype.Regrade{Attempt: a.ID, Same: true, Before: v, After: v})
	})
	mux.HandleFunc("POST /v1/attempts/{id}/review", func(w http.ResponseWriter, r *http.Request) {
		a, ok := attempt(w, r)
		if !ok {
			return
		}
		var req apitype.ReviewRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			errorf(w, 400, apitype.CodeInvalid, "bad json")
			return
		}
		switch {
		case a.Review != nil:
			errorf(w, 409, apitype.CodeConflict, "attempt "+a.ID+": it was reviewed already")
			return
		case !a.Unresolved():
			errorf(w, 409, apitype.CodeConflict, "attempt "+a.ID+": it is not in review")
			return
		}
		a.Review = &apitype.Review{Outcome: req.Outcome, Why: req.Why, UID: 1000, Time: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC),
			Graded: apitype.Verdict{Outcome: a.Outcome, Reasons: a.Reasons}}
		a.Outcome, a.Pass, a.Reasons = req.Outcome, req.Outcome == apitype.OutcomePass, []apitype.Reason{}
		d.mu.Lock()
		d.attempts[a.ID] = a
		d.mu.Unlock()
		reply(w, a)
	})
	mux.HandleFunc("GET /v1/attempts/{id}/journal", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := attempt(w, r); ok {
			http.ServeFile(w, r, fx.journalPath)
		}
	})
	mux.HandleFunc("GET /v1/attempts/{id}/blobs/{sha}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := attempt(w, r); !ok {
			return
		}
		b, ok := readBlob(w, fx.blobs, r.PathValue("sha"))
		if !ok {
			return
		}
		d.mu.Lock()
		if d.corruptBlob && len(b) > 0 {
			b[0] ^= 1
		}
		d.mu.Unlock()
		w.Write(b)
	})
	mux.HandleFunc("GET /v1/attempts/{id}/transcript", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := attempt(w, r); ok {
			reply(w, apitype.Transcript{Stdout: "working\n", Stderr: "warning: x", StderrTruncated: true})
		}
	})
	mux.HandleFunc("GET /v1/attempts/{id}/export", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := attempt(w, r); ok {
			w.Header().Set("Content-Type", "application/x-tar")
			w.Write(tarFiles(t, fx.archiveFiles(t)))
		}
	})
	mux.HandleFunc("GET /v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		reply(w, apitype.TaskList{Tasks: []apitype.TaskInfo{fx.task}})
	})
	mux.HandleFunc("POST /v1/tasks/check", func(w http.ResponseWriter, r *http.Request) {
		res := []apitype.CheckResult{
			{Task: "rt-01", Agent: apitype.AgentReference, Attempt: "a-10", WantPass: true, GotPass: true, OK: true},
			{Task: "rt-01", Agent: apitype.AgentAttemptPrefix + "off-by-one", Attempt: "a-11", WantCode: "tests_failed", GotPass: true, OK: false},
		}
		if r.URL.Query().Get("task") == "rt-02" {
			res = res[:1]
		}
		ok := true
		for _, c := range res {
			ok = ok && c.OK
		}
		if r.URL.Query().Get("stream") != "1" {
			reply(w, apitype.TaskCheck{Results: res, OK: ok})
			return
		}
		// The stream: the start, each attempt's end (the last first),
		// the answer.
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		start := apitype.CheckEvent{Type: apitype.CheckStart, Concurrency: 2}
		for _, c := range res {
			c.GotPass, c.GotCodes, c.OK = false, nil, false
			start.Attempts = append(start.Attempts, c)
		}
		enc.Encode(start)
		t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
		for i := len(res) - 1; i >= 0; i-- {
			c := res[i]
			t1 := t0.Add(1500 * time.Millisecond)
			a := apitype.Attempt{ID: c.Attempt, Task: c.Task, State: apitype.StateDone, Pass: c.GotPass,
				Purpose: apitype.PurposeCheck, Started: &t0, Finished: &t1}
			enc.Encode(apitype.CheckEvent{Type: apitype.CheckAttempt, Result: &c, Ended: &a})
			w.(http.Flusher).Flush()
		}
		d.mu.Lock()
		fail := d.checkFails
		d.mu.Unlock()
		if fail {
			enc.Encode(apitype.CheckEvent{Type: apitype.CheckError, Error: &apitype.Error{Code: apitype.CodeBusy, Message: "attempt a-10 did not end: benchd is busy"}})
			return
		}
		enc.Encode(apitype.CheckEvent{Type: apitype.CheckEnd, Check: &apitype.TaskCheck{Results: res, OK: ok}})
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		reply(w, apitype.Status{Version: "test", Concurrency: 2, StateDir: "/var/lib/benchd"})
	})
	serveSocket(t, d.Socket, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.requests = append(d.requests, r.Method+" "+r.URL.Path)
		d.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	return d
}

// serveSocket serves h on a unix socket at path until the test ends.
func serveSocket(t *testing.T, path string, h http.Handler) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
}

// replyJSON answers v as benchd does.
func replyJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// replyError answers an error as benchd does.
func replyError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apitype.Error{Code: code, Message: msg})
}

// readBlob reads blob sha of blobs, or answers why it cannot.
func readBlob(w http.ResponseWriter, blobs *journal.Blobs, sha string) ([]byte, bool) {
	p, err := blobs.Path(sha)
	if err != nil {
		replyError(w, 400, apitype.CodeInvalid, err.Error())
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		replyError(w, 404, apitype.CodeNotFound, "no blob "+sha)
		return nil, false
	}
	return b, true
}

func (d *fakeDaemon) requestCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.requests)
}

// runCLI runs benchctl against socket with args and returns the exit
// status and what it printed.
func runCLI(t *testing.T, socket string, env map[string]string, terminal bool, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return runCLIContext(ctx, t, socket, env, terminal, args...)
}

func runCLIContext(ctx context.Context, t *testing.T, socket string, env map[string]string, terminal bool, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := &CLI{
		Stdout: &stdout, Stderr: &stderr, Terminal: terminal,
		LookupEnv: func(name string) (string, bool) { v, ok := env[name]; return v, ok },
	}
	if socket != "" {
		args = append([]string{"--socket", socket}, args...)
	}
	code := c.Run(ctx, args)
	return code, stdout.String(), stderr.String()
}
