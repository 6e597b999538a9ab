package runs

import (
	"strings"
	"sync"
	"testing"

	"benchd.dev/fsmon/journal"
	"benchd.dev/sandbox"
)

// TestAttemptUIDs: with a uid pool, two attempts running at once write
// their workspaces as two different uids of the range, each its own
// uid's files; grading takes a uid apart from the agent's; every uid is
// back in the pool when the attempts end.
func TestAttemptUIDs(t *testing.T) {
	r := sandbox.UIDRange{First: 1879048192, Last: 1879048192 + 15}
	pool := sandbox.NewUIDPool(r)
	e := newEngineWith(t, Config{UIDs: pool})
	task := findTask(t, "rt-01")
	agent := "sh -c '" + strings.ReplaceAll(fixRT01, "'", `'\''`) + " && sleep 2'"
	uids := make([]map[uint32]bool, 2)
	var wg sync.WaitGroup
	for i := range uids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _ := runAttempt(t, e, Spec{AttemptID: "u" + string(rune('1'+i)), Task: task, Agent: agent, Model: "none"})
			if !out.Attempt.Pass {
				t.Errorf("attempt %d: got a failure %v, want a pass", i, out.Attempt.Reasons)
			}
			recs, err := journal.Read(out.JournalPath)
			if err != nil {
				t.Error(err)
				return
			}
			uids[i] = map[uint32]bool{}
			for _, rec := range recs {
				if rec.Op == journal.OpOpen && rec.PID > 0 {
					uids[i][rec.UID] = true
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var got []uint32
	for i, set := range uids {
		if len(set) != 1 {
			t.Fatalf("attempt %d: its records carry uids %v, want exactly one", i, set)
		}
		for u := range set {
			if int(u) < r.First || int(u) > r.Last {
				t.Errorf("attempt %d ran as uid %d, outside %s", i, u, r)
			}
			got = append(got, u)
		}
	}
	if got[0] == got[1] {
		t.Errorf("two attempts at once both ran as uid %d", got[0])
	}
	if n := pool.InUse(); n != 0 {
		t.Errorf("%d uids still held after the attempts ended", n)
	}
	// Two agents and two gradings took four uids, each apart: the pool,
	// going round the range, hands out the fifth next.
	u, release, err := pool.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	release()
	if u != r.First+4 {
		t.Errorf("next uid %d, want %d: the gradings did not take uids of their own", u, r.First+4)
	}
}
