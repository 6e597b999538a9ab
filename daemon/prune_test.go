package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
)

// newStoreServer is a server with a store in a new state directory and
// no engine: enough for submit, the attempt list and prune.
func newStoreServer(t *testing.T) *server {
	t.Helper()
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, "queue"), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := &server{cfg: Config{StateDir: state, TasksDir: "../tasks", MaxQueued: 50}, store: st, live: map[string]*liveAttempt{},
		secrets: &secretSet{}, log: slog.New(slog.DiscardHandler)}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// serve sends one request to s's routes and returns the response.
func serve(s *server, method, target string, body any) *httptest.ResponseRecorder {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	rec := httptest.NewRecorder()
	s.routes().ServeHTTP(rec, httptest.NewRequest(method, target, rd))
	return rec
}

// message is the message of the error response rec holds.
func message(rec *httptest.ResponseRecorder) string {
	var e apitype.Error
	json.Unmarshal(rec.Body.Bytes(), &e)
	return e.Message
}

// TestRunPurpose: a request's purpose is checked where it enters (empty
// is run, an unknown one invalid and named) and stored with each of its
// attempts; the check's own requests are checks.
func TestRunPurpose(t *testing.T) {
	s := newStoreServer(t)
	tests := []struct {
		purpose, want string
		wantErr       bool
	}{
		{"", apitype.PurposeRun, false},
		{apitype.PurposeCheck, apitype.PurposeCheck, false},
		{apitype.PurposeIndex, apitype.PurposeIndex, false},
		{"fun", "", true},
	}
	for _, tt := range tests {
		t.Run("purpose "+tt.purpose, func(t *testing.T) {
			sub, err := s.validate(apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentNull, Purpose: tt.purpose})
			if tt.wantErr {
				if !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), `"fun"`) {
					t.Fatalf("got %v, want invalid naming the purpose", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			run, err := s.submit(t.Context(), sub)
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.store.GetAttempt(t.Context(), run.Attempts[0])
			if err != nil {
				t.Fatal(err)
			}
			if a.Purpose != tt.want {
				t.Errorf("got purpose %q, want %q", a.Purpose, tt.want)
			}
		})
	}
}

// TestListFilterParams: every filter parameter reaches the store, and a
// bad value is invalid and named.
func TestListFilterParams(t *testing.T) {
	s := newStoreServer(t)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, a := range []apitype.Attempt{
		{ID: "a-run", Task: "rt-01", Agent: apitype.AgentIdentity{Spec: "claude -p", Model: "opus"}},
		{ID: "a-check", Task: "rt-01", Agent: apitype.AgentIdentity{Spec: "builtin:attempt:x"}, Purpose: apitype.PurposeCheck},
		{ID: "a-index", Task: "rt-02", Agent: apitype.AgentIdentity{Spec: apitype.AgentReference}, Purpose: apitype.PurposeIndex},
	} {
		a.Created = t0.Add(time.Duration(i) * time.Hour)
		if err := s.store.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		query    string
		want     string // ids, comma-separated
		wantCode int
		wantMsg  string
	}{
		{query: "", want: "a-index,a-check,a-run", wantCode: 200},
		{query: "purpose=run", want: "a-run", wantCode: 200},
		{query: "purpose=check&purpose=index", want: "a-index,a-check", wantCode: 200},
		{query: "agent=" + url.QueryEscape("claude -p"), want: "a-run", wantCode: 200},
		{query: "model=opus", want: "a-run", wantCode: 200},
		{query: "task=RT-02&task=rt-01&purpose=index", want: "a-index", wantCode: 200},
		{query: "state=queued&since=" + url.QueryEscape(t0.Add(time.Hour).Format(time.RFC3339)), want: "a-index,a-check", wantCode: 200},
		{query: "until=" + url.QueryEscape(t0.Add(time.Hour).Format(time.RFC3339)), want: "a-run", wantCode: 200},
		{query: "purpose=fun", wantCode: 400, wantMsg: `purpose "fun"`},
		{query: "state=sleeping", wantCode: 400, wantMsg: `state "sleeping"`},
		{query: "since=yesterday", wantCode: 400, wantMsg: `since "yesterday"`},
		{query: "until=2026-11-29", wantCode: 400, wantMsg: `until "2026-11-29"`},
		{query: "task=..%2Fx", wantCode: 400, wantMsg: "not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			rec := serve(s, http.MethodGet, "/v1/attempts?"+tt.query, nil)
			if rec.Code != tt.wantCode {
				t.Fatalf("got %d %s, want %d", rec.Code, rec.Body, tt.wantCode)
			}
			if tt.wantCode != 200 {
				if !strings.Contains(message(rec), tt.wantMsg) {
					t.Errorf("got %s, want it to name %s", rec.Body, tt.wantMsg)
				}
				return
			}
			var list apitype.AttemptList
			json.Unmarshal(rec.Body.Bytes(), &list)
			var ids []string
			for _, a := range list.Attempts {
				ids = append(ids, a.ID)
			}
			if got := strings.Join(ids, ","); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestPruneEndpoint: POST /v1/prune deletes the ended attempts before
// its time and their work directories, says what it freed, keeps a
// running attempt and its directory, and a dry run deletes nothing.
func TestPruneEndpoint(t *testing.T) {
	s := newStoreServer(t)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	work := func(id string) string { return filepath.Join(s.cfg.StateDir, "attempts", id) }
	for _, a := range []apitype.Attempt{
		{ID: "a-done", Task: "rt-01", State: apitype.StateDone},
		{ID: "a-running", Task: "rt-01", State: apitype.StateRunning},
		{ID: "a-new", Task: "rt-01", State: apitype.StateDone, Created: t0.Add(48 * time.Hour)},
	} {
		if a.Created.IsZero() {
			a.Created = t0
		}
		final := a.State
		a.State = apitype.StateQueued
		if err := s.store.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		a.State = final
		if err := s.store.UpdateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(work(a.ID), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work(a.ID), "stdout"), bytes.Repeat([]byte("x"), 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := t0.Add(24 * time.Hour)
	prune := func(req apitype.PruneRequest) apitype.Prune {
		t.Helper()
		rec := serve(s, http.MethodPost, "/v1/prune", req)
		if rec.Code != 200 {
			t.Fatalf("got %d %s, want 200", rec.Code, rec.Body)
		}
		var p apitype.Prune
		json.Unmarshal(rec.Body.Bytes(), &p)
		return p
	}
	p := prune(apitype.PruneRequest{Before: before, DryRun: true})
	if strings.Join(p.Attempts, ",") != "a-done" || !p.DryRun || p.WorkBytes < 64<<10 {
		t.Errorf("dry run: got %+v, want a-done and at least 64 KiB of its work directory", p)
	}
	if _, err := os.Stat(work("a-done")); err != nil {
		t.Errorf("after a dry run: %v, want the work directory kept", err)
	}
	p = prune(apitype.PruneRequest{Before: before})
	if strings.Join(p.Attempts, ",") != "a-done" || p.DryRun || p.WorkBytes < 64<<10 {
		t.Errorf("got %+v, want a-done and at least 64 KiB of its work directory", p)
	}
	if _, err := os.Stat(work("a-done")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pruned attempt's work directory: got %v, want it gone", err)
	}
	for _, id := range []string{"a-running", "a-new"} {
		if _, err := os.Stat(work(id)); err != nil {
			t.Errorf("kept attempt %s: %v, want its work directory kept", id, err)
		}
		if _, err := s.store.GetAttempt(ctx, id); err != nil {
			t.Errorf("kept attempt %s: %v", id, err)
		}
	}
	for _, tt := range []struct {
		name string
		body any
		msg  string
	}{
		{"no time", apitype.PruneRequest{}, "a time to prune before"},
		{"unknown purpose", apitype.PruneRequest{Before: before, Purposes: []string{"fun"}}, `purpose "fun"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(s, http.MethodPost, "/v1/prune", tt.body)
			if rec.Code != 400 || !strings.Contains(message(rec), tt.msg) {
				t.Errorf("got %d %s, want 400 naming %s", rec.Code, rec.Body, tt.msg)
			}
		})
	}
}

// TestInUse: a work directory with a file system mounted in it, or of
// an attempt still in memory, is in use; a plain one is not.
func TestInUse(t *testing.T) {
	dir := t.TempDir()
	if why := inUse(dir, false); why != "" {
		t.Errorf("plain directory: got %q, want not in use", why)
	}
	if why := inUse(dir, true); !strings.Contains(why, "in memory") {
		t.Errorf("live attempt: got %q, want in memory", why)
	}
	// /proc is another file system than any temporary directory.
	if why := inUse("/", false); !strings.Contains(why, "mounted") {
		t.Errorf("/: got %q, want one of its directories mounted", why)
	}
}
