package store

import "testing"

func TestRebind(t *testing.T) {
	tests := []struct {
		name, query, want string
	}{
		{"none", `SELECT 1`, `SELECT 1`},
		{"in order", `SELECT a FROM t WHERE b = ? AND c IN (?, ?) LIMIT ?`, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3) LIMIT $4`},
		{"quoted string", `SELECT '?' || x FROM t WHERE y = ?`, `SELECT '?' || x FROM t WHERE y = $1`},
		{"quoted identifier", `SELECT "a?" FROM t WHERE b = ?`, `SELECT "a?" FROM t WHERE b = $1`},
		{"doubled quote", `SELECT 'it''s ?' WHERE a = ?`, `SELECT 'it''s ?' WHERE a = $1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (postgresDialect{}).rebind(tt.query); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if got := (sqliteDialect{}).rebind(tt.query); got != tt.query {
				t.Errorf("sqlite: got %q, want the query unchanged", got)
			}
		})
	}
}
