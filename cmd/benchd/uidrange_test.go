package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenUIDRange: --uid-range is refused when an account's uid lies
// in it, or when it is malformed; empty means no pool.
func TestOpenUIDRange(t *testing.T) {
	passwd := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(passwd, []byte("root:x:0:0::/root:/bin/sh\nsquatter:x:500010:500010::/:/bin/sh\n"), 0o644)
	tests := []struct {
		in, wantErr string
		size        int
	}{
		{"", "", 0},
		{"600000-600099", "", 100},
		{"500000-500099", "squatter:500010", 0},
		{"1000-2000", "want 65536", 0},
		{"x", "want FIRST-LAST", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := openUIDRange(tt.in, passwd)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			size := 0
			if p != nil {
				size = p.Range().Size()
			}
			if size != tt.size {
				t.Errorf("got a pool of %d uids, want %d", size, tt.size)
			}
		})
	}
}
