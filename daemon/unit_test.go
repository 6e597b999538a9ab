package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/tasks"
)

func TestHTTPError(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"invalid", fmt.Errorf("timeout: %w", errInvalid), 400, apitype.CodeInvalid},
		{"task invalid", fmt.Errorf("x: %w", tasks.ErrInvalid), 400, apitype.CodeInvalid},
		{"agent invalid", fmt.Errorf("agent: %w", runs.ErrInvalid), 400, apitype.CodeInvalid},
		{"invalid beats not found", fmt.Errorf("%w: %w", runs.ErrInvalid, tasks.ErrNotFound), 400, apitype.CodeInvalid},
		{"not found", fmt.Errorf("run: %w", errNotFound), 404, apitype.CodeNotFound},
		{"store not found", fmt.Errorf("attempt x: %w", store.ErrNotFound), 404, apitype.CodeNotFound},
		{"task not found", fmt.Errorf("task: %w", tasks.ErrNotFound), 404, apitype.CodeNotFound},
		{"conflict", fmt.Errorf("cancel: %w", errConflict), 409, apitype.CodeConflict},
		{"store conflict", fmt.Errorf("ingest: %w", store.ErrConflict), 409, apitype.CodeConflict},
		{"too large", fmt.Errorf("body: %w", errTooLarge), 413, apitype.CodeTooLarge},
		{"max bytes", &http.MaxBytesError{Limit: 10}, 413, apitype.CodeTooLarge},
		{"forbidden", fmt.Errorf("uid 1: %w", errForbidden), 403, apitype.CodeForbidden},
		{"busy", fmt.Errorf("run: %w", errBusy), 503, apitype.CodeBusy},
		{"queue full", fmt.Errorf("run: %w", errQueueFull), 503, apitype.CodeBusy},
		{"anything else", errors.New("disk full"), 500, apitype.CodeInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := httpError(c.err)
			if status != c.status || body.Code != c.code {
				t.Fatalf("got %d %s, want %d %s", status, body.Code, c.status, c.code)
			}
			if body.Message != c.err.Error() {
				t.Fatalf("got message %q, want %q", body.Message, c.err.Error())
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	big := `{"task":"` + strings.Repeat("a", apitype.MaxBodyBytes) + `"}`
	cases := []struct {
		name string
		body string
		want error // nil, errInvalid or errTooLarge
		msg  string
	}{
		{"good", `{"task":"rt-01","agent":"builtin:null"}`, nil, ""},
		{"good with space", " {\"task\":\"rt-01\"}\n", nil, ""},
		{"empty", ``, errInvalid, "empty request body"},
		{"malformed", `{"task":`, errInvalid, "malformed JSON"},
		{"wrong type", `{"attempts":"three"}`, errInvalid, "malformed JSON"},
		{"unknown field", `{"task":"rt-01","bogus":1}`, errInvalid, `unknown field "bogus"`},
		{"trailing data", `{"task":"rt-01"} {"task":"rt-02"}`, errInvalid, "data after"},
		{"oversized", big, errTooLarge, "over 1048576 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/runs", strings.NewReader(c.body))
			var req apitype.RunRequest
			err := decodeJSON(httptest.NewRecorder(), r, &req)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("got %v, want no error", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("got %v, want an error matching %v", err, c.want)
			case c.want != nil && !strings.Contains(err.Error(), c.msg):
				t.Fatalf("got %q, want it to say %q", err, c.msg)
			}
		})
	}
}

// fakeProc writes a /proc/PID/status with uid and groups.
func fakeProc(t *testing.T, dir string, pid, uid int, groups string) {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprint(pid))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	status := fmt.Sprintf("Name:\tbenchctl\nUmask:\t0022\nState:\tS (sleeping)\nPid:\t%d\nUid:\t%d\t%d\t%d\t%d\nGid:\t100\t100\t100\t100\nFDSize:\t64\nGroups:\t%s\nNStgid:\t%d\n", pid, uid, uid, uid, uid, groups, pid)
	if err := os.WriteFile(filepath.Join(p, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAuthorizer(t *testing.T) {
	proc := t.TempDir()
	fakeProc(t, proc, 10, 1000, "24 27 990 ")
	fakeProc(t, proc, 11, 1001, "24 27 ")
	fakeProc(t, proc, 12, 1002, "")
	fakeProc(t, proc, 13, 5, "990") // pid reused by another user
	a := authorizer{Group: "benchd", ProcDir: proc, LookupGID: func(name string) (int, error) {
		if name == "benchd" {
			return 990, nil
		}
		return 0, errors.New("no such group")
	}}
	noGroup := a
	noGroup.Group = "missing"
	cases := []struct {
		name  string
		auth  authorizer
		peer  peer
		allow bool
	}{
		{"root", a, peer{PID: 1, UID: 0, GID: 0}, true},
		{"root without the group", noGroup, peer{PID: 1, UID: 0, GID: 0}, true},
		{"supplementary member", a, peer{PID: 10, UID: 1000, GID: 100}, true},
		{"primary group", a, peer{PID: 99, UID: 1003, GID: 990}, true},
		{"not a member", a, peer{PID: 11, UID: 1001, GID: 100}, false},
		{"no groups at all", a, peer{PID: 12, UID: 1002, GID: 100}, false},
		{"process gone", a, peer{PID: 77, UID: 1000, GID: 100}, false},
		{"status of another uid", a, peer{PID: 13, UID: 1000, GID: 100}, false},
		{"group missing", noGroup, peer{PID: 10, UID: 1000, GID: 100}, false},
		{"no credentials", a, peer{Err: errors.New("not a unix socket")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.auth.allow(c.peer)
			if got := err == nil; got != c.allow {
				t.Fatalf("got allowed=%v (%v), want %v", got, err, c.allow)
			}
			if err != nil && !errors.Is(err, errForbidden) {
				t.Fatalf("got %v, want an error matching errForbidden", err)
			}
		})
	}
}

func TestProcCredsMalformed(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, status string }{
		{"no uid", "Name:\tx\nGroups:\t1 2\n"},
		{"bad uid", "Uid:\tx\t0\t0\t0\n"},
		{"bad groups", "Uid:\t5\t5\t5\t5\nGroups:\t1 two\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			os.WriteFile(p, []byte(c.status), 0o644)
			if uid, groups, err := procCreds(p); err == nil {
				t.Fatalf("got uid %d groups %v, want an error", uid, groups)
			}
		})
	}
}

func TestSameVerdict(t *testing.T) {
	r := func(codes ...string) []apitype.Reason {
		var rs []apitype.Reason
		for _, c := range codes {
			rs = append(rs, apitype.Reason{Code: c, Message: "m " + c})
		}
		return rs
	}
	cases := []struct {
		name string
		a, b apitype.Verdict
		same bool
	}{
		{"equal pass", apitype.Verdict{Pass: true, Reward: 1, Reasons: r("pass")}, apitype.Verdict{Pass: true, Reward: 1, Reasons: r("pass")}, true},
		{"reason order", apitype.Verdict{Reasons: r("a", "b")}, apitype.Verdict{Reasons: r("b", "a")}, true},
		{"pass differs", apitype.Verdict{Pass: true, Reward: 1}, apitype.Verdict{Pass: false, Reward: 1}, false},
		{"reward differs", apitype.Verdict{Reward: 1}, apitype.Verdict{Reward: 0}, false},
		{"codes differ", apitype.Verdict{Reasons: r("tests_failed")}, apitype.Verdict{Reasons: r("edit_violation")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sameVerdict(c.a, c.b); got != c.same {
				t.Fatalf("got %v, want %v", got, c.same)
			}
		})
	}
}

func TestConfigRetries(t *testing.T) {
	cfg := Config{TasksDir: t.TempDir(), AgentUID: 65534, AgentGID: 65534, Retries: -1}
	if err := cfg.setDefaults(); !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), "retries -1") {
		t.Errorf("got %v, want an invalid error naming retries -1", err)
	}
}

// TestSubmitQueueBound: runs submitted at once never queue more than
// MaxQueued attempts between them; the rest are refused as busy, with
// nothing stored.
func TestSubmitQueueBound(t *testing.T) {
	ctx := t.Context()
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, "queue"), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &server{cfg: Config{StateDir: state, MaxQueued: 5}, store: st, live: map[string]*liveAttempt{}, secrets: &secretSet{}, log: slog.New(slog.DiscardHandler)}
	s.cond = sync.NewCond(&s.mu)
	sub := submitted{tasks: []submittedTask{{task: &tasks.Task{ID: "rt-01"}, plan: &runs.Plan{Request: runs.Request{Task: "rt-01", Agent: apitype.AgentNull}}}}, n: 2}
	const runs = 8
	errs := make(chan error, runs)
	var wg sync.WaitGroup
	for range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.submit(ctx, sub)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	accepted := 0
	for err := range errs {
		switch {
		case err == nil:
			accepted++
		case !errors.Is(err, errQueueFull):
			t.Errorf("got error %v, want nil or errQueueFull", err)
		case !strings.Contains(err.Error(), "beyond the limit of 5 (benchd --max-queued)"):
			t.Errorf("got message %q, want the limit named", err)
		}
	}
	if accepted != 2 {
		t.Errorf("got %d runs of 2 accepted with a limit of 5, want 2", accepted)
	}
	if len(s.queue) != 4 || s.reserved != 0 {
		t.Errorf("got %d queued and %d reserved, want 4 and 0", len(s.queue), s.reserved)
	}
	stored, err := st.ListAttempts(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 4 {
		t.Errorf("got %d attempts stored, want 4: a refused run stores nothing", len(stored))
	}
}

// TestSubmitBatch: a run of several tasks is queued task by task, each
// attempt with its task's request, and the queue's limit holds for the
// whole run: one that does not fit is refused with nothing stored.
func TestSubmitBatch(t *testing.T) {
	ctx := t.Context()
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, "queue"), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &server{cfg: Config{StateDir: state, MaxQueued: 9}, store: st, live: map[string]*liveAttempt{}, secrets: &secretSet{}, log: slog.New(slog.DiscardHandler)}
	s.cond = sync.NewCond(&s.mu)
	of := func(ids ...string) submitted {
		sub := submitted{n: 2}
		for _, id := range ids {
			sub.tasks = append(sub.tasks, submittedTask{task: &tasks.Task{ID: id}, plan: &runs.Plan{Request: runs.Request{Task: id, Agent: apitype.AgentNull, Timeout: "1m0s"}}})
		}
		return sub
	}
	run, err := s.submit(ctx, of("rt-02", "rt-01", "rt-03"))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := st.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rt-02", "rt-01", "rt-03"}; !slices.Equal(stored.Tasks, want) || stored.Task != "" || len(stored.Attempts) != 6 {
		t.Fatalf("got run %+v, want tasks %v, no one task, 6 attempts", stored, want)
	}
	var got []string
	for i, id := range stored.Attempts {
		a, err := st.GetAttempt(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := s.storedRequest(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.Task != spec.Task || s.queue[i] != id {
			t.Errorf("attempt %d: got task %s, request of %s, queued %s; want one task and the run's order", i, a.Task, spec.Task, s.queue[i])
		}
		got = append(got, a.Task)
	}
	if want := []string{"rt-02", "rt-02", "rt-01", "rt-01", "rt-03", "rt-03"}; !slices.Equal(got, want) {
		t.Errorf("got the attempts' tasks %v, want %v", got, want)
	}
	// 6 queued: a run of 2 tasks of 2 attempts does not fit in 9 (though
	// the 2 attempts of each task would).
	if _, err := s.submit(ctx, of("rt-01", "rt-04")); !errors.Is(err, errQueueFull) || !strings.Contains(err.Error(), "6 attempts queued and 4 asked for, beyond the limit of 9") {
		t.Errorf("got %v, want the queue full for the whole run", err)
	}
	all, err := st.ListAttempts(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 || len(s.queue) != 6 || s.reserved != 0 {
		t.Errorf("got %d stored, %d queued, %d reserved; want 6, 6, 0: the refused run leaves nothing", len(all), len(s.queue), s.reserved)
	}
}
