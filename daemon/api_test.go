package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"benchd.dev/client/apitype"
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
		if sub.task.ID != "rt-01" || sub.spec.Task != "rt-01" {
			t.Errorf("validate task %q: got task %q, spec %q, want rt-01", id, sub.task.ID, sub.spec.Task)
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
