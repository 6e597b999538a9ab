package daemon

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
)

// discardResponse is a ResponseWriter that counts the body and keeps
// none of it.
type discardResponse struct {
	h    http.Header
	code int
	n    int64
}

func (d *discardResponse) Header() http.Header  { return d.h }
func (d *discardResponse) WriteHeader(code int) { d.code = code }
func (d *discardResponse) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	return len(p), nil
}

// TestExportMemory: the export of a journal at the record cap
// (fsmon.DefaultMaxRecords records, each with a long path) keeps
// benchd's heap growth under 100 MiB: the journal is streamed from the
// database, never held. The peak is sampled while the export runs and
// printed.
func TestExportMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and ingests a journal of a million records")
	}
	s := newStoreServer(t)
	ctx := t.Context()
	a := apitype.Attempt{ID: "a-big", Task: "rt-01", State: apitype.StateQueued, Created: time.Now().UTC()}
	if err := s.store.CreateAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(t.TempDir(), "journal.jsonl")
	w, err := journal.Create(jpath)
	if err != nil {
		t.Fatal(err)
	}
	const distinct = 256
	shas := make([]string, distinct)
	for i := range shas {
		if shas[i], err = w.Blobs().PutBytes([]byte(fmt.Sprintf("content %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("d", 200)
	now := time.Now()
	for i := range fsmon.DefaultMaxRecords {
		r := journal.Record{Mono: int64(i), Wall: now, Op: journal.OpRelease, Path: fmt.Sprintf("src/%s/%d.py", long, i),
			Result: "ok", Size: 9, SHA256: shas[i%distinct]}
		if _, err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.store.IngestJournal(ctx, "a-big", jpath); err != nil {
		t.Fatal(err)
	}
	a.State = apitype.StateDone
	if err := s.store.UpdateAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	out := &discardResponse{h: http.Header{}, code: 200}
	s.routes().ServeHTTP(out, httptest.NewRequest(http.MethodGet, "/v1/attempts/a-big/export", nil))
	close(stop)
	wg.Wait()
	var end runtime.MemStats
	runtime.ReadMemStats(&end)
	growth := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("export of %d records: %d MiB of archive, heap in use %d MiB before, peak growth %d MiB, %d MiB allocated in all",
		fsmon.DefaultMaxRecords, out.n>>20, base.HeapInuse>>20, growth>>20, (end.TotalAlloc-base.TotalAlloc)>>20)
	if out.code != 200 || out.n < 200<<20 {
		t.Fatalf("export: got status %d and %d bytes, want 200 and the whole journal", out.code, out.n)
	}
	if growth >= 100<<20 {
		t.Errorf("the export's heap grew by %d MiB, want under 100 MiB", growth>>20)
	}
}
