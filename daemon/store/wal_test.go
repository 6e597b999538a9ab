package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"benchd.dev/client/apitype"
)

// TestFinishShrinksWAL: on SQLite, a journal's lines recorded at an
// attempt's end are kept once, in the database, not a second time in
// the write-ahead log they went through.
func TestFinishShrinksWAL(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	must(t, s.CreateRun(ctx, apitype.Run{ID: "r1", Task: "rt-01", Created: base}))
	a := running(t, s, "a1", "h1")
	jpath, _ := testJournal(t, t.TempDir(), 3000)
	jsize := fileSize(t, jpath)
	done := a
	done.State = apitype.StateDone
	must(t, s.Finish(ctx, Finish{Attempt: done, JournalPath: jpath}))
	ji, err := s.Journal(ctx, "a1")
	must(t, err)
	if ji.Bytes < jsize/2 {
		t.Fatalf("the store holds %d bytes of a %d-byte journal", ji.Bytes, jsize)
	}
	wal := fileSize(t, filepath.Join(s.dir, DBName+"-wal"))
	if wal > jsize/4 {
		t.Errorf("the write-ahead log holds %d bytes after the end, for a journal of %d: want it truncated", wal, jsize)
	}
	t.Logf("journal %d bytes, write-ahead log after the end %d bytes", jsize, wal)
}

// fileSize is the size of the file at p, 0 when there is none.
func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if os.IsNotExist(err) {
		return 0
	}
	must(t, err)
	return fi.Size()
}
