package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
)

// benchctlLong runs benchctl on socket as benchctlOn does, with room for
// a run of several attempts; stdout and stderr come back apart.
func benchctlLong(t *testing.T, socket string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, benchctl, append([]string{"--socket", socket}, args...)...)
	cmd.Dir = "/"
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("benchctl %v did not end within 8 minutes\n%s%s", args, out.String(), errb.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// progressLine is the part of a line of benchctl's --json progress that
// the tests read.
type progressLine struct {
	Type     string            `json:"type"`
	Run      string            `json:"run"`
	Tasks    []string          `json:"tasks"`
	Pass     *bool             `json:"pass"`
	Attempt  *apitype.Attempt  `json:"attempt"`
	Attempts []apitype.Attempt `json:"attempts"`
}

// progressLines reads benchctl's --json progress: one JSON object a line.
func progressLines(t *testing.T, out string) []progressLine {
	t.Helper()
	var lines []progressLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l progressLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("progress line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) < 2 || lines[0].Type != "start" || lines[len(lines)-1].Type != "end" {
		t.Fatalf("got progress\n%s\nwant a start line first and an end line last", out)
	}
	return lines
}

// TestBatch: three tasks of two attempts each are one run of six
// attempts, queued task by task, each scored; benchctl wait follows it
// to its end with plain lines (one per attempt's end), and again with
// JSON lines; the exit status is the verdicts'.
func TestBatch(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	out, stderr, code := benchctlLong(t, d.socket, "run", "--tasks", "rt-01,rt-02,rt-03", "--agent", apitype.AgentReference,
		"--attempts", "2", "--detach", "--json")
	if code != 0 {
		t.Fatalf("run --detach: exit %d\n%s%s", code, out, stderr)
	}
	var started struct {
		Run      string            `json:"run"`
		Tasks    []string          `json:"tasks"`
		Attempts []apitype.Attempt `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(out), &started); err != nil {
		t.Fatalf("run --detach --json: %v\n%s", err, out)
	}
	run, err := d.client.Run(ctx, started.Run)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rt-01", "rt-02", "rt-03"}; !slices.Equal(run.Tasks, want) || run.Task != "" || len(run.Attempts) != 6 {
		t.Fatalf("got run %+v, want tasks %v, no one task, 6 attempts", run, want)
	}

	out, stderr, code = benchctlLong(t, d.socket, "wait", run.ID)
	if code != 0 {
		t.Errorf("wait: got exit %d, want 0 (every attempt passes)\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"run " + run.ID + ": 6 attempts of 3 tasks", "6 of 6 done, 6 passed", "6 of 6 attempts passed (run " + run.ID + ")"} {
		if !strings.Contains(out, want) {
			t.Errorf("wait: got\n%s\nwant it to say %q", out, want)
		}
	}
	for _, id := range run.Attempts {
		if !strings.Contains(out, id+" rt-0") {
			t.Errorf("wait: got\n%s\nwant a line of the end of %s", out, id)
		}
	}

	out, stderr, code = benchctlLong(t, d.socket, "wait", run.ID, "--json")
	if code != 0 {
		t.Errorf("wait --json: got exit %d, want 0\n%s%s", code, out, stderr)
	}
	lines := progressLines(t, out)
	end := lines[len(lines)-1]
	if end.Run != run.ID || end.Pass == nil || !*end.Pass || len(end.Attempts) != 6 {
		t.Fatalf("wait --json: got end %+v, want run %s passed with 6 attempts", end, run.ID)
	}
	var tasks []string
	for i, a := range end.Attempts {
		tasks = append(tasks, a.Task)
		if a.ID != run.Attempts[i] || a.Run != run.ID || a.State != apitype.StateDone || !a.Pass || a.TaskSHA256 == "" {
			t.Errorf("attempt %d: got %s of run %s, %s pass %v, bundle %q; want %s of the run, done and passed, scored by a bundle",
				i, a.ID, a.Run, a.State, a.Pass, a.TaskSHA256, run.Attempts[i])
		}
	}
	if want := []string{"rt-01", "rt-01", "rt-02", "rt-02", "rt-03", "rt-03"}; !slices.Equal(tasks, want) {
		t.Errorf("got the attempts' tasks %v, want %v: task by task", tasks, want)
	}
}

// TestBatchList: run --list of a file of task ids runs them as one run
// and prints JSON lines, an "attempt" line per attempt; builtin:null
// fails each, and the exit status says so.
func TestBatchList(t *testing.T) {
	d := shared(t)
	list := filepath.Join(t.TempDir(), "tasks.txt")
	if err := os.WriteFile(list, []byte("# two tasks\nrt-02\n\nrt-04\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := benchctlLong(t, d.socket, "run", "--list", list, "--agent", apitype.AgentNull, "--json")
	if code != 1 {
		t.Errorf("got exit %d, want 1 (builtin:null fails)\n%s%s", code, out, stderr)
	}
	lines := progressLines(t, out)
	if !slices.Equal(lines[0].Tasks, []string{"rt-02", "rt-04"}) {
		t.Errorf("got start %+v, want tasks rt-02 and rt-04", lines[0])
	}
	ended := 0
	for _, l := range lines {
		if l.Type == "attempt" {
			ended++
			if l.Attempt == nil || l.Attempt.State != apitype.StateDone || l.Attempt.Pass {
				t.Errorf("got attempt line %+v, want a failed verdict", l.Attempt)
			}
		}
	}
	end := lines[len(lines)-1]
	if ended != 2 || end.Pass == nil || *end.Pass || len(end.Attempts) != 2 {
		t.Errorf("got %d attempt lines and end %+v, want 2 and a run not passed of 2 attempts", ended, end)
	}
}

// TestBatchCancel: cancel RUN ends every queued and running attempt of
// the run as canceled, and a second cancel of it is a conflict.
func TestBatchCancel(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Tasks: []string{"rt-01", "rt-02"}, Agent: "sleep 3600", Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitPhase(t, d, run.Attempts[0], apitype.PhaseRun)
	out, stderr, code := benchctlLong(t, d.socket, "cancel", run.ID)
	if code != 0 {
		t.Fatalf("cancel %s: exit %d\n%s%s", run.ID, code, out, stderr)
	}
	st, err := d.client.RunStatus(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Ended || len(st.Attempts) != 4 {
		t.Fatalf("after cancel: got ended %v and %d attempts, want ended and 4", st.Ended, len(st.Attempts))
	}
	for _, a := range st.Attempts {
		if a.State != apitype.StateCanceled {
			t.Errorf("attempt %s: got %s, want canceled", a.ID, a.State)
		}
		if !strings.Contains(out, a.ID+": canceled") {
			t.Errorf("cancel: got\n%s\nwant it to name %s canceled", out, a.ID)
		}
	}
	if _, err := d.client.CancelRun(ctx, run.ID); !errors.Is(err, client.ErrConflict) {
		t.Errorf("second cancel: got %v, want a conflict", err)
	}
	out, _, code = benchctlLong(t, d.socket, "wait", run.ID)
	if code != 1 || !strings.Contains(out, "4 canceled") {
		t.Errorf("wait of the canceled run: got exit %d\n%s\nwant 1 and 4 canceled", code, out)
	}
}

// TestBatchUnknownTask: a run naming unknown tasks is refused naming
// them and the known tasks, and nothing of it is queued.
func TestBatchUnknownTask(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	before, err := d.client.Attempts(ctx, client.AttemptFilter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := benchctlLong(t, d.socket, "run", "--tasks", "rt-01,rt-98,rt-99", "--agent", apitype.AgentNull)
	if code != 2 {
		t.Errorf("got exit %d, want 2\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"unknown tasks rt-98, rt-99", "known tasks: rt-01, rt-02, rt-03, rt-04"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("got stderr %q, want it to say %q", stderr, want)
		}
	}
	after, err := d.client.Attempts(ctx, client.AttemptFilter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("got %d attempts after the refused run, %d before: want nothing queued", len(after), len(before))
	}
}
