package runs

import (
	"testing"
)

// TestBenchdCPU: an agent that hammers its view with opens and reads is
// charged more of benchd's view CPU than an idle agent on the same
// task, and both are charged the CPU of grading rt-01 with pytest.
func TestBenchdCPU(t *testing.T) {
	e := newEngine(t)
	task := findTask(t, "rt-01")
	// Builtins only: every iteration is an open, a read and a stat
	// of a missing name through the view, and no fork.
	hammer := `i=0; while [ $i -lt 20000 ]; do read x < src/counter.py; [ -e src/missing$((i % 50)) ]; i=$((i+1)); done`
	busy, _ := runAttempt(t, e, Spec{AttemptID: "cpu1", Task: task, Agent: "sh -c '" + hammer + "'", Model: "none"})
	idle, _ := runAttempt(t, e, Spec{AttemptID: "cpu2", Task: task, Agent: "true", Model: "none"})
	b, i := busy.Attempt, idle.Attempt
	t.Logf("view CPU: hammering %d ms, idle %d ms; grading CPU: %d ms, %d ms", b.ViewCPUMS, i.ViewCPUMS, b.GradeCPUMS, i.GradeCPUMS)
	if b.ExitCode != 0 {
		t.Fatalf("hammering agent exit %d, want 0", b.ExitCode)
	}
	if b.ViewCPUMS <= 0 || b.ViewCPUMS <= i.ViewCPUMS {
		t.Errorf("got view CPU %d ms hammering, %d ms idle: want the hammering one > 0 and larger", b.ViewCPUMS, i.ViewCPUMS)
	}
	for _, a := range []struct {
		name string
		ms   int64
	}{{"hammering", b.GradeCPUMS}, {"idle", i.GradeCPUMS}} {
		if a.ms <= 0 {
			t.Errorf("%s attempt: grading CPU %d ms, want > 0 (pytest ran)", a.name, a.ms)
		}
	}
}
