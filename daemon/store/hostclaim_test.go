package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"benchd.dev/internal/pgtest"
)

// Two benchd on one database may not run under one host name: the
// second claim is a conflict naming the holder, another name is free,
// and a name given up (or whose holder's session ended) is free again.
func TestClaimHost(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	open := func() *Store {
		s, err := Open(ctx, Config{Dir: t.TempDir(), Database: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	first, err := a.ClaimHost(ctx, "h1")
	if err != nil || first == nil {
		t.Fatalf("first claim of h1: got %v, %v, want a claim", first, err)
	}
	_, err = b.ClaimHost(ctx, "h1")
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("second claim of h1: got %v, want ErrConflict", err)
	}
	want := fmt.Sprintf("host name h1 is live: benchd host h1 (pid %d on ", os.Getpid())
	if !strings.Contains(err.Error(), want) {
		t.Errorf("second claim of h1: got %q, want it to contain %q", err, want)
	}
	other, err := b.ClaimHost(ctx, "h2")
	if err != nil {
		t.Fatalf("claim of h2: %v", err)
	}
	other.Close()
	first.Close()
	again, err := b.ClaimHost(ctx, "h1")
	if err != nil {
		t.Fatalf("claim of h1 once given up: %v", err)
	}
	// A holder whose session the server ended (its benchd killed, its
	// machine gone) holds nothing.
	if _, err := a.DB().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'benchd host h1 %'`); err != nil {
		t.Fatal(err)
	}
	last, err := open().ClaimHost(ctx, "h1")
	if err != nil {
		t.Fatalf("claim of h1 after its holder's session ended: %v", err)
	}
	last.Close()
	again.Close()

	// SQLite has one benchd: nothing to claim.
	s := openTest(t)
	if cl, err := s.ClaimHost(ctx, "h1"); cl != nil || err != nil {
		t.Errorf("claim on SQLite: got %v, %v, want nil, nil", cl, err)
	}
}
