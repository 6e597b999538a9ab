package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
	"benchd.dev/fsmon/journal"
)

// TestRecoverJournals: a journal file left by a benchd that died
// (records flushed, no unmount, a torn last line) is sealed and stored
// at start-up, and the attempt gets its head, changeset and counts; an
// attempt still queued is left alone.
func TestRecoverJournals(t *testing.T) {
	ctx := context.Background()
	st, cfg := recoveryStore(t)
	state := cfg.StateDir
	log := slog.New(slog.DiscardHandler)

	for _, id := range []string{"a-crashed", "a-queued"} {
		if err := st.CreateAttempt(ctx, apitype.Attempt{ID: id, Task: "rt-01", Reasons: []apitype.Reason{}, Changeset: []apitype.Change{}}); err != nil {
			t.Fatal(err)
		}
		leaveJournal(t, filepath.Join(state, "attempts", id))
	}
	markInterrupted(t, st, "a-crashed")

	recoverJournals(ctx, st, cfg, log)

	ji, err := st.Journal(ctx, "a-crashed")
	if err != nil {
		t.Fatalf("journal of the crashed attempt after recovery: %v", err)
	}
	got, err := st.GetAttempt(ctx, "a-crashed")
	if err != nil {
		t.Fatal(err)
	}
	if got.JournalHead != ji.Head || got.State != apitype.StateInfraError {
		t.Errorf("recovered attempt: got head %q state %s, want the stored head %s, infra_error", got.JournalHead, got.State, ji.Head)
	}
	if len(got.Changeset) != 1 || got.Changeset[0].Path != "src/counter.py" || got.Changeset[0].Kind != journal.Modified || got.Edits != 3 || got.Denied != 0 {
		t.Errorf("recovered attempt: got changeset %+v, %d edits, %d denied; want src/counter.py modified, 3 edits (the cap record none), 0 denied", got.Changeset, got.Edits, got.Denied)
	}
	// The stored journal verifies with the store's blobs.
	f, err := os.CreateTemp(t.TempDir(), "j")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.JournalLines(ctx, "a-crashed", f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	recs, err := journal.Read(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := journal.Verify(recs, st.Blobs()); err != nil {
		t.Errorf("the stored journal does not verify: %v", err)
	}
	if err := journal.VerifyReplay(recs, st.Blobs()); err != nil {
		t.Errorf("the stored journal does not replay: %v", err)
	}
	if _, err := st.Journal(ctx, "a-queued"); err == nil {
		t.Error("the journal of a queued attempt was stored by recovery")
	}
}

// leaveJournal makes dir/backing (src/counter.py) and dir/journal.jsonl
// as a benchd killed mid-attempt leaves them: a mount, an open, a write
// and a release of src/counter.py, then half a line.
func leaveJournal(t *testing.T, dir string) {
	t.Helper()
	backing := filepath.Join(dir, "backing")
	if err := os.MkdirAll(filepath.Join(backing, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(backing, "src", "counter.py")
	if err := os.WriteFile(p, []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(dir, "journal.jsonl")
	w, err := journal.Create(jpath)
	if err != nil {
		t.Fatal(err)
	}
	initial, err := journal.SnapshotTree(backing, w.Blobs())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	app := func(r journal.Record) {
		r.Wall = now
		if r.Result == "" {
			r.Result = "ok"
		}
		if _, err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	app(journal.Record{Op: journal.OpMount, SHA256: initial.ManifestHash()})
	app(journal.Record{Op: journal.OpOpen, Path: "src/counter.py", Flags: 1, Decision: journal.Allowed})
	app(journal.Record{Op: journal.OpWrite, Path: "src/counter.py", Size: 6, Decision: journal.Allowed})
	if err := os.WriteFile(p, []byte("x = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sha, size, err := w.Blobs().PutFile(p)
	if err != nil {
		t.Fatal(err)
	}
	app(journal.Record{Op: journal.OpRelease, Path: "src/counter.py", SHA256: sha, Size: size, Decision: journal.Allowed})
	// A cap's refusal: not an edit, not a denial.
	app(journal.Record{Op: journal.OpCap, Name: journal.CapFiles, Path: "src/more.py", Result: "EDQUOT"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(jpath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":6,"t_ns":12,"wall":"2026-12-`)
	f.Close()
}

// TestRecoverUnsealable: a benchd killed before its journal reached the
// disk leaves an empty journal file, which cannot be sealed; the
// transcript and the model calls beside it are stored all the same, a
// call in progress at the kill ending as cut short, and recovery at a
// second start stores nothing twice.
func TestRecoverUnsealable(t *testing.T) {
	ctx := context.Background()
	st, cfg := recoveryStore(t)
	log := slog.New(slog.DiscardHandler)
	const id = "a-killed"
	if err := st.CreateAttempt(ctx, apitype.Attempt{ID: id, Task: "rt-01", Reasons: []apitype.Reason{}, Changeset: []apitype.Change{}}); err != nil {
		t.Fatal(err)
	}
	markInterrupted(t, st, id)
	dir := filepath.Join(cfg.StateDir, "attempts", id)
	if err := os.MkdirAll(filepath.Join(dir, "backing"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"journal.jsonl": "",
		"stdout":        "asking the model\n",
		"stderr":        "",
		"model.jsonl":   `{"seq":1,"gateway":"model","method":"POST","path":"/v1/responses","error":"in progress"}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	for start := 1; start <= 2; start++ {
		updated := recoverJournals(ctx, st, cfg, log)
		if want := map[int]int{1: 1, 2: 0}[start]; len(updated) != want {
			t.Errorf("start %d: recovery updated %v, want %d attempts", start, updated, want)
		}
	}
	if _, err := st.Journal(ctx, id); err == nil {
		t.Error("an empty journal was stored as if sealed")
	}
	tr, err := st.Transcript(ctx, id)
	if err != nil || string(tr.Stdout) != "asking the model\n" {
		t.Errorf("transcript: got %+v, %v; want the agent's stdout", tr, err)
	}
	calls, err := st.ModelCalls(ctx, id)
	if err != nil || len(calls) != 1 {
		t.Fatalf("model calls: got %d, %v; want the one call, once", len(calls), err)
	}
	got, err := st.GetAttempt(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Model == nil || got.Model.Calls != 1 || got.State != apitype.StateInfraError {
		t.Errorf("attempt: got state %s, model %+v; want infra_error with one call summed", got.State, got.Model)
	}
}

// recoveryStore opens a store in a new state directory, closed at the
// test's end, and returns it with a Config of that state directory and
// the repository's tasks.
func recoveryStore(t *testing.T) (*store.Store, Config) {
	t.Helper()
	state := t.TempDir()
	st, err := store.Open(context.Background(), store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, Config{StateDir: state, TasksDir: filepath.Join("..", "tasks")}
}

// markInterrupted ends attempt id as start-up does one that was in
// flight when benchd died: an infra error.
func markInterrupted(t *testing.T, st *store.Store, id string) {
	t.Helper()
	ctx := context.Background()
	a, err := st.GetAttempt(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	a.State, a.InfraError = apitype.StateInfraError, "benchd stopped while the attempt ran"
	if err := st.UpdateAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
}
