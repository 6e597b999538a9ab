package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"benchd.dev/client/apitype"
)

// crashDirEnv, when set, makes TestCrashRecovery the child process that
// gets killed.
const crashDirEnv = "STORE_TEST_CRASH_DIR"

// crashChild is the benchd that dies: it stores attempts in every state,
// ingests one journal, then dies by SIGKILL in the middle of a second
// ingest's transaction, with nothing closed.
func crashChild(dir string) {
	ctx := context.Background()
	fail := func(err error) {
		if err != nil {
			os.Stderr.WriteString("crash child: " + err.Error() + "\n")
			os.Exit(3)
		}
	}
	s, err := Open(ctx, Config{Dir: filepath.Join(dir, "state")})
	fail(err)
	fail(s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Attempts: []string{"queued", "running", "done"}, Created: base}))
	for _, a := range []apitype.Attempt{
		{ID: "queued", Run: "r1", Task: "rt-01", Created: base},
		{ID: "running", Run: "r1", Task: "rt-01", Created: base},
		{ID: "done", Run: "r1", Task: "rt-01", Created: base},
	} {
		fail(s.CreateAttempt(ctx, a))
	}
	fail(s.UpdateAttempt(ctx, apitype.Attempt{ID: "running", Run: "r1", Task: "rt-01", State: apitype.StateRunning, Phase: apitype.PhaseRun, Created: base}))
	fail(s.UpdateAttempt(ctx, apitype.Attempt{ID: "done", Run: "r1", Task: "rt-01", State: apitype.StateDone, Pass: true, Reward: 1, Created: base}))
	_, _, err = s.IngestJournal(ctx, "done", filepath.Join(dir, "journal.jsonl"))
	fail(err)
	// A write transaction left open: lines of "running" not committed.
	tx, err := s.w.BeginTx(ctx, nil)
	fail(err)
	for seq := uint64(1); seq <= 1000; seq++ {
		_, err := tx.ExecContext(ctx, `INSERT INTO journal_lines (k, line) VALUES (?, ?)`, lineKey(2, seq), []byte("partial"))
		fail(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestCrashRecovery kills a process using the store (SIGKILL, mid
// transaction), reopens the store and recovers: the database is intact,
// the attempt that was running is infra_error, the rest is as committed.
func TestCrashRecovery(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
		return
	}
	ctx := context.Background()
	dir := t.TempDir()
	jpath, _ := testJournal(t, dir, 10)
	want, err := os.ReadFile(jpath)
	must(t, err)

	cmd := exec.Command(os.Args[0], "-test.run", "^TestCrashRecovery$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: got %v (output %q), want it killed by SIGKILL", err, out)
	}

	s, err := Open(ctx, Config{Dir: filepath.Join(dir, "state")})
	must(t, err)
	defer s.Close()
	var check string
	must(t, s.w.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check))
	if check != "ok" {
		t.Errorf("integrity_check: got %q, want ok", check)
	}
	var fk int
	must(t, s.w.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fk))
	if fk != 0 {
		t.Errorf("foreign_key_check: got %d violations, want 0", fk)
	}

	ids, err := s.MarkInFlightInfraError(ctx, infraEnd("benchd restarted: the attempt was in flight"))
	must(t, err)
	if !reflect.DeepEqual(ids, []string{"running"}) {
		t.Errorf("recovered %v, want [running]", ids)
	}
	tests := []struct {
		id, state string
		pass      bool
	}{
		{"queued", apitype.StateQueued, false},
		{"running", apitype.StateInfraError, false},
		{"done", apitype.StateDone, true},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			a, err := s.GetAttempt(ctx, tt.id)
			must(t, err)
			if a.State != tt.state || a.Pass != tt.pass {
				t.Errorf("got state %q pass %v, want %q %v", a.State, a.Pass, tt.state, tt.pass)
			}
		})
	}
	t.Run("committed journal intact", func(t *testing.T) {
		var buf bytes.Buffer
		must(t, s.JournalLines(ctx, "done", &buf))
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("got %d bytes of journal, want the %d ingested", buf.Len(), len(want))
		}
	})
	t.Run("open transaction rolled back", func(t *testing.T) {
		var n int
		must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM journal_lines WHERE k >> 32 = 2`).Scan(&n))
		if n != 0 {
			t.Errorf("got %d uncommitted lines after the crash, want 0", n)
		}
	})
	t.Run("run intact", func(t *testing.T) {
		r, err := s.GetRun(ctx, "r1")
		must(t, err)
		if !reflect.DeepEqual(r.Attempts, []string{"queued", "running", "done"}) {
			t.Errorf("got attempts %v, want [queued running done]", r.Attempts)
		}
	})
}
