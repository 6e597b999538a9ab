package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
)

// fakeDaemon is a benchd stand-in serving the API on a unix socket in a
// temp dir. Handlers record what they were asked.
type fakeDaemon struct {
	Socket string
	mux    *http.ServeMux

	mu       sync.Mutex
	requests []string // "METHOD PATH?QUERY"
	bodies   []string
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{Socket: filepath.Join(t.TempDir(), "d.sock"), mux: http.NewServeMux()}
	l, err := net.Listen("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.requests = append(d.requests, r.Method+" "+r.URL.RequestURI())
		d.bodies = append(d.bodies, string(b))
		d.mu.Unlock()
		d.mux.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return d
}

func (d *fakeDaemon) last() (string, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.requests) == 0 {
		return "", ""
	}
	return d.requests[len(d.requests)-1], d.bodies[len(d.bodies)-1]
}

func (d *fakeDaemon) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.requests)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func TestZeroValueUsesEnvSocket(t *testing.T) {
	d := newFakeDaemon(t)
	d.mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Status{Version: "test", Concurrency: 2})
	})
	t.Setenv(apitype.SocketEnv, d.Socket)
	var c client.Client
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != "test" || st.Concurrency != 2 {
		t.Errorf("got status %+v, want version test, concurrency 2", st)
	}
}

func TestSocketPath(t *testing.T) {
	tests := []struct {
		name, socket, env, want string
	}{
		{"default", "", "", apitype.DefaultSocket},
		{"env", "", "/tmp/env.sock", "/tmp/env.sock"},
		{"field wins", "/tmp/field.sock", "/tmp/env.sock", "/tmp/field.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(apitype.SocketEnv, tt.env)
			c := client.Client{Socket: tt.socket}
			if got := c.SocketPath(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNotRunning(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	tests := []struct{ name, socket string }{
		{"missing socket", filepath.Join(dir, "nothing.sock")},
		{"nobody listening", stale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := client.Client{Socket: tt.socket}
			_, err := c.Status(context.Background())
			if !errors.Is(err, client.ErrNotRunning) {
				t.Fatalf("got %v, want an error matching ErrNotRunning", err)
			}
			if want := "benchd is not running at " + tt.socket; err.Error() != want {
				t.Errorf("got %q, want %q", err, want)
			}
		})
	}
}

func TestErrorClasses(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    error
		wantMsg string
	}{
		{"invalid", 400, `{"code":"invalid","message":"unknown task \"rt-99\""}`, client.ErrInvalid, `unknown task "rt-99"`},
		{"forbidden", 403, `{"code":"forbidden","message":"uid 1000 is not in group benchd"}`, client.ErrForbidden, "uid 1000 is not in group benchd"},
		{"not found", 404, `{"code":"not_found","message":"no attempt a-9"}`, client.ErrNotFound, "no attempt a-9"},
		{"conflict", 409, `{"code":"conflict","message":"attempt a-1 is done"}`, client.ErrConflict, "attempt a-1 is done"},
		{"too large", 413, `{"code":"too_large","message":"body over 1048576 bytes"}`, client.ErrTooLarge, "body over 1048576 bytes"},
		{"busy", 503, `{"code":"busy","message":"shutting down"}`, client.ErrBusy, "shutting down"},
		{"internal", 500, `{"code":"internal","message":"disk full"}`, client.ErrInternal, "disk full"},
		{"unknown code by status", 409, `{"code":"teapot","message":"odd"}`, client.ErrConflict, "odd"},
		{"plain text body", 404, "404 page not found\n", client.ErrNotFound, "benchd answered 404 Not Found: 404 page not found"},
		{"empty body", 503, "", client.ErrBusy, "benchd answered 503 Service Unavailable: Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t)
			d.mux.HandleFunc("GET /v1/attempts/{id}", func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			c := client.Client{Socket: d.Socket}
			_, err := c.Attempt(context.Background(), "a-1")
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want an error matching %v", err, tt.want)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("got message %q, want %q", err, tt.wantMsg)
			}
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != tt.status {
				t.Errorf("got %#v, want a *client.Error with status %d", err, tt.status)
			}
		})
	}
}

func TestBadIDsNeverSent(t *testing.T) {
	d := newFakeDaemon(t)
	c := client.Client{Socket: d.Socket}
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
	}{
		{"empty attempt", func() error { _, err := c.Attempt(ctx, ""); return err }},
		{"slash", func() error { _, err := c.Attempt(ctx, "../runs/x"); return err }},
		{"dot dot", func() error { _, err := c.Cancel(ctx, ".."); return err }},
		{"query", func() error { _, err := c.Journal(ctx, "a?x=1"); return err }},
		{"bad sha", func() error { _, err := c.Blob(ctx, "a-1", "ABC"); return err }},
		{"empty run", func() error { _, err := c.Run(ctx, ""); return err }},
		{"run status slash", func() error { _, err := c.RunStatus(ctx, "r-1/x"); return err }},
		{"cancel empty run", func() error { _, err := c.CancelRun(ctx, ""); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, client.ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
		})
	}
	if n := d.count(); n != 0 {
		t.Errorf("got %d requests to benchd, want 0", n)
	}
}

func TestEndpoints(t *testing.T) {
	d := newFakeDaemon(t)
	created := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	d.mux.HandleFunc("POST /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 201, apitype.Run{ID: "r-1", Task: "rt-01", Agent: "builtin:null", Attempts: []string{"a-1", "a-2"}, Created: created})
	})
	d.mux.HandleFunc("GET /v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Run{ID: r.PathValue("id")})
	})
	d.mux.HandleFunc("GET /v1/attempts", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.AttemptList{Attempts: []apitype.Attempt{{ID: "a-2"}, {ID: "a-1"}}})
	})
	d.mux.HandleFunc("GET /v1/attempts/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Attempt{ID: r.PathValue("id"), Pass: true, Reasons: []apitype.Reason{}})
	})
	d.mux.HandleFunc("POST /v1/attempts/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Attempt{ID: r.PathValue("id"), State: apitype.StateCanceled})
	})
	d.mux.HandleFunc("GET /v1/runs/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.RunStatus{Run: apitype.Run{ID: r.PathValue("id")}, Attempts: []apitype.Attempt{{ID: "a-1", State: apitype.StateDone}}, Ended: true})
	})
	d.mux.HandleFunc("POST /v1/runs/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.RunCancel{Run: r.PathValue("id"), Canceled: []apitype.Attempt{{ID: "a-2", State: apitype.StateCanceled}}})
	})
	d.mux.HandleFunc("POST /v1/runs/{id}/retry", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Retry{Run: r.PathValue("id"), Retried: []apitype.RetriedPair{{Of: "a-1", Attempt: "a-9"}}})
	})
	d.mux.HandleFunc("POST /v1/attempts/{id}/regrade", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Regrade{Attempt: r.PathValue("id"), Same: true})
	})
	d.mux.HandleFunc("POST /v1/attempts/{id}/review", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Attempt{ID: r.PathValue("id"), State: apitype.StateDone, Pass: true, Outcome: apitype.OutcomePass,
			Review: &apitype.Review{Outcome: apitype.OutcomePass, Why: "ok", UID: 1000}})
	})
	d.mux.HandleFunc("GET /v1/attempts/{id}/journal", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "line1\nline2\n")
	})
	d.mux.HandleFunc("GET /v1/attempts/{id}/blobs/{sha}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "blob "+r.PathValue("sha")[:4])
	})
	d.mux.HandleFunc("GET /v1/attempts/{id}/transcript", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Transcript{Stdout: "hello\n", StderrTruncated: true})
	})
	d.mux.HandleFunc("GET /v1/attempts/{id}/export", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "TAR")
	})
	d.mux.HandleFunc("GET /v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.TaskList{Tasks: []apitype.TaskInfo{{ID: "rt-01"}}})
	})
	d.mux.HandleFunc("POST /v1/prune", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.Prune{Attempts: []string{"a-1"}, BlobBytes: 10, WorkBytes: 5})
	})
	d.mux.HandleFunc("POST /v1/tasks/check", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, apitype.TaskCheck{OK: true, Results: []apitype.CheckResult{{Task: r.URL.Query().Get("task"), OK: true}}})
	})

	c := client.Client{Socket: d.Socket}
	ctx := context.Background()
	sha := strings.Repeat("ab", 32)
	readAll := func(rc io.ReadCloser, err error) (string, error) {
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	tests := []struct {
		name     string
		call     func() (any, error)
		want     any
		wantReq  string
		wantBody string
	}{
		{"create run", func() (any, error) {
			r, err := c.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: "builtin:null", Attempts: 2, Env: []apitype.EnvVar{{Name: "K", Value: "v"}}})
			return r.Attempts, err
		}, []string{"a-1", "a-2"}, "POST /v1/runs",
			`{"task":"rt-01","agent":"builtin:null","attempts":2,"env":[{"name":"K","value":"v"}]}`},
		{"create run of tasks", func() (any, error) {
			r, err := c.CreateRun(ctx, apitype.RunRequest{Tasks: []string{"rt-01", "rt-02"}, Agent: "builtin:null"})
			return r.Attempts, err
		}, []string{"a-1", "a-2"}, "POST /v1/runs",
			`{"task":"","tasks":["rt-01","rt-02"],"agent":"builtin:null"}`},
		{"run", func() (any, error) { r, err := c.Run(ctx, "r-7"); return r.ID, err }, "r-7", "GET /v1/runs/r-7", ""},
		{"run status", func() (any, error) {
			st, err := c.RunStatus(ctx, "r-7")
			return fmt.Sprintf("%s %d %v", st.Run.ID, len(st.Attempts), st.Ended), err
		}, "r-7 1 true", "GET /v1/runs/r-7/status", ""},
		{"cancel run", func() (any, error) {
			rc, err := c.CancelRun(ctx, "r-7")
			return fmt.Sprintf("%s %d", rc.Run, len(rc.Canceled)), err
		}, "r-7 1", "POST /v1/runs/r-7/cancel", ""},
		{"retry", func() (any, error) { r, err := c.Retry(ctx, "r-7"); return r.Run + " " + r.Retried[0].Attempt, err }, "r-7 a-9", "POST /v1/runs/r-7/retry", ""},
		{"attempts filtered", func() (any, error) {
			as, err := c.Attempts(ctx, client.AttemptFilter{Run: "r-1", Task: "rt-02", Limit: 5})
			var ids []string
			for _, a := range as {
				ids = append(ids, a.ID)
			}
			return ids, err
		}, []string{"a-2", "a-1"}, "GET /v1/attempts?limit=5&run=r-1&task=rt-02", ""},
		{"attempts, every filter", func() (any, error) {
			as, err := c.Attempts(ctx, client.AttemptFilter{Task: "rt-01", Tasks: []string{"rt-02"}, Agent: "claude -p", Model: "m",
				States: []string{"done", "canceled"}, Purposes: []string{"check"}, Since: created, Until: created.Add(time.Hour)})
			return len(as), err
		}, 2, "GET /v1/attempts?agent=claude+-p&model=m&purpose=check&since=2026-11-29T12%3A00%3A00Z&state=done&state=canceled&task=rt-01&task=rt-02&until=2026-11-29T13%3A00%3A00Z", ""},
		{"prune", func() (any, error) {
			p, err := c.Prune(ctx, apitype.PruneRequest{Before: created, Purposes: []string{"check"}, DryRun: true})
			return fmt.Sprint(p.Attempts, p.Bytes()), err
		}, "[a-1] 15", "POST /v1/prune", `{"before":"2026-11-29T12:00:00Z","purposes":["check"],"dry_run":true}`},
		{"attempts unfiltered", func() (any, error) { as, err := c.Attempts(ctx, client.AttemptFilter{}); return len(as), err }, 2, "GET /v1/attempts", ""},
		{"attempt", func() (any, error) { a, err := c.Attempt(ctx, "a-3"); return a.ID + fmt.Sprint(a.Pass), err }, "a-3true", "GET /v1/attempts/a-3", ""},
		{"cancel", func() (any, error) { a, err := c.Cancel(ctx, "a-3"); return a.State, err }, apitype.StateCanceled, "POST /v1/attempts/a-3/cancel", ""},
		{"regrade", func() (any, error) { r, err := c.Regrade(ctx, "a-3"); return r.Same, err }, true, "POST /v1/attempts/a-3/regrade", ""},
		{"review", func() (any, error) {
			a, err := c.Review(ctx, "a-3", apitype.ReviewRequest{Outcome: apitype.OutcomePass, Why: "both readings named"})
			if err != nil {
				return nil, err
			}
			return fmt.Sprintf("%s %s uid %d", a.ID, a.Outcome, a.Review.UID), nil
		}, "a-3 pass uid 1000", "POST /v1/attempts/a-3/review", `{"outcome":"pass","why":"both readings named"}`},
		{"journal", func() (any, error) { return readAll(c.Journal(ctx, "a-3")) }, "line1\nline2\n", "GET /v1/attempts/a-3/journal", ""},
		{"blob", func() (any, error) { return readAll(c.Blob(ctx, "a-3", sha)) }, "blob abab", "GET /v1/attempts/a-3/blobs/" + sha, ""},
		{"transcript", func() (any, error) {
			tr, err := c.Transcript(ctx, "a-3")
			return tr.Stdout + fmt.Sprint(tr.StderrTruncated), err
		}, "hello\ntrue", "GET /v1/attempts/a-3/transcript", ""},
		{"export", func() (any, error) { return readAll(c.Export(ctx, "a-3")) }, "TAR", "GET /v1/attempts/a-3/export", ""},
		{"tasks", func() (any, error) { ts, err := c.Tasks(ctx); return ts[0].ID, err }, "rt-01", "GET /v1/tasks", ""},
		{"check one", func() (any, error) { tc, err := c.CheckTasks(ctx, "rt-04"); return tc.Results[0].Task, err }, "rt-04", "POST /v1/tasks/check?task=rt-04", ""},
		{"check all", func() (any, error) { tc, err := c.CheckTasks(ctx, ""); return tc.OK, err }, true, "POST /v1/tasks/check", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
			req, body := d.last()
			if req != tt.wantReq {
				t.Errorf("got request %q, want %q", req, tt.wantReq)
			}
			if strings.TrimSpace(body) != tt.wantBody {
				t.Errorf("got body %q, want %q", body, tt.wantBody)
			}
		})
	}
}

func TestEvents(t *testing.T) {
	final := &apitype.Attempt{ID: "a-1", State: apitype.StateDone, Pass: true}
	full := []apitype.Event{
		{Attempt: "a-1", State: apitype.StateQueued},
		{Attempt: "a-1", State: apitype.StateRunning, Phase: apitype.PhaseRun, ElapsedMS: 120, MemoryBytes: 1 << 20, Edits: 2},
		{Attempt: "a-1", State: apitype.StateDone, Done: true, Final: final},
	}
	tests := []struct {
		name    string
		events  []apitype.Event
		blank   bool // a keep-alive blank line between events
		wantErr error
	}{
		{"until done", full, false, io.EOF},
		{"with keep-alives", full, true, io.EOF},
		{"cut short", full[:2], false, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t)
			d.mux.HandleFunc("GET /v1/attempts/{id}/events", func(w http.ResponseWriter, r *http.Request) {
				enc := json.NewEncoder(w)
				for _, ev := range tt.events {
					enc.Encode(ev)
					if tt.blank {
						io.WriteString(w, "\n")
					}
					w.(http.Flusher).Flush()
				}
			})
			c := client.Client{Socket: d.Socket}
			es, err := c.Events(context.Background(), "a-1")
			if err != nil {
				t.Fatal(err)
			}
			defer es.Close()
			var got []apitype.Event
			for {
				ev, err := es.Next()
				if err != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Errorf("got end %v, want %v", err, tt.wantErr)
					}
					break
				}
				got = append(got, ev)
			}
			if !reflect.DeepEqual(got, tt.events) {
				t.Errorf("got events %+v, want %+v", got, tt.events)
			}
			if _, err := es.Next(); !errors.Is(err, tt.wantErr) {
				t.Errorf("got %v after the end, want %v again", err, tt.wantErr)
			}
		})
	}
}

func TestEventsAll(t *testing.T) {
	d := newFakeDaemon(t)
	d.mux.HandleFunc("GET /v1/attempts/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		enc := json.NewEncoder(w)
		enc.Encode(apitype.Event{Attempt: "a-1", State: apitype.StateRunning, Phase: apitype.PhaseRun})
		if r.PathValue("id") == "a-1" {
			enc.Encode(apitype.Event{Attempt: "a-1", State: apitype.StateDone, Done: true})
		}
	})
	tests := []struct {
		id         string
		wantStates []string
		wantErr    error
	}{
		{"a-1", []string{apitype.StateRunning, apitype.StateDone}, nil},
		{"a-2", []string{apitype.StateRunning}, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			c := client.Client{Socket: d.Socket}
			es, err := c.Events(context.Background(), tt.id)
			if err != nil {
				t.Fatal(err)
			}
			defer es.Close()
			var states []string
			var gotErr error
			for ev, err := range es.All() {
				if err != nil {
					gotErr = err
					break
				}
				states = append(states, ev.State)
			}
			if !reflect.DeepEqual(states, tt.wantStates) {
				t.Errorf("got states %q, want %q", states, tt.wantStates)
			}
			if !errors.Is(gotErr, tt.wantErr) || (tt.wantErr == nil) != (gotErr == nil) {
				t.Errorf("got error %v, want %v", gotErr, tt.wantErr)
			}
		})
	}
}

func TestEventsCanceled(t *testing.T) {
	d := newFakeDaemon(t)
	d.mux.HandleFunc("GET /v1/attempts/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(apitype.Event{Attempt: "a-1", State: apitype.StateRunning})
		w.(http.Flusher).Flush()
		<-r.Context().Done() // never ends on its own
	})
	ctx, cancel := context.WithCancel(context.Background())
	c := client.Client{Socket: d.Socket}
	es, err := c.Events(ctx, "a-1")
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	if _, err := es.Next(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := es.Next(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("got %v after cancel, want a read error", err)
	}
}

func TestErrorOnStreamEndpoint(t *testing.T) {
	d := newFakeDaemon(t)
	d.mux.HandleFunc("GET /v1/attempts/{id}/journal", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, apitype.Error{Code: apitype.CodeNotFound, Message: "no journal for attempt a-5"})
	})
	c := client.Client{Socket: d.Socket}
	_, err := c.Journal(context.Background(), "a-5")
	if !errors.Is(err, client.ErrNotFound) || err.Error() != "no journal for attempt a-5" {
		t.Errorf("got %v, want ErrNotFound with benchd's message", err)
	}
}

func TestHostKey(t *testing.T) {
	d := newFakeDaemon(t)
	want := apitype.HostKey{Algorithm: "ed25519", PublicKey: strings.Repeat("ab", 32), KeyID: strings.Repeat("cd", 32)}
	d.mux.HandleFunc("GET /v1/key", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, want) })
	c := &client.Client{Socket: d.Socket}
	got, err := c.HostKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if req, _ := d.last(); req != "GET /v1/key" {
		t.Errorf("got request %q, want GET /v1/key", req)
	}
}

// TestAttemptNulls: pass, exit_code and wall_ms are null where they do
// not exist, and read back as the zero value.
func TestAttemptNulls(t *testing.T) {
	tests := []struct {
		name             string
		a                apitype.Attempt
		pass, exit, wall string
	}{
		{"queued", apitype.Attempt{State: apitype.StateQueued, ExitCode: -1}, "null", "null", "null"},
		{"canceled before the agent ended", apitype.Attempt{State: apitype.StateCanceled}, "null", "null", "null"},
		{"infra error after the agent ended", apitype.Attempt{State: apitype.StateInfraError, ExitCode: 3, WallMS: 40}, "null", "3", "40"},
		{"done", apitype.Attempt{State: apitype.StateDone, Pass: true, WallMS: 5}, "true", "0", "5"},
		{"done and failed", apitype.Attempt{State: apitype.StateDone, ExitCode: 1}, "false", "1", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			json.Unmarshal(b, &m)
			for k, want := range map[string]string{"pass": tt.pass, "exit_code": tt.exit, "wall_ms": tt.wall} {
				if string(m[k]) != want {
					t.Errorf("%s: got %s, want %s", k, m[k], want)
				}
			}
			var back apitype.Attempt
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			b2, _ := json.Marshal(back)
			if string(b2) != string(b) {
				t.Errorf("round trip: got %s, want %s", b2, b)
			}
		})
	}
}

// TestReviewConflict: a review benchd refuses as a conflict (not in
// review, reviewed already) comes back as ErrConflict with benchd's
// message.
func TestReviewConflict(t *testing.T) {
	d := newFakeDaemon(t)
	d.mux.HandleFunc("POST /v1/attempts/{id}/review", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 409, apitype.Error{Code: apitype.CodeConflict, Message: "attempt a-3: it was reviewed already"})
	})
	c := client.Client{Socket: d.Socket}
	_, err := c.Review(context.Background(), "a-3", apitype.ReviewRequest{Outcome: apitype.OutcomeFail, Why: "x"})
	if !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "reviewed already") {
		t.Errorf("got %v, want ErrConflict with benchd's message", err)
	}
	if _, err := c.Review(context.Background(), "../x", apitype.ReviewRequest{}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("bad id: got %v, want ErrInvalid before any request", err)
	}
}

// TestCheckTasksStream: the events before the answer go to progress, in
// order; the "end" event is the answer; an "error" event is an *Error of
// its class; a stream cut before its end is an error; a benchd that
// answers with one object (from before the stream) is read as CheckTasks.
func TestCheckTasksStream(t *testing.T) {
	ended := apitype.Attempt{ID: "a-2", State: apitype.StateDone, Pass: true}
	res := apitype.CheckResult{Task: "rt-04", Attempt: "a-2", WantPass: true, GotPass: true, OK: true}
	answer := apitype.TaskCheck{OK: true, Results: []apitype.CheckResult{res}}
	tests := []struct {
		name       string
		events     []apitype.CheckEvent // nil: one TaskCheck object
		wantTypes  string
		wantErr    error
		wantAnswer bool
	}{
		{"answer", []apitype.CheckEvent{
			{Type: apitype.CheckStart, Attempts: []apitype.CheckResult{res}, Concurrency: 2},
			{Type: apitype.CheckAttempt, Result: &res, Ended: &ended},
			{Type: apitype.CheckEnd, Check: &answer},
		}, "start,attempt", nil, true},
		{"error", []apitype.CheckEvent{
			{Type: apitype.CheckStart, Attempts: []apitype.CheckResult{res}},
			{Type: apitype.CheckError, Error: &apitype.Error{Code: apitype.CodeBusy, Message: "attempt a-2 did not end"}},
		}, "start", client.ErrBusy, false},
		{"cut", []apitype.CheckEvent{{Type: apitype.CheckStart}}, "start", io.ErrUnexpectedEOF, false},
		{"one object", nil, "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newFakeDaemon(t)
			d.mux.HandleFunc("POST /v1/tasks/check", func(w http.ResponseWriter, r *http.Request) {
				if tt.events == nil {
					writeJSON(w, 200, answer)
					return
				}
				w.Header().Set("Content-Type", "application/x-ndjson")
				for _, ev := range tt.events {
					json.NewEncoder(w).Encode(ev)
				}
			})
			c := client.Client{Socket: d.Socket}
			var types []string
			tc, err := c.CheckTasksStream(context.Background(), "rt-04", func(ev apitype.CheckEvent) { types = append(types, ev.Type) })
			if req, _ := d.last(); req != "POST /v1/tasks/check?stream=1&task=rt-04" {
				t.Errorf("got request %q, want the stream of rt-04's check", req)
			}
			if got := strings.Join(types, ","); got != tt.wantTypes {
				t.Errorf("got events %q, want %q", got, tt.wantTypes)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantAnswer && !reflect.DeepEqual(tc, answer) {
				t.Errorf("got %+v, want %+v", tc, answer)
			}
		})
	}
}

// TestGet: Get hands back the response of any GET below /v1/ as benchd
// sent it, its escaped path and query as given; an error response is
// the error of its class, and a path outside the API is never sent.
func TestGet(t *testing.T) {
	d := newFakeDaemon(t)
	d.mux.HandleFunc("GET /v1/attempts/{id}/model", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"attempt":"`+r.PathValue("id")+`","calls":[]}`)
	})
	c := &client.Client{Socket: d.Socket}
	ctx := context.Background()
	resp, err := c.Get(ctx, "/v1/attempts/a-1/model", url.Values{"x": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := string(b), `{"attempt":"a-1","calls":[]}`; got != want {
		t.Errorf("got body %s, want %s", got, want)
	}
	if got, _ := d.last(); got != "GET /v1/attempts/a-1/model?x=1" {
		t.Errorf("got request %q, want GET /v1/attempts/a-1/model?x=1", got)
	}

	_, err = c.Get(ctx, "/v1/attempts/a-1/model/3/request", nil)
	if !errors.Is(err, client.ErrNotFound) {
		t.Errorf("an endpoint benchd does not have: got %v, want ErrNotFound", err)
	}
	n := d.count()
	for _, p := range []string{"/metrics", "v1/status", "/v1/status?x=1", "/v1/status#x"} {
		if _, err := c.Get(ctx, p, nil); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("Get(%q): got %v, want ErrInvalid", p, err)
		}
	}
	if d.count() != n {
		t.Errorf("got %d requests sent for bad paths, want none", d.count()-n)
	}
}
