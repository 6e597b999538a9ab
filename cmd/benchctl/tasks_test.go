package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// TestTasksCheckProgress: tasks check follows the check's stream: off a
// terminal a line per ended attempt, in the order they end, then the
// table; with --json the events, one a line, the answer last; on a
// terminal the status line redrawn in place.
func TestTasksCheckProgress(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)

	t.Run("plain", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, d.Socket, nil, false, "tasks", "check")
		if code != exitNo {
			t.Fatalf("got exit %d, want %d (stderr %q)", code, exitNo, stderr)
		}
		want := []string{
			"tasks check: 2 attempts of 1 task (the reference and each known attempt), 2 at once",
			"a-11 rt-01 builtin:attempt:off-by-one: pass, want fail(tests_failed): MISMATCH in 1.5s [1 of 2 done]",
			"a-10 rt-01 builtin:reference: pass, want pass: ok in 1.5s [2 of 2 done]",
			"tasks check: 2 of 2 done, 2 passed; 1 not as expected",
			"TASK", "1 of 2 verdicts differ",
		}
		at := 0
		for _, w := range want {
			i := strings.Index(stdout[at:], w)
			if i < 0 {
				t.Fatalf("got\n%s\nwant %q after byte %d", stdout, w, at)
			}
			at += i + len(w)
		}
		if strings.Contains(stdout, "\x1b[") {
			t.Errorf("got terminal escapes off a terminal:\n%q", stdout)
		}
		d.mu.Lock()
		last := d.requests[len(d.requests)-1]
		d.mu.Unlock()
		if last != "POST /v1/tasks/check" {
			t.Errorf("got last request %q, want the check", last)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, d.Socket, nil, false, "tasks", "check", "--json")
		if code != exitNo {
			t.Fatalf("got exit %d, want %d (stderr %q)", code, exitNo, stderr)
		}
		var types, attempts []string
		var last checkEvent
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var ev checkEvent
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("line %q is not a JSON object: %v", l, err)
			}
			types = append(types, ev.Type)
			if ev.Type == "attempt" {
				if ev.Result == nil || ev.Attempt == nil || ev.View == nil || ev.Result.Attempt != ev.Attempt.ID {
					t.Errorf("got attempt event %s, want its result, attempt and view", l)
					continue
				}
				attempts = append(attempts, ev.Attempt.ID)
			}
			last = ev
		}
		if got, want := strings.Join(types, ","), "start,attempt,attempt,end"; got != want {
			t.Errorf("got events %s, want %s", got, want)
		}
		if got, want := strings.Join(attempts, ","), "a-11,a-10"; got != want {
			t.Errorf("got attempt events of %s, want %s (as they ended)", got, want)
		}
		if last.OK == nil || *last.OK || len(last.Results) != 2 || last.Results[1].OK || last.View.Total.Done != 2 {
			t.Errorf("got end event %+v, want the answer: not ok, 2 results, the second a mismatch, 2 done", last)
		}
		// The last line reads as the answer tasks check --json gave before.
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		var tc apitype.TaskCheck
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &tc); err != nil || len(tc.Results) != 2 || tc.OK {
			t.Errorf("got last line %s as %+v (%v), want the answer", lines[len(lines)-1], tc, err)
		}
	})
	t.Run("terminal", func(t *testing.T) {
		code, stdout, _ := runCLI(t, d.Socket, nil, true, "tasks", "check", "rt-02")
		if code != exitOK {
			t.Fatalf("got exit %d, want 0", code)
		}
		for _, w := range []string{
			"\r\x1b[2Ktasks check: 0 of 1 done; eta ?",
			"\r\x1b[2Ka-10 rt-01 builtin:reference: pass, want pass: ok in 1.5s [1 of 1 done]\n",
			"\r\x1b[2Ktasks check: 1 of 1 done, 1 passed\n",
			"all 1 verdicts as expected",
		} {
			if !strings.Contains(stdout, w) {
				t.Errorf("got\n%q\nwant %q", stdout, w)
			}
		}
	})
	t.Run("error event", func(t *testing.T) {
		d.mu.Lock()
		d.checkFails = true
		d.mu.Unlock()
		t.Cleanup(func() { d.mu.Lock(); d.checkFails = false; d.mu.Unlock() })
		code, stdout, stderr := runCLI(t, d.Socket, nil, false, "tasks", "check")
		if code != exitError {
			t.Errorf("got exit %d, want %d", code, exitError)
		}
		if !strings.Contains(stderr, "benchd is busy") || !strings.Contains(stdout, "[2 of 2 done]") || strings.Contains(stdout, "TASK") {
			t.Errorf("got stdout\n%s\nstderr %q, want the attempts' lines, no table, and the error", stdout, stderr)
		}
	})
}

// TestSetProgressPeriodic: off a terminal the status line is printed
// once every has passed since the last, not before; in JSON as a
// "progress" event.
func TestSetProgressPeriodic(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	slots := []apitype.Attempt{{ID: "a-1", State: apitype.StateQueued}, {ID: "a-2", State: apitype.StateQueued}}
	tests := []struct {
		name string
		form int
		want string
	}{
		{"plain", formPlain, "tasks check: 1 of 2 done, 1 failed; eta 4.0s\n"},
		{"json", formJSON, `{"type":"progress","time":"2026-12-01T20:00:10Z","view":{"counts":{"attempts":2,"done":1,"passed":0,"failed":1,"review":0,"infra":0,"canceled":0,"running":0,"queued":1},"eta_ms":4000}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newSetProgress(&b, tt.form, "tasks check", 10*time.Second, append([]apitype.Attempt(nil), slots...), 1)
			now := t0
			p.now = func() time.Time { return now }
			p.last = t0
			started, finished := t0, t0.Add(4*time.Second)
			p.slots[0] = apitype.Attempt{ID: "a-1", State: apitype.StateDone, Started: &started, Finished: &finished}
			now = t0.Add(9 * time.Second)
			p.periodic()
			if b.Len() != 0 {
				t.Errorf("got %q before every passed, want nothing", b.String())
			}
			now = t0.Add(10 * time.Second)
			p.periodic()
			if got := b.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
