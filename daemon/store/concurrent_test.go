package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// TestConcurrentUse runs attempts' whole store life cycles from several
// goroutines at once (create, running, ingest, transcript, done) while
// others list attempts and read journals, as the daemon's queue does.
func TestConcurrentUse(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		path, recs := testJournal(t, t.TempDir(), 300)
		want, err := os.ReadFile(path)
		must(t, err)
		const workers, perWorker = 6, 5
		ids := make([]string, 0, workers*perWorker)
		for w := 0; w < workers; w++ {
			for i := 0; i < perWorker; i++ {
				ids = append(ids, fmt.Sprintf("w%d-%d", w, i))
			}
		}
		must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Attempts: ids, Created: base}))

		var (
			wg       sync.WaitGroup
			errs     = make(chan error, 100)
			finished = make(chan struct{})
		)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perWorker; i++ {
					if err := lifeCycle(ctx, s, fmt.Sprintf("w%d-%d", w, i), path); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		var readers sync.WaitGroup
		for r := 0; r < 2; r++ {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for {
					select {
					case <-finished:
						return
					default:
					}
					list, err := s.ListAttempts(ctx, Filter{Run: "r1", States: []string{apitype.StateDone}})
					if err != nil {
						errs <- err
						return
					}
					for _, a := range list {
						var buf bytes.Buffer
						if err := s.JournalLines(ctx, a.ID, &buf); err != nil {
							errs <- err
							return
						}
						if !bytes.Equal(buf.Bytes(), want) {
							errs <- fmt.Errorf("attempt %s: got %d bytes of journal, want %d", a.ID, buf.Len(), len(want))
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(finished)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}

		list, err := s.ListAttempts(ctx, Filter{Run: "r1"})
		must(t, err)
		if len(list) != len(ids) {
			t.Fatalf("got %d attempts, want %d", len(list), len(ids))
		}
		for _, a := range list {
			if a.State != apitype.StateDone || a.JournalHead != recs[len(recs)-1].Hash || !a.Pass {
				t.Errorf("attempt %s: got state %q head %s pass %v, want done, the journal's head, pass", a.ID, a.State, a.JournalHead, a.Pass)
			}
			tr, err := s.Transcript(ctx, a.ID)
			if err != nil || tr.Stdout != "stdout of "+a.ID {
				t.Errorf("attempt %s: got transcript %q, %v; want its own", a.ID, tr.Stdout, err)
			}
		}
	})
}

// lifeCycle is what the daemon stores for one attempt.
func lifeCycle(ctx context.Context, s *Store, id, journalPath string) error {
	a := apitype.Attempt{ID: id, Run: "r1", Task: "rt-01", Created: time.Now()}
	if err := s.CreateAttempt(ctx, a); err != nil {
		return err
	}
	a.State = apitype.StateQueued
	for _, phase := range []string{apitype.PhasePrepare, apitype.PhaseRun, apitype.PhaseStore} {
		a.State, a.Phase = apitype.StateRunning, phase
		if err := s.UpdateAttempt(ctx, a); err != nil {
			return err
		}
	}
	head, _, err := s.IngestJournal(ctx, id, journalPath)
	if err != nil {
		return err
	}
	if err := s.SaveTranscript(ctx, id, apitype.Transcript{Stdout: "stdout of " + id}); err != nil {
		return err
	}
	a.State, a.Pass, a.Reward, a.JournalHead = apitype.StateDone, true, 1, head
	if err := s.UpdateAttempt(ctx, a); err != nil {
		return err
	}
	got, err := s.GetAttempt(ctx, id)
	if err != nil {
		return err
	}
	if got.State != apitype.StateDone || got.JournalHead != head {
		return fmt.Errorf("attempt %s: got state %q head %s, want done %s", id, got.State, got.JournalHead, head)
	}
	return nil
}
