package e2e

import (
	"context"
	"reflect"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// TestTasksCheckStream: POST /v1/tasks/check?stream=1 sends the start
// (every attempt the check submitted), an event as each attempt ends
// (its result and the ended attempt), then the answer, which is the one
// the form without stream=1 sends for the same task: that form still
// answers with one TaskCheck.
func TestTasksCheckStream(t *testing.T) {
	d := shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var evs []apitype.CheckEvent
	tc, err := d.client.CheckTasksStream(ctx, "rt-05", func(ev apitype.CheckEvent) { evs = append(evs, ev) })
	if err != nil {
		t.Fatal(err)
	}
	if len(tc.Results) < 2 || !tc.OK {
		t.Fatalf("got answer %+v, want rt-05's reference and known attempts, as expected", tc)
	}
	if len(evs) != 1+len(tc.Results) {
		t.Fatalf("got %d events, want the start and one per attempt (%d)", len(evs), len(tc.Results))
	}
	start := evs[0]
	if start.Type != apitype.CheckStart || len(start.Attempts) != len(tc.Results) || start.Concurrency < 1 {
		t.Fatalf("got first event %+v, want the start with %d attempts and the concurrency", start, len(tc.Results))
	}
	byID := map[string]apitype.CheckResult{}
	for i, r := range tc.Results {
		if s := start.Attempts[i]; s.Attempt != r.Attempt || s.Task != r.Task || s.Agent != r.Agent || s.WantPass != r.WantPass {
			t.Errorf("start attempt %d: got %+v, want the answer's %+v before its verdict", i, s, r)
		}
		byID[r.Attempt] = r
	}
	seen := map[string]bool{}
	for _, ev := range evs[1:] {
		if ev.Type != apitype.CheckAttempt || ev.Result == nil || ev.Ended == nil {
			t.Errorf("got event %+v, want an attempt's end", ev)
			continue
		}
		want, ok := byID[ev.Result.Attempt]
		if !ok || seen[ev.Result.Attempt] || !reflect.DeepEqual(*ev.Result, want) {
			t.Errorf("got result %+v, want one of the answer's, once (%+v)", *ev.Result, want)
		}
		seen[ev.Result.Attempt] = true
		if ev.Ended.ID != ev.Result.Attempt || ev.Ended.State != apitype.StateDone || ev.Ended.Finished == nil {
			t.Errorf("got ended attempt %s state %s, want %s done", ev.Ended.ID, ev.Ended.State, ev.Result.Attempt)
		}
	}

	plain, err := d.client.CheckTasks(ctx, "rt-05")
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Results) != len(tc.Results) || !plain.OK {
		t.Fatalf("without stream=1: got %+v, want one answer of %d results", plain, len(tc.Results))
	}
	for i, r := range plain.Results {
		if w := tc.Results[i]; r.Task != w.Task || r.Agent != w.Agent || r.OK != w.OK || r.Attempt == w.Attempt {
			t.Errorf("without stream=1, result %d: got %+v, want %s %s ok %v in a new attempt", i, r, w.Task, w.Agent, w.OK)
		}
	}
}
