package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
)

// scrape gets url and parses the text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: got status %d, want 200", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: the text format does not parse: %v", url, err)
	}
	return fams
}

// sample finds the series of family name whose labels include want and
// returns it; it fails t when there is none.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no series of %s with labels %v", name, want)
	return nil
}

func TestMetrics(t *testing.T) {
	queued, running := 3, 2
	m := newMetrics("host-a", func() (int, int) { return queued, running })
	m.stored[apitype.StateDone] = 5 // as countStored finds them
	m.recovered(1)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := start.Add(d); return &t }
	m.start()
	m.start()
	m.start()
	m.end(apitype.Attempt{State: apitype.StateDone, Pass: true, Outcome: apitype.OutcomePass, Started: at(0), Finished: at(2 * time.Second), ViewCPUMS: 250, GradeCPUMS: 1500}, "")
	m.end(apitype.Attempt{State: apitype.StateDone, Outcome: apitype.OutcomeReview, Started: at(0), Finished: at(40 * time.Second)}, "")
	m.end(apitype.Attempt{State: apitype.StateInfraError, Started: at(0), Finished: at(time.Second), ViewCPUMS: 500}, infraEngine)
	m.end(apitype.Attempt{State: apitype.StateCanceled, Finished: at(0)}, "") // never ran: no duration
	m.graded([]runs.PhaseTime{{Phase: apitype.PhaseRun, Duration: time.Second}, {Phase: apitype.PhaseGrade, Duration: 300 * time.Millisecond}})

	srv := httptest.NewServer(metricsServer(m).Handler)
	defer srv.Close()
	fams := scrape(t, srv.URL+"/metrics")
	host := map[string]string{"host": "host-a"}
	with := func(k, v string) map[string]string { return map[string]string{"host": "host-a", k: v} }
	gauges := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"benchd_queue_depth", host, 3},
		{"benchd_attempts", with("state", "queued"), 3},
		{"benchd_attempts", with("state", "running"), 2},
		{"benchd_attempts", with("state", "done"), 7},
		{"benchd_attempts", with("state", "infra_error"), 1}, // the recovered one is in the store's count already
		{"benchd_attempts", with("state", "canceled"), 1},
	}
	for _, g := range gauges {
		if got := sample(t, fams, g.name, g.labels).GetGauge().GetValue(); got != g.want {
			t.Errorf("%s%v: got %v, want %v", g.name, g.labels, got, g.want)
		}
	}
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"benchd_attempts_started_total", host, 3},
		{"benchd_attempts_ended_total", with("outcome", "pass"), 1},
		{"benchd_attempts_ended_total", with("outcome", "fail"), 0},
		{"benchd_attempts_ended_total", with("outcome", "review"), 1},
		{"benchd_attempts_ended_total", with("outcome", "infra_error"), 2},
		{"benchd_attempts_ended_total", with("outcome", "canceled"), 1},
		{"benchd_infra_errors_total", with("reason", infraEngine), 1},
		{"benchd_infra_errors_total", with("reason", infraRecovery), 1},
		{"benchd_infra_errors_total", with("reason", infraShutdown), 0},
		{"benchd_attempt_cpu_seconds_total", with("work", "view"), 0.75},
		{"benchd_attempt_cpu_seconds_total", with("work", "grade"), 1.5},
	}
	for _, c := range counters {
		if got := sample(t, fams, c.name, c.labels).GetCounter().GetValue(); got != c.want {
			t.Errorf("%s%v: got %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	hists := []struct {
		name   string
		labels map[string]string
		count  uint64
		sum    float64
	}{
		{"benchd_attempt_duration_seconds", with("outcome", "pass"), 1, 2},
		{"benchd_attempt_duration_seconds", with("outcome", "review"), 1, 40},
		{"benchd_attempt_duration_seconds", with("outcome", "infra_error"), 1, 1},
		{"benchd_grading_duration_seconds", host, 1, 0.3},
	}
	for _, h := range hists {
		got := sample(t, fams, h.name, h.labels).GetHistogram()
		if got.GetSampleCount() != h.count || got.GetSampleSum() != h.sum {
			t.Errorf("%s%v: got count %d sum %v, want %d and %v", h.name, h.labels, got.GetSampleCount(), got.GetSampleSum(), h.count, h.sum)
		}
	}
	if f := fams["benchd_attempt_duration_seconds"]; f != nil {
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if l.GetName() == "outcome" && l.GetValue() == "canceled" {
					t.Errorf("a canceled attempt that never ran has a duration: %v", s)
				}
			}
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("no %s: want the Go and process collectors", name)
		}
	}
}

// TestMetricsServesOnlyMetrics: the listener is no way into the API.
func TestMetricsServesOnlyMetrics(t *testing.T) {
	srv := httptest.NewServer(metricsServer(newMetrics("h", func() (int, int) { return 0, 0 })).Handler)
	defer srv.Close()
	cases := []struct {
		method, path string
		status       int
	}{
		{"GET", "/metrics", 200},
		{"POST", "/metrics", 405},
		{"GET", "/v1/status", 404},
		{"POST", "/v1/runs", 404},
		{"GET", "/", 404},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("got status %d, want %d", resp.StatusCode, c.status)
			}
		})
	}
}

func TestOutcomeOf(t *testing.T) {
	cases := []struct {
		name string
		a    apitype.Attempt
		want string
	}{
		{"pass", apitype.Attempt{State: apitype.StateDone, Pass: true, Outcome: apitype.OutcomePass}, "pass"},
		{"fail", apitype.Attempt{State: apitype.StateDone, Outcome: apitype.OutcomeFail}, "fail"},
		{"review", apitype.Attempt{State: apitype.StateDone, Outcome: apitype.OutcomeReview}, "review"},
		{"old pass", apitype.Attempt{State: apitype.StateDone, Pass: true}, "pass"},
		{"old fail", apitype.Attempt{State: apitype.StateDone}, "fail"},
		{"infra error", apitype.Attempt{State: apitype.StateInfraError}, "infra_error"},
		{"canceled", apitype.Attempt{State: apitype.StateCanceled}, "canceled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := outcomeOf(c.a); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestRunMetricsAddress: a bad or busy metrics address fails the start
// with the reason, before anything is made.
func TestRunMetricsAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cases := []struct {
		name, addr, want string
		class            error
	}{
		{"no port", "127.0.0.1", "is not host:port", errInvalid},
		{"busy port", busy.Addr().String(), "unable to listen for metrics on " + busy.Addr().String(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			err := Run(context.Background(), Config{
				Socket: filepath.Join(dir, "s.sock"), StateDir: state, TasksDir: dir,
				AgentUID: 65534, AgentGID: 65534, Metrics: c.addr,
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if c.class != nil && !errors.Is(err, c.class) {
				t.Errorf("got %v, want it to match %v", err, c.class)
			}
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Errorf("the state directory was made before the metrics address was checked: %v", err)
			}
		})
	}
}
