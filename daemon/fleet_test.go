package daemon

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pgtest.StopShared(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		code = 1
	}
	os.Exit(code)
}

// TestBlobFromAnotherHost: two benchd hosts share a PostgreSQL store and
// no file system; an attempt's journal ingested on one, its blob is
// served by the other, fetched into that host's cache.
func TestBlobFromAnotherHost(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	open := func() *store.Store {
		st, err := store.Open(ctx, store.Config{Dir: t.TempDir(), Database: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, b := open(), open()

	dir := t.TempDir()
	jpath := filepath.Join(dir, "journal.jsonl")
	w, err := journal.Create(jpath)
	if err != nil {
		t.Fatal(err)
	}
	content := []byte("count = 1\n")
	sha, err := w.Blobs().PutBytes(content)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, r := range []journal.Record{
		{Op: journal.OpMount, SHA256: journal.HashBytes(nil)},
		{Op: journal.OpRelease, Path: "counter.py", SHA256: sha, Size: int64(len(content)), Decision: journal.Allowed},
		{Op: journal.OpUnmount, SHA256: journal.HashBytes(nil)},
	} {
		r.Wall, r.Result = now, "ok"
		if _, err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	const id = "a-fleet-0001"
	if err := a.CreateAttempt(ctx, apitype.Attempt{ID: id, Task: "rt-01", Created: now}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.IngestJournal(ctx, id, jpath); err != nil {
		t.Fatal(err)
	}
	if b.Blobs().Has(sha) {
		t.Fatalf("host b has blob %s before it was asked for it", sha)
	}

	s := &server{cfg: Config{TasksDir: "../tasks"}, log: slog.New(slog.DiscardHandler), store: b, live: map[string]*liveAttempt{}}
	rec := httptest.NewRecorder()
	s.routes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/attempts/"+id+"/blobs/"+sha, nil))
	if rec.Code != http.StatusOK || rec.Body.String() != string(content) {
		t.Fatalf("GET blob on host b: got %d %q, want 200 %q", rec.Code, rec.Body, content)
	}
	if err := b.Blobs().Verify(sha); err != nil {
		t.Errorf("host b's cache: %v", err)
	}
}
