package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
)

// metricsAddr is the address benchd logged it serves /metrics on. The
// log comes through a pipe, which may lag behind READY=1: it is read
// until the line is there, for a bounded time.
func metricsAddr(t *testing.T, d *daemonProc) string {
	t.Helper()
	re := regexp.MustCompile(`msg="metrics served" .*\baddr=(\S+)`)
	deadline := time.Now().Add(time.Minute)
	for {
		if m := re.FindStringSubmatch(d.log.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("benchd did not log its metrics address within a minute of READY=1\n%s", d.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scraped is one scrape of /metrics, parsed.
type scraped map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, addr string) scraped {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	start := time.Now()
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: got status %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET /metrics: got content type %q, want the text format", ct)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GET /metrics: %d bytes in %v", len(body), time.Since(start).Round(time.Microsecond))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return fams
}

// value is the value of the series of name whose labels hold label
// (name=value pairs), the host label being checked on every series; a
// histogram's value is its count.
func (s scraped) value(t *testing.T, name string, label ...string) float64 {
	t.Helper()
	f := s[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
	host, _ := os.Hostname()
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		if got["host"] != host {
			t.Errorf("%s%v: got host label %q, want %q", name, got, got["host"], host)
		}
		for i := 0; i+1 < len(label); i += 2 {
			if got[label[i]] != label[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series of %s with labels %v", name, label)
	return 0
}

// metricWant is one value a scrape must show.
type metricWant struct {
	name  string
	label []string
	want  float64
}

func (s scraped) check(t *testing.T, when string, wants []metricWant) {
	t.Helper()
	for _, w := range wants {
		if got := s.value(t, w.name, w.label...); got != w.want {
			t.Errorf("%s: %s%v: got %v, want %v", when, w.name, w.label, got, w.want)
		}
	}
}

// TestMetrics: benchd --metrics serves the Prometheus text format on a
// loopback port, and its values follow attempts as they are queued,
// run, pass, fail, end in an infra error and are canceled; after a
// restart the attempts by state are those of the store.
func TestMetrics(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	ctx := context.Background()
	args := []string{"--concurrency", "1", "--retries", "0", "--metrics", "127.0.0.1:0"}
	d := startDaemon(t, dir, args...)
	addr := metricsAddr(t, d)
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("metrics address: got %q, want 127.0.0.1 and the port chosen", addr)
	}
	scrapeMetrics(t, addr).check(t, "at start", []metricWant{
		{"benchd_queue_depth", nil, 0},
		{"benchd_attempts_started_total", nil, 0},
		{"benchd_attempts", []string{"state", "done"}, 0},
	})

	sleeper, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: "sleep 3543"})
	if err != nil {
		d.kill()
		t.Fatal(err)
	}
	waitPhase(t, d, sleeper.Attempts[0], apitype.PhaseRun)
	var ids []string
	for _, req := range []apitype.RunRequest{
		{Task: "rt-01", Agent: apitype.AgentReference},
		{Task: "rt-01", Agent: apitype.AgentNull},
		{Task: "rt-01", Agent: "sleep 3600", Gateways: []string{fmt.Sprintf("model=127.0.0.1:%d", deadPort(t))}},
	} {
		run, err := d.client.CreateRun(ctx, req)
		if err != nil {
			d.kill()
			t.Fatal(err)
		}
		ids = append(ids, run.Attempts[0])
	}
	scrapeMetrics(t, addr).check(t, "one running, three queued", []metricWant{
		{"benchd_queue_depth", nil, 3},
		{"benchd_attempts", []string{"state", "queued"}, 3},
		{"benchd_attempts", []string{"state", "running"}, 1},
		{"benchd_attempts_started_total", nil, 1},
	})

	if _, err := d.client.Cancel(ctx, sleeper.Attempts[0]); err != nil {
		d.kill()
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, id := range ids {
		a := wait(t, d.client, id)
		states[a.Agent.Spec] = a.State + " " + a.Outcome
	}
	ended := []metricWant{
		{"benchd_queue_depth", nil, 0},
		{"benchd_attempts", []string{"state", "queued"}, 0},
		{"benchd_attempts", []string{"state", "running"}, 0},
		{"benchd_attempts", []string{"state", "done"}, 2},
		{"benchd_attempts", []string{"state", "infra_error"}, 1},
		{"benchd_attempts", []string{"state", "canceled"}, 1},
	}
	s := scrapeMetrics(t, addr)
	s.check(t, "all ended", append(ended, []metricWant{
		{"benchd_attempts_started_total", nil, 4},
		{"benchd_attempts_ended_total", []string{"outcome", "pass"}, 1},
		{"benchd_attempts_ended_total", []string{"outcome", "fail"}, 1},
		{"benchd_attempts_ended_total", []string{"outcome", "review"}, 0},
		{"benchd_attempts_ended_total", []string{"outcome", "infra_error"}, 1},
		{"benchd_attempts_ended_total", []string{"outcome", "canceled"}, 1},
		{"benchd_attempt_duration_seconds", []string{"outcome", "pass"}, 1},
		{"benchd_attempt_duration_seconds", []string{"outcome", "fail"}, 1},
		{"benchd_attempt_duration_seconds", []string{"outcome", "infra_error"}, 1},
		{"benchd_attempt_duration_seconds", []string{"outcome", "canceled"}, 1},
		{"benchd_grading_duration_seconds", nil, 2},
		{"benchd_infra_errors_total", []string{"reason", "engine"}, 1},
		{"benchd_infra_errors_total", []string{"reason", "shutdown"}, 0},
	}...))
	if t.Failed() {
		t.Logf("the attempts ended as %v", states)
	}
	if s["go_goroutines"] == nil || s["process_resident_memory_bytes"] == nil {
		t.Errorf("no Go or process metrics")
	}

	// A restart: a new process counts the store's attempts by state.
	d.stop(t)
	d = startDaemon(t, dir, args...)
	defer d.stop(t)
	scrapeMetrics(t, metricsAddr(t, d)).check(t, "after a restart", append(ended, []metricWant{
		{"benchd_attempts_started_total", nil, 0},
		{"benchd_attempts_ended_total", []string{"outcome", "pass"}, 0},
	}...))
}

// drainAgent runs for a while and ends by itself, failing RT-01's
// grade: long enough to be running at SIGTERM, short against the drain
// timeout.
const drainAgent = `sh -c 'sleep 15; exit 0'`

// TestDrain: with --drain-timeout, SIGTERM lets the running attempt go
// on to its verdict; a run submitted meanwhile is refused as busy (the
// client's class and benchctl's message say so); the queued attempt is
// handed back and runs to its verdict at the next start.
func TestDrain(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	ctx := context.Background()
	args := []string{"--concurrency", "1", "--drain-timeout", "5m", "--metrics", "127.0.0.1:0"}
	d := startDaemon(t, dir, args...)
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: drainAgent})
	if err != nil {
		d.kill()
		t.Fatal(err)
	}
	running := run.Attempts[0]
	waitPhase(t, d, running, apitype.PhaseRun)
	run, err = d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentReference})
	if err != nil {
		d.kill()
		t.Fatal(err)
	}
	queued := run.Attempts[0]
	addr := metricsAddr(t, d)

	sigterm := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(d.log.String(), "draining running attempts") {
		if time.Now().After(deadline) {
			d.kill()
			t.Fatalf("benchd did not start to drain within 2 minutes of SIGTERM\n%s", d.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(d.log.String(), "running=1 queued=1") {
		t.Errorf("the drain did not start with one running and one queued attempt:\n%s", d.log.String())
	}
	// While it drains: the API answers, refuses new runs, metrics serve.
	_, err = d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentNull})
	if !errors.Is(err, client.ErrBusy) || !strings.Contains(err.Error(), "not taking new runs") {
		t.Errorf("a run during the drain: got %v, want busy, not taking new runs", err)
	}
	out, code := benchctlOn(t, d.socket, "run", "--task", "rt-01", "--agent", apitype.AgentNull, "--detach")
	if code == 0 || !strings.Contains(out, "not taking new runs") {
		t.Errorf("benchctl run during the drain: exit %d, want non-zero and the reason\n%s", code, out)
	}
	scrapeMetrics(t, addr).check(t, "during the drain", []metricWant{
		{"benchd_attempts", []string{"state", "running"}, 1},
		{"benchd_queue_depth", nil, 1},
	})
	if a := wait(t, d.client, running); a.State != apitype.StateDone || !a.HasVerdict() {
		t.Errorf("attempt running at SIGTERM: got state %s %q, want done with a verdict", a.State, a.InfraError)
	}
	d.stopBounded(t) // SIGTERM again: already stopping
	if err := <-d.waited; err != nil {
		t.Errorf("benchd exit after the drain: got %v, want status 0\n%s", err, d.log.String())
	}
	t.Logf("SIGTERM with an attempt running and one queued: benchd drained and stopped in %v", time.Since(sigterm).Round(time.Millisecond))
	if !strings.Contains(d.log.String(), "drained: every running attempt ended") {
		t.Errorf("benchd did not log the end of the drain:\n%s", d.log.String())
	}

	d = startDaemon(t, dir, args...)
	defer d.stopBounded(t)
	a, err := d.client.Attempt(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != apitype.StateDone {
		t.Errorf("after the restart, the drained attempt: got %s, want done", a.State)
	}
	if a := wait(t, d.client, queued); a.State != apitype.StateDone || !a.Pass {
		t.Errorf("the attempt queued at SIGTERM, run at the next start: got state %s pass %v %q, want done and passed", a.State, a.Pass, a.InfraError)
	}
}

// TestDrainTimeout: an attempt still running when the drain timeout
// passes is interrupted as without a drain: infra_error, benchd shut
// down, its journal kept; the stop counts it under reason shutdown.
func TestDrainTimeout(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	d := startDaemon(t, dir, "--concurrency", "1", "--drain-timeout", "1s")
	stopped := startEditing(t, d)
	d.stopBounded(t)
	if err := <-d.waited; err != nil {
		t.Errorf("benchd exit after the drain timeout: got %v, want status 0\n%s", err, d.log.String())
	}
	if !strings.Contains(d.log.String(), "drain timeout passed: canceling the attempts still running") {
		t.Errorf("benchd did not log the end of the drain timeout:\n%s", d.log.String())
	}
	d = startDaemon(t, dir, "--concurrency", "1")
	defer d.stopBounded(t)
	a, err := d.client.Attempt(context.Background(), stopped)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != apitype.StateInfraError || !strings.Contains(a.InfraError, "shut down") {
		t.Errorf("attempt running past the drain timeout: got state %s %q, want infra_error saying benchd shut down", a.State, a.InfraError)
	}
	checkKeptJournal(t, d.socket, stopped, "shut down")
}
