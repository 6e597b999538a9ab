package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
	"benchd.dev/internal/pgtest"
)

// startHost starts one benchd of a fleet on database url, with its own
// socket and state directory, named host.
func startHost(t *testing.T, url, host string, args ...string) *daemonProc {
	t.Helper()
	d := startDaemon(t, newDaemonDir(t), append([]string{
		"--database", url, "--host", host, "--concurrency", "1", "--retries", "0",
	}, args...)...)
	t.Cleanup(func() {
		select {
		case err := <-d.waited:
			d.waited <- err
		default:
			d.stopBounded(t)
		}
		if t.Failed() {
			t.Logf("benchd %s:\n%s", host, d.log.String())
		}
	})
	return d
}

// runAttempts lists every attempt of the runs, retries included.
func runAttempts(t *testing.T, c *client.Client, runs []string) []apitype.Attempt {
	t.Helper()
	var all []apitype.Attempt
	for _, r := range runs {
		list, err := c.Attempts(context.Background(), client.AttemptFilter{Run: r})
		if err != nil {
			t.Fatalf("attempts of %s: %v", r, err)
		}
		all = append(all, list...)
	}
	return all
}

// awaitRuns waits until every attempt of the runs has ended, asking host
// c (any host of the fleet sees every attempt).
func awaitRuns(t *testing.T, c *client.Client, runs []string, limit time.Duration) []apitype.Attempt {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		all := runAttempts(t, c, runs)
		open := 0
		for _, a := range all {
			if a.State == apitype.StateQueued || a.State == apitype.StateRunning {
				open++
			}
		}
		if open == 0 {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d attempts still open after %v", open, len(all), limit)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// scoredRows counts the rows of the store's scored table.
func scoredRows(t *testing.T, url string) int {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{Dir: t.TempDir(), Database: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n int
	if err := st.DB().QueryRow(`SELECT count(*) FROM scored`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFleetBatch: three benchd hosts on one PostgreSQL database, one of
// them joining late, work a batch of 60 attempts submitted to one host;
// every attempt is scored exactly once, each by one host, and every host
// took work.
func TestFleetBatch(t *testing.T) {
	require(t)
	url := pgtest.Database(t)
	a := startHost(t, url, "host-a")
	b := startHost(t, url, "host-b")
	ctx := context.Background()
	var runs []string
	for range 6 {
		run, err := a.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: "builtin:null", Attempts: 10})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run.ID)
	}
	// The late joiner comes once the first attempts have ended.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ended := 0
		for _, x := range runAttempts(t, b.client, runs) {
			if x.State == apitype.StateDone {
				ended++
			}
		}
		if ended >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d attempts ended after 3 minutes", ended)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c := startHost(t, url, "host-c")
	all := awaitRuns(t, c.client, runs, 15*time.Minute)
	if len(all) != 60 {
		t.Fatalf("got %d attempts, want 60", len(all))
	}
	byHost := map[string]int{}
	for _, x := range all {
		if x.State != apitype.StateDone || !x.HasVerdict() {
			t.Errorf("attempt %s: state %s (%s), want done with a verdict", x.ID, x.State, x.InfraError)
		}
		if x.Host == "" || x.HostKeyID == "" {
			t.Errorf("attempt %s: host %q, host key %q: want both", x.ID, x.Host, x.HostKeyID)
		}
		byHost[x.Host]++
	}
	for _, h := range []string{"host-a", "host-b", "host-c"} {
		if byHost[h] == 0 {
			t.Errorf("host %s ran no attempt (%v)", h, byHost)
		}
	}
	if n := scoredRows(t, url); n != 60 {
		t.Errorf("got %d scored rows, want 60", n)
	}
	t.Logf("attempts per host: %v", byHost)
}

// TestFleetKill: kill -9 of a host mid-attempt loses nothing and scores
// nothing twice: once River hands the attempt's job on and the host has
// been silent long enough, another host records it as an infra error
// naming the dead host and runs a new attempt in its place, which is
// scored once. A cancel asked of one host reaches an attempt another
// host runs.
func TestFleetKill(t *testing.T) {
	require(t)
	url := pgtest.Database(t)
	fast := []string{"--rescue-after", "2s"}
	a := startHost(t, url, "host-a", fast...)
	b := startHost(t, url, "host-b", fast...)
	ctx := context.Background()
	const sleeper = `sh -c 'echo "# edited" >> src/counter.py; i=0; while [ $i -lt 80 ]; do sleep 0.1; i=$((i+1)); done'`
	run, err := b.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: sleeper, Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until host-a runs one of them.
	var victim apitype.Attempt
	deadline := time.Now().Add(2 * time.Minute)
	for victim.ID == "" {
		for _, x := range runAttempts(t, b.client, []string{run.ID}) {
			if x.State == apitype.StateRunning && x.Host == "host-a" && x.Phase == apitype.PhaseRun {
				victim = x
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("host-a ran no attempt within 2 minutes: %+v", runAttempts(t, b.client, []string{run.ID}))
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.kill()
	// What the killed host left (mounts, cgroups) goes at its next start,
	// below; should the test stop before it, a start on its state
	// directory without the database cleans up.
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			startDaemon(t, a.dir).stopBounded(t)
		}
	})
	all := awaitRuns(t, b.client, []string{run.ID}, 5*time.Minute)
	var given apitype.Attempt
	for _, x := range all {
		if x.ID == victim.ID {
			given = x
		}
	}
	if given.State != apitype.StateInfraError || !strings.Contains(given.InfraError, `host "host-a" stopped`) || given.RetriedBy == "" {
		t.Fatalf("the dead host's attempt: state %s, infra_error %q, retried_by %q; want an infra error naming host-a, retried",
			given.State, given.InfraError, given.RetriedBy)
	}
	done := 0
	for _, x := range all {
		switch {
		case x.State == apitype.StateDone:
			done++
			if x.Host != "host-b" {
				t.Errorf("attempt %s done on %q after host-a died, want host-b", x.ID, x.Host)
			}
		case x.ID != victim.ID:
			t.Errorf("attempt %s: state %s (%s)", x.ID, x.State, x.InfraError)
		}
	}
	if len(all) != 3 || done != 2 {
		t.Errorf("got %d attempts with %d done, want 3 (two and a retry) with 2 done", len(all), done)
	}
	if n := scoredRows(t, url); n != 2 {
		t.Errorf("got %d scored rows, want 2", n)
	}

	// host-a starts again on the same state directory and database: it
	// takes nothing back, and cancels asked of it reach host-b.
	a2 := startDaemon(t, a.dir, "--database", url, "--host", "host-a", "--concurrency", "1", "--retries", "0")
	restarted = true
	// Its start-up recovery sealed and stored the given-up attempt's
	// journal, edit included: nothing of it is lost.
	jr, err := a2.client.Journal(ctx, victim.ID)
	if err != nil {
		t.Fatalf("journal of the given-up attempt after its host restarted: %v", err)
	}
	jb, err := io.ReadAll(jr)
	jr.Close()
	if err != nil || !strings.Contains(string(jb), `"op":"interrupted"`) || !strings.Contains(string(jb), "src/counter.py") {
		t.Errorf("journal of the given-up attempt: %v\n%s", err, jb)
	}
	defer a2.stopBounded(t)
	run2, err := a2.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: sleeper, Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	var onB string
	deadline = time.Now().Add(2 * time.Minute)
	for onB == "" {
		for _, x := range runAttempts(t, a2.client, []string{run2.ID}) {
			if x.State == apitype.StateRunning && x.Host == "host-b" {
				onB = x.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("host-b ran no attempt of the second run within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	got, err := a2.client.Cancel(cctx, onB)
	if err != nil {
		t.Fatalf("cancel of %s (on host-b) through host-a: %v", onB, err)
	}
	if got.State != apitype.StateCanceled {
		t.Errorf("canceled through another host: got state %s, want canceled", got.State)
	}
	for _, x := range awaitRuns(t, a2.client, []string{run2.ID}, 3*time.Minute) {
		if x.ID != onB && x.State != apitype.StateDone {
			t.Errorf("attempt %s: %s, want done", x.ID, x.State)
		}
	}
}

// TestFleetStopHandsBack: SIGTERM of the host running an attempt (no
// drain) ends the attempt as an infra error of that host's shutdown, and
// on a fleet its retry goes to another host, which scores it.
func TestFleetStopHandsBack(t *testing.T) {
	require(t)
	url := pgtest.Database(t)
	hosts := map[string]*daemonProc{
		"host-a": startHost(t, url, "host-a", "--retries", "1"),
		"host-b": startHost(t, url, "host-b", "--retries", "1"),
	}
	ctx := context.Background()
	const sleeper = `sh -c 'i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done'`
	run, err := hosts["host-a"].client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: sleeper})
	if err != nil {
		t.Fatal(err)
	}
	var first apitype.Attempt
	deadline := time.Now().Add(2 * time.Minute)
	for first.ID == "" {
		for _, x := range runAttempts(t, hosts["host-a"].client, []string{run.ID}) {
			if x.State == apitype.StateRunning && x.Phase == apitype.PhaseRun {
				first = x
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attempt did not start within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	other := "host-a"
	if first.Host == "host-a" {
		other = "host-b"
	}
	hosts[first.Host].stopBounded(t)
	all := awaitRuns(t, hosts[other].client, []string{run.ID}, 3*time.Minute)
	if len(all) != 2 {
		t.Fatalf("got %d attempts, want the first and its retry: %+v", len(all), all)
	}
	for _, x := range all {
		switch x.ID {
		case first.ID:
			if x.State != apitype.StateInfraError || !strings.Contains(x.InfraError, "shut down") || x.RetriedBy == "" {
				t.Errorf("the stopped host's attempt: state %s, infra_error %q, retried_by %q; want a retried infra error of the shutdown",
					x.State, x.InfraError, x.RetriedBy)
			}
		default:
			if x.State != apitype.StateDone || x.Host != other || x.RetryOf != first.ID {
				t.Errorf("the retry: state %s on %q, retry_of %q; want done on %s, retrying %s", x.State, x.Host, x.RetryOf, other, first.ID)
			}
		}
	}
}

// TestFleetEnvStaysHome: attempts given --env values run on the host
// they were submitted to, the only one that holds the values, and the
// values reach the agent; another host follows their events.
func TestFleetEnvStaysHome(t *testing.T) {
	require(t)
	url := pgtest.Database(t)
	a := startHost(t, url, "host-a")
	b := startHost(t, url, "host-b")
	ctx := context.Background()
	// The agent fails (exit 3) unless it sees the value.
	const agent = `sh -c 'test "$BENCH_SECRET" = s3cret-value || exit 3'`
	run, err := b.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: agent, Attempts: 4,
		Env: []apitype.EnvVar{{Name: "BENCH_SECRET", Value: "s3cret-value"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Host a streams the events of an attempt host b runs, from the
	// store, to its end.
	if final := wait(t, a.client, run.Attempts[0]); final.Host != "host-b" || final.State != apitype.StateDone {
		t.Errorf("final event through host-a: host %q, state %s; want done on host-b", final.Host, final.State)
	}
	for _, x := range awaitRuns(t, b.client, []string{run.ID}, 5*time.Minute) {
		if x.Host != "host-b" || x.State != apitype.StateDone || x.ExitCode != 0 {
			t.Errorf("attempt %s: host %q, state %s, exit %d; want done on host-b with exit 0", x.ID, x.Host, x.State, x.ExitCode)
		}
	}
}

// A benchd started under the name of a live host of its fleet refuses to
// start and says so; the live host's running attempt keeps running.
func TestFleetHostNameTaken(t *testing.T) {
	require(t)
	url := pgtest.Database(t)
	live := startHost(t, url, "twin")
	id := startEditing(t, live)
	dir := newDaemonDir(t)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := exec.Command(benchdBin, "--socket", filepath.Join(dir, "benchd.sock"), "--state", filepath.Join(dir, "state"),
		"--tasks", tasksDir, "--database", url, "--host", "twin")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("second benchd named twin: got %v, want exit status 1\n%s", err, out)
	}
	want := fmt.Sprintf("host name twin is live: benchd host twin (pid %d on ", live.cmd.Process.Pid)
	if !strings.Contains(string(out), want) {
		t.Errorf("second benchd's error: got %q, want it to contain %q", out, want)
	}
	a, err := live.client.Attempt(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != apitype.StateRunning {
		t.Errorf("live host's attempt after the second start: got %s (%s), want running", a.State, a.InfraError)
	}
	if _, err := live.client.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}
