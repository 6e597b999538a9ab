package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
)

// Outcomes of an ended attempt, the label of the attempts' duration and
// of the ended counter: the verdict's outcome for a done attempt, else
// its state.
const (
	outcomeInfraError = apitype.StateInfraError
	outcomeCanceled   = apitype.StateCanceled
)

// Reasons of an infra error, the label of benchd_infra_errors_total. The
// text of an infra error says more; these are the few classes an
// operator alerts on.
const (
	infraShutdown        = "shutdown"         // running when benchd stopped, unwound in time
	infraShutdownTimeout = "shutdown_timeout" // running when benchd stopped, not unwound within StopTimeout
	infraRecovery        = "recovery"         // in flight when the last benchd died (found at start)
	infraRequeue         = "requeue"          // queued at the last stop, unable to go on (request or env values lost)
	infraRescued         = "rescued"          // given up by another host of the fleet: its host went silent
	infraJournal         = "journal"          // the journal could not be stored
	infraEngine          = "engine"           // the attempt engine failed (any step), or the task vanished
)

// durationBuckets, in seconds, span the 0.05 s of a built-in agent to
// the 15 minutes of a long one (apitype.MaxTimeout is beyond: such
// attempts land in +Inf).
var durationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900}

// The work label of benchd_attempt_cpu_seconds_total.
const (
	workView  = "view"  // apitype.Attempt.ViewCPUMS
	workGrade = "grade" // apitype.Attempt.GradeCPUMS
)

// metrics is what benchd measures of itself for GET /metrics, in a
// registry of its own. Every series carries the const label host.
type metrics struct {
	reg *prometheus.Registry

	started  prometheus.Counter
	ended    *prometheus.CounterVec   // by outcome
	duration *prometheus.HistogramVec // by outcome
	grading  prometheus.Histogram
	infra    *prometheus.CounterVec // by reason
	cpu      *prometheus.CounterVec // benchd's work for attempts, by work (view, grade)

	mu sync.Mutex
	// stored counts the ended attempts of the store by state: counted
	// at start, then one more at each ending this process records.
	stored map[string]int
}

// newMetrics makes the registry. live reports the queued and running
// attempts of this process at the time of a scrape.
func newMetrics(host string, live func() (queued, running int)) *metrics {
	labels := prometheus.Labels{"host": host}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		started: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "benchd_attempts_started_total", ConstLabels: labels,
			Help: "Attempts a worker took from the queue and started.",
		}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "benchd_attempts_ended_total", ConstLabels: labels,
			Help: "Attempts ended by this process, by outcome (pass, fail, review, infra_error, canceled).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "benchd_attempt_duration_seconds", ConstLabels: labels, Buckets: durationBuckets,
			Help: "Time from an attempt's start by a worker to its recorded end, by outcome.",
		}, []string{"outcome"}),
		grading: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "benchd_grading_duration_seconds", ConstLabels: labels, Buckets: durationBuckets,
			Help: "Time the grade phase of a graded attempt took.",
		}),
		infra: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "benchd_infra_errors_total", ConstLabels: labels,
			Help: "Attempts this process recorded as infra_error, by reason.",
		}, []string{"reason"}),
		cpu: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "benchd_attempt_cpu_seconds_total", ConstLabels: labels,
			Help: "CPU time benchd spent for the attempts this process ended: serving their views (work=view), their graders' commands (work=grade).",
		}, []string{"work"}),
		stored: map[string]int{},
	}
	queueDepth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "benchd_queue_depth", ConstLabels: labels,
		Help: "Attempts waiting in the queue (running ones not counted).",
	}, func() float64 { q, _ := live(); return float64(q) })
	states := &stateCollector{m: m, live: live, desc: prometheus.NewDesc("benchd_attempts",
		"Attempts in the store by state: queued and running as this process holds them, ended ones as counted from the store.",
		[]string{"state"}, labels)}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.started, m.ended, m.duration, m.grading, m.infra, m.cpu, queueDepth, states,
	)
	// Series of every label value exist from the start, at 0, so that
	// rate() and alerts see the first increment.
	for _, o := range []string{apitype.OutcomePass, apitype.OutcomeFail, apitype.OutcomeReview, outcomeInfraError, outcomeCanceled} {
		m.ended.WithLabelValues(o)
	}
	for _, w := range []string{workView, workGrade} {
		m.cpu.WithLabelValues(w)
	}
	for _, r := range []string{infraShutdown, infraShutdownTimeout, infraRecovery, infraRequeue, infraRescued, infraJournal, infraEngine} {
		m.infra.WithLabelValues(r)
	}
	return m
}

// endedStates are the states an attempt ends in.
var endedStates = []string{apitype.StateDone, apitype.StateInfraError, apitype.StateCanceled}

// countStored counts the ended attempts of the store, once at start.
func (m *metrics) countStored(ctx context.Context, st *store.Store) error {
	list, err := st.ListAttempts(ctx, store.Filter{States: endedStates})
	if err != nil {
		return fmt.Errorf("unable to count the stored attempts: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range list {
		m.stored[a.State]++
	}
	return nil
}

// recovered counts the attempts start-up recovery made infra_error:
// ended by this process, and already in the store's count.
func (m *metrics) recovered(n int) {
	m.ended.WithLabelValues(outcomeInfraError).Add(float64(n))
	m.infra.WithLabelValues(infraRecovery).Add(float64(n))
}

// start counts an attempt a worker started.
func (m *metrics) start() { m.started.Inc() }

// end counts an ending this process recorded: a is the attempt as
// stored, reason the class of its infra error (ignored otherwise).
// An attempt a worker ran (Started set) adds its duration.
func (m *metrics) end(a apitype.Attempt, reason string) {
	o := outcomeOf(a)
	m.ended.WithLabelValues(o).Inc()
	if a.Started != nil && a.Finished != nil {
		m.duration.WithLabelValues(o).Observe(a.Finished.Sub(*a.Started).Seconds())
	}
	if a.State == apitype.StateInfraError {
		m.infra.WithLabelValues(reason).Inc()
	}
	m.cpu.WithLabelValues(workView).Add(float64(a.ViewCPUMS) / 1000)
	m.cpu.WithLabelValues(workGrade).Add(float64(a.GradeCPUMS) / 1000)
	m.mu.Lock()
	m.stored[a.State]++
	m.mu.Unlock()
}

// graded adds the grade phase's time of an attempt's phases, if graded.
func (m *metrics) graded(phases []runs.PhaseTime) {
	for _, p := range phases {
		if p.Phase == apitype.PhaseGrade {
			m.grading.Observe(p.Duration.Seconds())
		}
	}
}

// outcomeOf is the outcome label of an ended attempt.
func outcomeOf(a apitype.Attempt) string {
	switch {
	case a.State == apitype.StateCanceled:
		return outcomeCanceled
	case a.State != apitype.StateDone:
		return outcomeInfraError
	case a.Outcome == apitype.OutcomeReview:
		return apitype.OutcomeReview
	case a.Outcome == apitype.OutcomePass, a.Outcome == "" && a.Pass:
		return apitype.OutcomePass
	}
	return apitype.OutcomeFail
}

// stateCollector reports benchd_attempts at each scrape.
type stateCollector struct {
	m    *metrics
	live func() (queued, running int)
	desc *prometheus.Desc
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	queued, running := c.live()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(queued), apitype.StateQueued)
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(running), apitype.StateRunning)
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for _, st := range endedStates {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.m.stored[st]), st)
	}
}

// listenMetrics opens the metrics listener on addr, a TCP host:port.
func listenMetrics(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("metrics address %q is not host:port: %v: %w", addr, err, errInvalid)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("unable to listen for metrics on %s: %w", addr, err)
	}
	return ln, nil
}

// metricsServer serves GET /metrics of m, and nothing else: never the
// API, which is for the unix socket's authorized callers only.
func metricsServer(m *metrics) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}

// serveMetrics serves srv on ln until it is shut down.
func serveMetrics(srv *http.Server, ln net.Listener, warn func(string, ...any)) {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		warn("metrics listener stopped", "err", err)
	}
}
