package daemon

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/internal/pgtest"
	"benchd.dev/tasks"
)

// nullRun is an attempt that does nothing: what is left of an attempt
// is its coordination (queue, start, end, signature).
func nullRun(context.Context, string, *runs.Plan, func(apitype.Event)) (runs.Outcome, error) {
	return runs.Outcome{}, nil
}

// coordHost is one benchd of the coordination benchmark: a server with
// the null runner, on its own state directory, sharing database url
// ("" for SQLite).
func coordHost(b testing.TB, url, host string, concurrency int) (*server, func()) {
	b.Helper()
	ctx := context.Background()
	state := b.TempDir()
	if err := os.Mkdir(filepath.Join(state, "queue"), 0o700); err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(ctx, store.Config{Dir: state, Database: url})
	if err != nil {
		b.Fatal(err)
	}
	key, err := HostKey(state)
	if err != nil {
		b.Fatal(err)
	}
	s := &server{
		cfg: Config{StateDir: state, TasksDir: "../tasks", MaxQueued: 100000, Concurrency: concurrency,
			Host: host, RescueAfter: time.Hour, Heartbeat: time.Second},
		log: slog.New(slog.DiscardHandler), store: st, key: key, runner: nullRun,
		live: map[string]*liveAttempt{}, secrets: &secretSet{},
		closing: make(chan struct{}), stopFleet: make(chan struct{}),
	}
	s.metrics = newMetrics(host, s.counts)
	s.cond = sync.NewCond(&s.mu)
	s.workCtx, s.stopWork = context.WithCancelCause(ctx)
	var workers sync.WaitGroup
	if url != "" {
		if s.fleet, err = newFleet(ctx, s); err != nil {
			b.Fatal(err)
		}
		if err := s.fleet.start(ctx); err != nil {
			b.Fatal(err)
		}
		workers.Go(func() { <-s.stopFleet; s.fleet.stop() })
	} else {
		for range concurrency {
			workers.Go(s.work)
		}
	}
	return s, func() {
		s.shutdown(&workers)
		st.Close()
	}
}

// TestSettle: an attempt whose end its host could not record (here the
// scored table is gone while it runs) is not left running with its job
// complete: the host records it as an infra error of its own.
func TestSettle(t *testing.T) {
	url := pgtest.Database(t)
	s, stop := coordHost(t, url, "settle", 1)
	defer stop()
	db := s.store.DB()
	broke := make(chan error, 1)
	s.runner = func(context.Context, string, *runs.Plan, func(apitype.Event)) (runs.Outcome, error) {
		_, err := db.Exec(`ALTER TABLE scored RENAME TO scored_gone`)
		broke <- err
		return runs.Outcome{}, nil
	}
	task, err := tasks.Find("../tasks", "rt-01")
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.submit(context.Background(), submitted{n: 1, tasks: []submittedTask{{task: task,
		plan: &runs.Plan{Identity: apitype.AgentIdentity{Spec: apitype.AgentNull},
			Request: runs.Request{Task: task.ID, Agent: apitype.AgentNull, Timeout: "1m0s"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-broke; err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := s.awaitStored(wctx, run.Attempts[0])
	if _, rerr := db.Exec(`ALTER TABLE scored_gone RENAME TO scored`); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if a.State != apitype.StateInfraError || !strings.Contains(a.InfraError, "unable to record the end") {
		t.Errorf("got state %s (%q), want an infra error of the unrecorded end", a.State, a.InfraError)
	}
}

// dbActiveMS is PostgreSQL's time spent running statements in the
// database of url so far (pg_stat_database.active_time, ms).
func dbActiveMS(b *testing.B, db *sql.DB) float64 {
	b.Helper()
	var ms float64
	if _, err := db.Exec(`SELECT pg_stat_clear_snapshot()`); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRow(`SELECT active_time FROM pg_stat_database WHERE datname = current_database()`).Scan(&ms); err != nil {
		b.Fatal(err)
	}
	return ms
}

// BenchmarkFleetCoordination: 1,000 attempts that do nothing, submitted
// to one host, through 1, 2 and 3 hosts of a fleet on one PostgreSQL
// database, against one host on SQLite and its local queue in the same
// run: attempts per second, the per-attempt overhead, and the share of
// the wall time the database spent running statements (all hosts'
// sessions together; above 100% it ran statements of several at once).
//
//	go test -run '^$' -bench FleetCoordination -benchtime 1x ./daemon
func BenchmarkFleetCoordination(b *testing.B) {
	const attempts, concurrency = 1000, 8
	task, err := tasks.Find("../tasks", "rt-01")
	if err != nil {
		b.Fatal(err)
	}
	submit := func(s *server) {
		sub := submitted{n: 100, tasks: []submittedTask{{task: task,
			plan: &runs.Plan{Identity: apitype.AgentIdentity{Spec: apitype.AgentNull},
				Request: runs.Request{Task: task.ID, Agent: apitype.AgentNull, Timeout: "1m0s"}}}}}
		for range attempts / sub.n {
			if _, err := s.submit(context.Background(), sub); err != nil {
				b.Fatal(err)
			}
		}
	}
	ended := func(s *server) int {
		n, err := s.store.CountStates(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		return n[apitype.StateDone]
	}
	var baseline float64
	for _, c := range []struct {
		name  string
		hosts int
		pg    bool
	}{
		{"sqlite-local-queue", 1, false},
		{"postgres-river-1-host", 1, true},
		{"postgres-river-2-hosts", 2, true},
		{"postgres-river-3-hosts", 3, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				url := ""
				if c.pg {
					url = pgtest.Database(b)
				}
				var hosts []*server
				for i := range c.hosts {
					s, stop := coordHost(b, url, fmt.Sprintf("bench-%d", i), concurrency)
					defer stop()
					hosts = append(hosts, s)
				}
				var db *sql.DB
				before := 0.0
				if c.pg {
					db = hosts[0].store.DB()
					before = dbActiveMS(b, db)
				}
				b.StartTimer()
				start := time.Now()
				submit(hosts[0])
				for ended(hosts[0]) < attempts {
					time.Sleep(20 * time.Millisecond)
				}
				wall := time.Since(start)
				b.StopTimer()
				rate := attempts / wall.Seconds()
				b.ReportMetric(rate, "attempts/s")
				b.ReportMetric(float64(wall.Microseconds())/1000/attempts, "ms/attempt")
				if c.pg {
					share := (dbActiveMS(b, db) - before) / float64(wall.Milliseconds())
					b.ReportMetric(100*share, "db-%")
				}
				if !c.pg {
					baseline = rate
				} else if baseline > 0 {
					b.ReportMetric(rate/baseline, "x-sqlite")
				}
				per := map[string]int{}
				list, err := hosts[0].store.ListAttempts(context.Background(), store.Filter{})
				if err != nil {
					b.Fatal(err)
				}
				for _, a := range list {
					per[a.Host]++
				}
				b.Logf("%s: %d attempts in %v (%.1f/s), per host %v", c.name, attempts, wall.Round(time.Millisecond), rate, per)
				b.StartTimer()
			}
		})
	}
}
