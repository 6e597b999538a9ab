package pgtest

import (
	"context"
	"database/sql"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := StopShared(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		code = 1
	}
	os.Exit(code)
}

// TestDatabase checks that each database is new and private to the
// cluster: a table made in one is not in the other, and the server has
// no TCP listener.
func TestDatabase(t *testing.T) {
	ctx := context.Background()
	urls := []string{Database(t), Database(t)}
	if urls[0] == urls[1] {
		t.Fatalf("got the same database twice: %s", urls[0])
	}
	dbs := make([]*sql.DB, 2)
	for i, u := range urls {
		db, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	if _, err := dbs[0].ExecContext(ctx, `CREATE TABLE t (x int)`); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		db    *sql.DB
		query string
		want  string
	}{
		{"table in the first", dbs[0], `SELECT count(*)::text FROM pg_tables WHERE tablename = 't'`, "1"},
		{"not in the second", dbs[1], `SELECT count(*)::text FROM pg_tables WHERE tablename = 't'`, "0"},
		{"no TCP listener", dbs[0], `SELECT current_setting('listen_addresses')`, ""},
		{"fsync off", dbs[0], `SELECT current_setting('fsync')`, "off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			if err := tt.db.QueryRowContext(ctx, tt.query).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
