package journal

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"runtime"
	"slices"
	"testing"
)

// TestBlobNamesMemory: a million distinct names, each named twice,
// gathered one record at a time, come out sorted and once each, and
// the gathering holds well under 100 MiB (a map of the hex strings
// held about 150 MiB). The figure is printed.
func TestBlobNamesMemory(t *testing.T) {
	const distinct = 1_000_000
	name := func(i int) string {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		s := sha256.Sum256(b[:])
		return hex.EncodeToString(s[:])
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var n BlobNames
	for round := range 2 {
		for i := range distinct {
			if err := n.Add(Record{Seq: uint64(round*distinct + i), Op: OpRelease, SHA256: name(i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := n.Len(); got != distinct {
		t.Fatalf("got %d names, want %d", got, distinct)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d distinct blob names held in %d MiB", distinct, held>>20)
	if held >= 100<<20 {
		t.Errorf("the names hold %d MiB, want under 100 MiB", held>>20)
	}
	var prev string
	count := 0
	n.Each(func(sha string) error {
		if sha <= prev {
			t.Fatalf("name %s after %s: want sorted, each once", sha, prev)
		}
		prev = sha
		count++
		return nil
	})
	if count != distinct {
		t.Errorf("Each gave %d names, want %d", count, distinct)
	}
	if err := n.Add(Record{Seq: 1, Op: OpRelease, SHA256: "../../etc/passwd"}, nil); !errors.Is(err, ErrBadSHA) {
		t.Errorf("a name that is no digest: got %v, want ErrBadSHA", err)
	}
	if got := n.Sorted(); len(got) != distinct || !slices.IsSorted(got) {
		t.Errorf("Sorted: got %d names, sorted %v", len(got), slices.IsSorted(got))
	}
}
