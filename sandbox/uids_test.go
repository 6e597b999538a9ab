package sandbox_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"benchd.dev/sandbox"
)

func TestParseUIDRange(t *testing.T) {
	tests := []struct {
		in   string
		want sandbox.UIDRange
		ok   bool
	}{
		{sandbox.DefaultUIDRange, sandbox.UIDRange{First: 1879048192, Last: 1879113727}, true},
		{"100000-100000", sandbox.UIDRange{First: 100000, Last: 100000}, true},
		{"65535-70000", sandbox.UIDRange{}, false}, // nobody and below
		{"1000-2000", sandbox.UIDRange{}, false},   // regular users
		{"70000-69999", sandbox.UIDRange{}, false}, // reversed
		{"70000-2147483647", sandbox.UIDRange{}, false},
		{"70000", sandbox.UIDRange{}, false},
		{"a-b", sandbox.UIDRange{}, false},
		{"-70000-80000", sandbox.UIDRange{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := sandbox.ParseUIDRange(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("got %v, %v; want %v, ok %v", got, err, tt.want, tt.ok)
			}
			if err != nil && !errors.Is(err, sandbox.ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
		})
	}
	if n := (sandbox.UIDRange{First: 1879048192, Last: 1879113727}).Size(); n != 65536 || 1879048192%65536 != 0 {
		t.Errorf("default range: %d uids; want 65536, 65536-aligned", n)
	}
}

func TestUIDRangeAccounts(t *testing.T) {
	passwd := "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/:/usr/sbin/nologin\n" +
		"odd:x:100005:100005::/:/bin/sh\n# comment\nbroken\nedge:x:100009:1::/:/bin/sh\npast:x:100010:1::/:/bin/sh\n"
	got, err := (sandbox.UIDRange{First: 100000, Last: 100009}).Accounts(strings.NewReader(passwd))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"odd:100005", "edge:100009"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestUIDPoolConcurrent: many goroutines acquiring at once never get the
// same uid; a full pool refuses with ErrNoUID; a released uid comes back
// only after every other free one.
func TestUIDPoolConcurrent(t *testing.T) {
	r := sandbox.UIDRange{First: 200000, Last: 200063}
	p := sandbox.NewUIDPool(r)
	var mu sync.Mutex
	got := map[int]int{}
	releases := make([]func(), 0, r.Size())
	var wg sync.WaitGroup
	for i := 0; i < r.Size(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uid, release, err := p.Acquire()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[uid]++
			releases = append(releases, release)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(got) != r.Size() {
		t.Fatalf("got %d distinct uids for %d acquires", len(got), r.Size())
	}
	for uid, n := range got {
		if n != 1 || uid < r.First || uid > r.Last {
			t.Errorf("uid %d handed out %d times (range %s)", uid, n, r)
		}
	}
	if _, _, err := p.Acquire(); !errors.Is(err, sandbox.ErrNoUID) {
		t.Fatalf("full pool: got %v, want ErrNoUID", err)
	}
	for _, rel := range releases {
		rel()
		rel() // a second release must not free a uid someone else holds
	}
	if n := p.InUse(); n != 0 {
		t.Fatalf("after release: %d in use, want 0", n)
	}
}

func TestUIDPoolReuseOrder(t *testing.T) {
	p := sandbox.NewUIDPool(sandbox.UIDRange{First: 300000, Last: 300003})
	a, relA, _ := p.Acquire()
	b, relB, _ := p.Acquire()
	if a == b {
		t.Fatalf("two live holders share uid %d", a)
	}
	relA()
	// a is free again, but the two never used come first.
	var seq []int
	for i := 0; i < 3; i++ {
		u, _, err := p.Acquire()
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, u)
	}
	if want := []int{300002, 300003, 300000}; !slices.Equal(seq, want) {
		t.Errorf("got %v, want %v (a=%d b=%d)", seq, want, a, b)
	}
	if _, _, err := p.Acquire(); !errors.Is(err, sandbox.ErrNoUID) {
		t.Errorf("got %v, want ErrNoUID", err)
	}
	relB()
	if u, _, err := p.Acquire(); err != nil || u != b {
		t.Errorf("got %d, %v; want %d, the only free uid", u, err, b)
	}
}
