package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// running creates queued attempt id of run r1 and starts it on host.
func running(t *testing.T, s *Store, id, host string) apitype.Attempt {
	t.Helper()
	mustCreate(t, s, apitype.Attempt{ID: id, Run: "r1", Task: "rt-01", Created: base})
	a, err := s.GetAttempt(context.Background(), id)
	must(t, err)
	a.State, a.Host = apitype.StateRunning, host
	must(t, s.StartAttempt(context.Background(), a))
	return a
}

// TestScoredOnce: a retry chain has at most one done attempt, by the
// scored table's key: whichever path writes a second done attempt of the
// chain is refused, and the first stays as it was.
func TestScoredOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		a := running(t, s, "a1", "h1")
		a.State, a.InfraError = apitype.StateInfraError, "host h1 went silent"
		must(t, s.UpdateAttempt(ctx, a))
		must(t, s.CreateRetry(ctx, apitype.Attempt{ID: "a2", Run: "r1", Task: "rt-01", Created: base}, "a1", nil))
		b, err := s.GetAttempt(ctx, "a2")
		must(t, err)
		b.State, b.Host = apitype.StateRunning, "h2"
		must(t, s.StartAttempt(ctx, b))
		b.State, b.Pass, b.Reward = apitype.StateDone, true, 1
		must(t, s.Finish(ctx, Finish{Attempt: b}))
		// Regrading the scored attempt writes it again: no new score.
		b.Reasons = []apitype.Reason{{Code: "regraded", Message: "again"}}
		must(t, s.UpdateAttempt(ctx, b))

		// The given-up first attempt written done (a host that came back,
		// or a bug): refused.
		a.State, a.Pass, a.Reward, a.InfraError = apitype.StateDone, false, 0, ""
		err = s.UpdateAttempt(ctx, a)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("second done attempt of a chain: got %v, want ErrConflict", err)
		}
		got, err := s.GetAttempt(ctx, "a1")
		must(t, err)
		if got.State != apitype.StateInfraError {
			t.Errorf("a1 after the refused score: got state %s, want %s", got.State, apitype.StateInfraError)
		}
		var n int
		must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM scored`).Scan(&n))
		if n != 1 {
			t.Errorf("got %d scored rows, want 1", n)
		}
	})
}

// TestFinishOnlyOwnRunning: the end of an attempt is recorded only by
// the host it runs on and only while it runs; nothing of a refused end is
// committed (its journal included, and whatever InTx did).
func TestFinishOnlyOwnRunning(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		a := running(t, s, "a1", "h1")
		jpath, _ := testJournal(t, t.TempDir(), 3)

		// Queued attempts cannot be started twice.
		again := a
		again.Host = "h2"
		if err := s.StartAttempt(ctx, again); !errors.Is(err, ErrConflict) {
			t.Fatalf("second start: got %v, want ErrConflict", err)
		}
		done := a
		done.State = apitype.StateDone
		done.Host = "h2"
		inTx := false
		err := s.Finish(ctx, Finish{Attempt: done, JournalPath: jpath, InTx: func(context.Context, *sql.Tx) error { inTx = true; return nil }})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("finish by another host: got %v, want ErrConflict", err)
		}
		if inTx {
			t.Errorf("InTx ran for a refused finish")
		}
		if _, err := s.Journal(ctx, "a1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("journal of a refused finish: got %v, want ErrNotFound", err)
		}
		// An InTx that fails rolls the whole end back.
		done.Host = "h1"
		boom := errors.New("boom")
		if err := s.Finish(ctx, Finish{Attempt: done, JournalPath: jpath, InTx: func(context.Context, *sql.Tx) error { return boom }}); !errors.Is(err, boom) {
			t.Fatalf("finish with a failing InTx: got %v, want boom", err)
		}
		if got, _ := s.GetAttempt(ctx, "a1"); got.State != apitype.StateRunning {
			t.Errorf("after a failed InTx: got state %s, want running", got.State)
		}
		// The host's own end goes in, journal head and all.
		must(t, s.Finish(ctx, Finish{Attempt: done, JournalPath: jpath, InTx: func(context.Context, *sql.Tx) error { inTx = true; return nil }}))
		got, err := s.GetAttempt(ctx, "a1")
		must(t, err)
		j, err := s.Journal(ctx, "a1")
		must(t, err)
		if !inTx || got.State != apitype.StateDone || got.JournalHead == "" || got.JournalHead != j.Head {
			t.Errorf("after finish: inTx %v, state %s, head %q (journal's %q)", inTx, got.State, got.JournalHead, j.Head)
		}
		// A journal that is not one is ErrJournal, with nothing stored.
		b := running(t, s, "a2", "h1")
		b.State = apitype.StateDone
		bad := t.TempDir() + "/bad.jsonl"
		must(t, os.WriteFile(bad, []byte("not a journal\n"), 0o644))
		if err := s.Finish(ctx, Finish{Attempt: b, JournalPath: bad}); !errors.Is(err, ErrJournal) {
			t.Fatalf("finish with a bad journal: got %v, want ErrJournal", err)
		}
		if got, _ := s.GetAttempt(ctx, "a2"); got.State != apitype.StateRunning {
			t.Errorf("after a bad journal: got state %s, want running", got.State)
		}
	})
}

// TestRescue: an attempt whose host is silent is given up once, in one
// transaction with its retry; one whose host beats is left alone, and
// the silent host can record nothing of it afterwards.
func TestRescue(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		a := running(t, s, "a1", "h1")
		retry := func(id string) apitype.Attempt {
			return apitype.Attempt{ID: id, Run: "r1", Task: "rt-01", Created: base}
		}
		// Alive: seen just now.
		got, err := s.Rescue(ctx, "a1", time.Now().Add(-time.Minute), infraEnd("silent"), retry("b0"), nil, nil)
		must(t, err)
		if got != RescueAlive {
			t.Fatalf("rescue of a live host's attempt: got %v, want RescueAlive", got)
		}
		if _, err := s.GetAttempt(ctx, "b0"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a retry was made for a live host: %v", err)
		}
		// Silent, with an InTx that fails: nothing changes.
		boom := errors.New("boom")
		_, err = s.Rescue(ctx, "a1", time.Now().Add(time.Minute), infraEnd("silent"), retry("b1"), nil,
			func(context.Context, *sql.Tx) error { return boom })
		if !errors.Is(err, boom) {
			t.Fatalf("rescue with a failing InTx: got %v, want boom", err)
		}
		if g, _ := s.GetAttempt(ctx, "a1"); g.State != apitype.StateRunning {
			t.Errorf("after a failed rescue: got %s, want running", g.State)
		}
		// Silent hosts' attempts are rescued once, however many try.
		var wg sync.WaitGroup
		results := make([]Rescued, 8)
		for i := range results {
			wg.Go(func() {
				r, err := s.Rescue(ctx, "a1", time.Now().Add(time.Minute), infraEnd("host h1 went silent"), retry("b-"+string(rune('a'+i))), []byte(`{}`), nil)
				if err != nil {
					t.Errorf("rescue %d: %v", i, err)
				}
				results[i] = r
			})
		}
		wg.Wait()
		n := 0
		for _, r := range results {
			if r == RescueDone {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("got %d rescues of one attempt, want 1 (%v)", n, results)
		}
		g, err := s.GetAttempt(ctx, "a1")
		must(t, err)
		if g.State != apitype.StateInfraError || !strings.Contains(g.InfraError, "silent") || g.RetriedBy == "" {
			t.Errorf("rescued attempt: state %s, infra_error %q, retried_by %q", g.State, g.InfraError, g.RetriedBy)
		}
		// The silent host comes back: it records nothing.
		a.State = apitype.StateDone
		if err := s.Finish(ctx, Finish{Attempt: a}); !errors.Is(err, ErrConflict) {
			t.Errorf("finish after the rescue: got %v, want ErrConflict", err)
		}
		a.State, a.Phase = apitype.StateRunning, apitype.PhaseGrade
		if err := s.UpdateRunning(ctx, a); !errors.Is(err, ErrConflict) {
			t.Errorf("phase update after the rescue: got %v, want ErrConflict", err)
		}
	})
}

// TestHeartbeatCancel: a heartbeat keeps a host's attempts alive and
// hands it the cancels other hosts asked for.
func TestHeartbeatCancel(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
		running(t, s, "a1", "h1")
		running(t, s, "a2", "h2")
		mustCreate(t, s, apitype.Attempt{ID: "q", Run: "r1", Task: "rt-01", Created: base})
		if err := s.RequestCancel(ctx, "q"); !errors.Is(err, ErrConflict) {
			t.Errorf("cancel request of a queued attempt: got %v, want ErrConflict", err)
		}
		must(t, s.RequestCancel(ctx, "a2"))
		ids, err := s.Heartbeat(ctx, "h1")
		must(t, err)
		if len(ids) != 0 {
			t.Errorf("h1's cancels: got %v, want none", ids)
		}
		ids, err = s.Heartbeat(ctx, "h2")
		must(t, err)
		if len(ids) != 1 || ids[0] != "a2" {
			t.Errorf("h2's cancels: got %v, want [a2]", ids)
		}
		// Its beat keeps it alive past an earlier stale mark.
		before := time.Now()
		_, err = s.Heartbeat(ctx, "h1")
		must(t, err)
		got, err := s.Rescue(ctx, "a1", before, infraEnd("silent"), apitype.Attempt{ID: "r", Run: "r1", Task: "rt-01", Created: base}, nil, nil)
		must(t, err)
		if got != RescueAlive {
			t.Errorf("after a heartbeat: got %v, want RescueAlive", got)
		}
		// Recovery at start marks only its own host's.
		lost, err := s.MarkHostInFlightInfraError(ctx, infraEnd("benchd stopped"), "h1")
		must(t, err)
		if len(lost) != 1 || lost[0] != "a1" {
			t.Errorf("h1's recovery: got %v, want [a1]", lost)
		}
		if g, _ := s.GetAttempt(ctx, "a2"); g.State != apitype.StateRunning {
			t.Errorf("h2's attempt after h1's recovery: got %s, want running", g.State)
		}
	})
}

// TestMigrateScoresDone: the step that adds scored scores the attempts
// done before it, so a store upgraded mid-run keeps the rule.
func TestMigrateScoresDone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openAtVersion(t, dir, stepIndex(t, migrations, "hosts and scores"))
	for i, st := range []string{apitype.StateDone, apitype.StateInfraError, apitype.StateDone} {
		a := fullAttempt("m" + string(rune('0'+i)))
		a.Run, a.State = "", st
		insertOld(t, db, a)
	}
	must(t, db.Close())
	s, err := Open(ctx, Config{Dir: dir})
	must(t, err)
	defer s.Close()
	var n int
	must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM scored`).Scan(&n))
	if n != 2 {
		t.Errorf("got %d scored rows after the migration, want 2", n)
	}
}
