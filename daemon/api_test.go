package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
)

// TestTaskIDAnyCase: a task named in upper case, as the docs write it
// ("RT-01"), is the task of that id: a run is validated and stored with
// the canonical id, and the attempt list's filter matches it.
func TestTaskIDAnyCase(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &server{cfg: Config{TasksDir: "../tasks", MaxQueued: 10}, log: slog.New(slog.DiscardHandler), store: st}
	for _, id := range []string{"RT-01", "Rt-01-Circular-Counter"} {
		sub, err := s.validate(apitype.RunRequest{Task: id, Agent: apitype.AgentNull})
		if err != nil {
			t.Fatalf("validate task %q: %v", id, err)
		}
		if len(sub.tasks) != 1 || sub.tasks[0].task.ID != "rt-01" || sub.tasks[0].plan.Request.Task != "rt-01" {
			t.Errorf("validate task %q: got tasks %+v, want rt-01 alone", id, sub.tasks)
		}
	}
	if _, err := s.validate(apitype.RunRequest{Task: "RT-01/..", Agent: apitype.AgentNull}); err == nil {
		t.Error("validate task RT-01/..: got no error")
	}

	now := time.Now().UTC()
	for _, a := range []apitype.Attempt{{ID: "a-one", Task: "rt-01", Created: now}, {ID: "a-two", Task: "rt-02", Created: now}} {
		a.State = apitype.StateQueued
		if err := st.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	rec := httptest.NewRecorder()
	s.routes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/attempts?task=RT-01", nil))
	var list apitype.AttemptList
	json.Unmarshal(rec.Body.Bytes(), &list)
	if rec.Code != 200 || len(list.Attempts) != 1 || list.Attempts[0].ID != "a-one" {
		t.Errorf("GET /v1/attempts?task=RT-01: got %d %s, want a-one alone", rec.Code, rec.Body)
	}
}

// TestValidateTasks: a request of several tasks is checked task by task
// before anything is queued: its tasks in order, each given once, the
// unknown ones refused together naming them and the known tasks, the
// queue's limit applied to every attempt of the run.
func TestValidateTasks(t *testing.T) {
	s := &server{cfg: Config{TasksDir: "../tasks", MaxQueued: 6}, log: slog.New(slog.DiscardHandler)}
	tests := []struct {
		name    string
		req     apitype.RunRequest
		want    []string // the tasks validated, in order
		wantErr []string // in the error, when it fails
	}{
		{"in order", apitype.RunRequest{Tasks: []string{"rt-03", "RT-01", "rt-02"}, Attempts: 2}, []string{"rt-03", "rt-01", "rt-02"}, nil},
		{"tasks win over task", apitype.RunRequest{Task: "rt-04", Tasks: []string{"rt-02"}}, []string{"rt-02"}, nil},
		{"one task", apitype.RunRequest{Task: "rt-02"}, []string{"rt-02"}, nil},
		{"unknown tasks", apitype.RunRequest{Tasks: []string{"rt-01", "rt-98", "rt-99"}},
			nil, []string{"unknown tasks rt-98, rt-99", "known tasks: ", "rt-01, ", "rt-02", "not found"}},
		{"unknown task", apitype.RunRequest{Task: "rt-99"}, nil, []string{"unknown task rt-99 (known tasks: rt-01"}},
		{"twice", apitype.RunRequest{Tasks: []string{"rt-01", "RT-01"}}, nil, []string{"task rt-01 given twice"}},
		{"beyond the queue", apitype.RunRequest{Tasks: []string{"rt-01", "rt-02", "rt-03"}, Attempts: 3},
			nil, []string{"3 tasks of 3 attempts make 9 attempts, beyond the queue's limit of 6"}},
		{"a bad id", apitype.RunRequest{Tasks: []string{"rt-01", "../x"}}, nil, []string{`task id "../x" is not valid`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Agent = apitype.AgentNull
			sub, err := s.validate(tt.req)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("got no error, want one saying %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("got error %q, want it to say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			var got []string
			for _, st := range sub.tasks {
				got = append(got, st.plan.Request.Task)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got tasks %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAttemptRef: an attempt is named by its id, a unique prefix of it
// (with or without "a-", at least 4 characters after it) or latest; an
// ambiguous prefix is refused naming the candidates, a short one is
// refused, one of no attempt is not found.
func TestAttemptRef(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &server{cfg: Config{TasksDir: "../tasks"}, log: slog.New(slog.DiscardHandler), store: st, live: map[string]*liveAttempt{}}
	mux := s.routes()
	get := func(ref string) (int, apitype.Attempt, apitype.Error) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/attempts/"+ref, nil))
		var a apitype.Attempt
		var e apitype.Error
		if rec.Code == 200 {
			json.Unmarshal(rec.Body.Bytes(), &a)
		} else {
			json.Unmarshal(rec.Body.Bytes(), &e)
		}
		return rec.Code, a, e
	}
	if code, _, e := get("latest"); code != 404 || !strings.Contains(e.Message, "no attempts yet") {
		t.Errorf("latest of none: got %d %+v, want 404", code, e)
	}
	base := time.Now().UTC()
	ids := []string{"a-3f9c000000000001", "a-3f9c000000000002", "a-77aa000000000003"}
	for i, id := range ids {
		a := apitype.Attempt{ID: id, Task: "rt-01", State: apitype.StateQueued, Created: base.Add(time.Duration(i) * time.Second)}
		if err := st.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		ref    string
		status int
		id     string // the attempt got, with 200
		msg    []string
	}{
		{"a-3f9c000000000001", 200, "a-3f9c000000000001", nil},
		{"3f9c000000000002", 200, "a-3f9c000000000002", nil},
		{"77aa", 200, "a-77aa000000000003", nil},
		{"a-77aa0", 200, "a-77aa000000000003", nil},
		{"latest", 200, "a-77aa000000000003", nil},
		{"3f9c", 400, "", []string{"ambiguous", "a-3f9c000000000002, a-3f9c000000000001"}},
		{"77a", 400, "", []string{"at least 4 characters"}},
		{"a-7", 400, "", []string{"at least 4 characters"}},
		{"dead", 404, "", []string{"dead"}},
		{"a-77aa000000000003x", 404, "", []string{"a-77aa000000000003x"}},
	} {
		code, a, e := get(tc.ref)
		if code != tc.status || a.ID != tc.id {
			t.Errorf("%s: got %d, attempt %q (%+v), want %d %q", tc.ref, code, a.ID, e, tc.status, tc.id)
		}
		for _, w := range tc.msg {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%s: got %q, want it to say %q", tc.ref, e.Message, w)
			}
		}
	}
	// Every attempt endpoint resolves: the transcript of a prefix is the
	// attempt's, that of a prefix of none is not found.
	for ref, want := range map[string]int{"77aa": 200, "latest": 200, "dead": 404, "3f9c": 400} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/attempts/"+ref+"/transcript", nil))
		if rec.Code != want {
			t.Errorf("transcript of %s: got %d %s, want %d", ref, rec.Code, rec.Body, want)
		}
	}
	// More candidates than are named: the list ends with "...".
	for i := range 6 {
		a := apitype.Attempt{ID: fmt.Sprintf("a-beef00000000000%d", i), Task: "rt-01", State: apitype.StateQueued, Created: base}
		if err := st.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, e := get("beef"); code != 400 || !strings.HasSuffix(strings.SplitN(e.Message, ";", 2)[0], ", ...") || strings.Count(e.Message, "a-beef") != 5 {
		t.Errorf("beef: got %d %q, want 5 candidates and \"...\"", code, e.Message)
	}
}

// TestSubmitReservedEnv: a run that names a variable benchd sets itself
// (BENCH_PLAN, the plan's path) is refused where it enters, with a 400,
// and nothing is stored or queued; the engine would refuse it later, and
// the attempt would end an infra error that an automatic retry repeats.
func TestSubmitReservedEnv(t *testing.T) {
	ctx := t.Context()
	state := t.TempDir()
	st, err := store.Open(ctx, store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &server{cfg: Config{StateDir: state, TasksDir: "../tasks", MaxQueued: 10}, log: slog.New(slog.DiscardHandler),
		store: st, live: map[string]*liveAttempt{}, secrets: &secretSet{}}
	s.cond = sync.NewCond(&s.mu)
	for _, name := range runs.ReservedEnv {
		body := `{"task":"rt-01","agent":"builtin:null","env":[{"name":"` + name + `","value":"x"}]}`
		rec := httptest.NewRecorder()
		s.routes().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/runs", strings.NewReader(body)))
		var e apitype.Error
		json.Unmarshal(rec.Body.Bytes(), &e)
		if rec.Code != http.StatusBadRequest || e.Code != apitype.CodeInvalid || !strings.Contains(e.Message, name) {
			t.Errorf("env %s: got %d %s %q, want 400 %s naming it", name, rec.Code, e.Code, e.Message, apitype.CodeInvalid)
		}
	}
	all, err := st.ListAttempts(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 || len(s.queue) != 0 {
		t.Errorf("got %d attempts stored and %d queued, want none", len(all), len(s.queue))
	}
}
