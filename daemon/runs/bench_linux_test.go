package runs

import (
	"benchd.dev/internal/undo"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// BenchmarkAttemptOverhead measures the time benchd itself adds to an
// attempt, grading left out (the grader's time is the task's): prepare,
// mount, confine, run, collect, and the teardown of what is left. One
// attempt per iteration; run it as
//
//	go test -run '^$' -bench AttemptOverhead -benchtime 50x ./daemon/runs
//
// for the median of 50. builtin:null is the figure (no sandbox:
// built-ins are applied by benchd); /bin/true shows what confining a
// command agent adds (cgroup, namespace, sandbox; the run phase holds
// the agent's run and the teardown of its cgroup and namespace). Each
// agent runs twice, with the attempt's disk (mkfs.ext4, loop device,
// mount, in the prepare phase; its unmount in the teardown) and without
// (the backing dir in the state dir), and the ratio of the medians is
// logged: what the disk costs an attempt.
func BenchmarkAttemptOverhead(b *testing.B) {
	for _, agent := range []string{apitype.AgentNull, "/bin/true"} {
		name := strings.NewReplacer(":", "-", "/", "_").Replace(agent)
		medians := map[bool]time.Duration{}
		for _, disk := range []bool{true, false} {
			sub := name + "/disk"
			if !disk {
				sub = name + "/nodisk"
			}
			b.Run(sub, func(b *testing.B) { medians[disk] = benchAttempts(b, agent, disk) })
		}
		if medians[false] > 0 {
			b.Logf("%s: the attempt's disk: %v with it, %v without, ratio %.2f", agent,
				medians[true].Round(10*time.Microsecond), medians[false].Round(10*time.Microsecond),
				float64(medians[true])/float64(medians[false]))
		}
	}
}

// benchAttempts runs b.N attempts of agent on RT-01 up to grading, with
// or without the attempt's disk, logs the median of each phase and
// returns the median total.
func benchAttempts(b *testing.B, agent string, disk bool) time.Duration {
	e := newEngineWith(b, Config{noDisk: !disk})
	task := findTask(b, "rt-01")
	ctx := context.Background()
	parts := map[string][]time.Duration{}
	var order []string
	var totals []time.Duration
	b.ResetTimer()
	for i := range b.N {
		var undos undo.Stack
		t0 := time.Now()
		id := fmt.Sprintf("o%d", i)
		// The steps before grading: benchd's own cost.
		plan, err := e.Plan(Spec{Task: task, Agent: agent})
		if err != nil {
			b.Fatal(err)
		}
		r, err := e.newAttempt(id, plan, nil, &undos, &cutShort{})
		if err != nil {
			b.Fatal(err)
		}
		for _, st := range r.steps() {
			if st.name == "grade" {
				break
			}
			if err := st.run(ctx); err != nil {
				b.Fatal(err)
			}
		}
		r.enter("")
		out := Outcome{Attempt: r.a}
		t1 := time.Now()
		if err := undos.Run(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if out.Attempt.ExitCode != 0 {
			b.Fatalf("got exit %d, want 0", out.Attempt.ExitCode)
		}
		for _, p := range append(r.phases, PhaseTime{"teardown", t2.Sub(t1)}) {
			if _, ok := parts[p.Phase]; !ok {
				order = append(order, p.Phase)
			}
			parts[p.Phase] = append(parts[p.Phase], p.Duration)
		}
		totals = append(totals, t2.Sub(t0))
		// The record (backing copy, journal) is the store's to
		// keep; here it only fills the disk.
		os.RemoveAll(e.AttemptDir(id))
	}
	b.StopTimer()
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: median of %d attempts: total %v =", agent, len(totals), median(totals).Round(10*time.Microsecond))
	for _, p := range order {
		fmt.Fprintf(&sb, " %s %v", p, median(parts[p]).Round(10*time.Microsecond))
	}
	b.Log(sb.String())
	b.ReportMetric(float64(median(totals).Microseconds())/1000, "median-ms/attempt")
	return median(totals)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
