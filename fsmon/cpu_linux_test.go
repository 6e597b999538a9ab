package fsmon_test

import (
	"os"
	"testing"
	"time"

	"benchd.dev/fsmon"
)

// TestStatsCPU: a view whose workspace is hammered with opens and reads
// reports more CPU time than a view left idle for as long, and the
// hammered one more than zero; the time is the view's, so an idle
// view mounted beside the hammered one is not charged for it.
func TestStatsCPU(t *testing.T) {
	busy := mount(t, fsmon.ModeWrites)
	idle := mount(t, fsmon.ModeWrites)
	idleBefore := idle.v.Stats().CPU
	start := time.Now()
	for i := 0; i < 3000; i++ {
		b, err := os.ReadFile(busy.p("src/counter.py"))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatal("read src/counter.py: empty")
		}
		if _, err := os.Stat(busy.p("src/missing-" + string(rune('a'+i%26)))); err == nil {
			t.Fatal("stat of a missing file succeeded")
		}
	}
	took := time.Since(start)
	got, idleGot := busy.v.Stats().CPU, idle.v.Stats().CPU-idleBefore
	t.Logf("busy view: %v CPU over %v of hammering; idle view: %v", got, took, idleGot)
	if got <= 0 {
		t.Fatalf("hammered view CPU = %v, want > 0", got)
	}
	if got <= idleGot {
		t.Errorf("hammered view CPU %v, idle view %v: want the hammered one larger", got, idleGot)
	}
	if got > took*2 {
		t.Errorf("hammered view CPU %v exceeds twice the wall time %v", got, took)
	}
}
