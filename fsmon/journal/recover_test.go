package journal

import (
	"os"
	"strings"
	"testing"
	"time"
)

// crashed makes a journal as a writer that died would leave it: a mount,
// an edit of a.txt, a new file b.txt, flushed but never closed (no
// unmount record). It returns the workspace, whose journal file holds
// the records, and the release record of b.txt.
func crashed(t *testing.T) (*workspace, Record) {
	t.Helper()
	ws := newWorkspace(t, map[string]string{"a.txt": "one\n"})
	ws.write("a.txt", "two\n")
	ws.create("b.txt", 0o644)
	ws.write("b.txt", "three\n")
	rel := ws.recs[len(ws.recs)-1]
	if err := ws.w.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.w.Close() }) // after Recover: nothing is left to write
	return ws, rel
}

// recovered runs Recover (with backing, "" for none) and checks that
// the result verifies and replays.
func recovered(t *testing.T, ws *workspace, backing ...string) (Recovered, []Record) {
	t.Helper()
	res, err := Recover(ws.path, strings.Join(backing, ""), "benchd restarted after a crash", time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	recs, err := Read(ws.path)
	if err != nil {
		t.Fatalf("reading the recovered journal: %v", err)
	}
	if err := VerifyFile(ws.path); err != nil {
		t.Errorf("the recovered journal does not verify: %v", err)
	}
	if err := VerifyReplay(recs, ws.w.Blobs()); err != nil {
		t.Errorf("the recovered journal does not replay: %v", err)
	}
	if res.Records != len(recs) || res.Head != recs[len(recs)-1].Hash {
		t.Errorf("Recovered: got %d records, head %s; the file has %d, head %s", res.Records, res.Head, len(recs), recs[len(recs)-1].Hash)
	}
	return res, recs
}

func TestRecover(t *testing.T) {
	t.Run("whole records", func(t *testing.T) {
		ws, _ := crashed(t)
		res, recs := recovered(t, ws)
		if res.Kept != len(ws.recs) || res.Cut != 0 || res.Why != "" || res.Sealed {
			t.Errorf("got %+v, want all %d records kept, nothing cut", res, len(ws.recs))
		}
		n := len(recs)
		if recs[n-2].Op != OpInterrupted || recs[n-2].Name != "benchd restarted after a crash" || recs[n-1].Op != OpUnmount {
			t.Errorf("last records: got %s %q, %s; want interrupted with the cause, unmount", recs[n-2].Op, recs[n-2].Name, recs[n-1].Op)
		}
		final, err := ReplayTree(recs, ws.w.Blobs(), recs[n-1].Seq)
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]string{"a.txt": "two\n", "b.txt": "three\n"} {
			if got := final[p].SHA256; got != HashBytes([]byte(want)) {
				t.Errorf("final tree: %s has content %s, want the hash of %q", p, got, want)
			}
		}
	})
	t.Run("content only the backing directory has", func(t *testing.T) {
		ws, _ := crashed(t)
		// Written through passthrough to a file still open at the
		// crash: no record says so.
		if err := os.WriteFile(ws.fp("a.txt"), []byte("four\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, recs := recovered(t, ws, ws.dir)
		n := len(recs)
		if res.Observed != 1 || recs[n-3].Op != OpInterrupted || recs[n-2].Op != OpRelease || recs[n-2].Path != "a.txt" ||
			recs[n-2].Flags != ReleaseAtRecovery || recs[n-2].SHA256 != HashBytes([]byte("four\n")) {
			t.Fatalf("got %+v and last records %+v, want interrupted, a release of a.txt at recovery with its content, unmount", res, recs[n-3:])
		}
		final, err := ReplayTree(recs, ws.w.Blobs(), recs[n-1].Seq)
		if err != nil {
			t.Fatal(err)
		}
		if got := final["a.txt"].SHA256; got != HashBytes([]byte("four\n")) {
			t.Errorf("final tree: a.txt has content %s, want the backing directory's", got)
		}
	})
	t.Run("torn tail record", func(t *testing.T) {
		ws, rel := crashed(t)
		// Half of the last line reached the disk.
		line := append(rel.appendCanonical(nil), '\n')
		f, err := os.OpenFile(ws.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		next := Record{Seq: rel.Seq + 1, Prev: rel.Hash, Op: OpUnlink, Path: "a.txt", Result: "ok", Wall: rel.Wall}
		torn := next.appendCanonical(nil)[:40]
		if _, err := f.Write(torn); err != nil {
			t.Fatal(err)
		}
		f.Close()
		res, recs := recovered(t, ws)
		if res.Kept != len(ws.recs) || res.Cut != int64(len(torn)) || !strings.Contains(res.Why, "torn") {
			t.Errorf("got %+v, want %d records kept and the %d torn bytes cut", res, len(ws.recs), len(torn))
		}
		if got := recs[res.Kept-1].Hash; got != rel.Hash {
			t.Errorf("last kept record: got hash %s, want the release's %s (line %q)", got, rel.Hash, line)
		}
	})
	t.Run("garbage tail line", func(t *testing.T) {
		ws, _ := crashed(t)
		f, err := os.OpenFile(ws.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("\x00\x00\x00\x00\n"))
		f.Close()
		res, _ := recovered(t, ws)
		if res.Kept != len(ws.recs) || res.Cut != 5 || !strings.Contains(res.Why, "does not parse") {
			t.Errorf("got %+v, want %d records kept and the bad line cut", res, len(ws.recs))
		}
	})
	t.Run("missing blob", func(t *testing.T) {
		ws, rel := crashed(t)
		p, _ := ws.w.Blobs().Path(rel.SHA256)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		res, recs := recovered(t, ws)
		if res.Kept != len(ws.recs)-1 || !strings.Contains(res.Why, "missing") {
			t.Errorf("got %+v, want the release naming the lost blob cut (%d records kept)", res, len(ws.recs)-1)
		}
		final, err := ReplayTree(recs, ws.w.Blobs(), recs[len(recs)-1].Seq)
		if err != nil {
			t.Fatal(err)
		}
		if got := final["b.txt"].SHA256; got != EmptySHA256 {
			t.Errorf("b.txt without its release: got content %s, want empty (as created)", got)
		}
	})
	t.Run("torn blob", func(t *testing.T) {
		ws, rel := crashed(t)
		p, _ := ws.w.Blobs().Path(rel.SHA256)
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, []byte("thr"), 0o444); err != nil {
			t.Fatal(err)
		}
		res, _ := recovered(t, ws)
		if res.Kept != len(ws.recs)-1 || !strings.Contains(res.Why, "does not match") {
			t.Errorf("got %+v, want the release naming the damaged blob cut", res)
		}
	})
	t.Run("sealed already", func(t *testing.T) {
		ws, _ := crashed(t)
		ws.unmount()
		before, err := os.ReadFile(ws.path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Recover(ws.path, "", "crash", time.Now())
		if err != nil || !res.Sealed || res.Cut != 0 {
			t.Fatalf("Recover of a sealed journal: got %+v, %v; want sealed, nothing cut", res, err)
		}
		after, _ := os.ReadFile(ws.path)
		if string(after) != string(before) {
			t.Errorf("Recover changed a sealed journal")
		}
	})
	t.Run("no mount record", func(t *testing.T) {
		ws, _ := crashed(t)
		if err := os.WriteFile(ws.path, []byte(`{"seq":1,"t_ns":0,"wa`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Recover(ws.path, "", "crash", time.Now()); err == nil || !strings.Contains(err.Error(), "no complete mount record") {
			t.Errorf("Recover of a journal without a mount: got %v, want an error saying so", err)
		}
	})
}

func TestVerifyInterrupted(t *testing.T) {
	ws := newWorkspace(t, map[string]string{"a.txt": "one\n"})
	ws.append(Record{Op: OpInterrupted, Name: "canceled"})
	ws.append(Record{Op: OpCreate, Path: "late.txt", Mode: 0o644})
	if err := ws.w.Flush(); err != nil {
		t.Fatal(err)
	}
	tree, err := ScanTree(ws.dir)
	if err != nil {
		t.Fatal(err)
	}
	manifest, _ := ws.w.Blobs().PutBytes(tree.Manifest())
	ws.append(Record{Op: OpUnmount, SHA256: manifest})
	err = Verify(ws.recs, ws.w.Blobs())
	if err == nil || !strings.Contains(err.Error(), "after the interrupted record") {
		t.Errorf("a create after the interrupted record: got %v, want an error naming it", err)
	}
}
