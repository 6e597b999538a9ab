package journal

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCapRecords: a cap record verifies when it
// names its cap and errno, and is refused by Verify otherwise; CapsOf
// lists the caps in order.
func TestCapRecords(t *testing.T) {
	wall := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		caps   []Record
		reason string // "" for a journal that verifies
	}{
		{"files then records", []Record{{Op: OpCap, Path: "new/f", Name: CapFiles, Result: "EDQUOT"}, {Op: OpCap, Name: CapRecords, Result: "ENOSPC"}}, ""},
		{"recorded as ok", []Record{{Op: OpCap, Name: CapBlobBytes, Result: "ok"}}, "cap record without the cap or its errno"},
		{"no cap named", []Record{{Op: OpCap, Result: "ENOSPC"}}, "cap record without the cap or its errno"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			w, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			recs := append([]Record{{Op: OpMount, Result: "ok", SHA256: EmptySHA256}}, tc.caps...)
			recs = append(recs, Record{Op: OpUnmount, Result: "ok", SHA256: EmptySHA256})
			for _, r := range recs {
				r.Wall = wall
				if _, err := w.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			err = Verify(got, nil)
			switch {
			case tc.reason == "" && err != nil:
				t.Fatalf("verify: %v", err)
			case tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)):
				t.Fatalf("verify: got %v, want an error saying %q", err, tc.reason)
			}
			var want []string
			for _, r := range tc.caps {
				want = append(want, r.Name)
			}
			if caps := CapsOf(got); !slices.Equal(caps, want) {
				t.Errorf("CapsOf: got %v, want %v", caps, want)
			}
		})
	}
}
