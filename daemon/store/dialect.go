package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// A dialect is what differs between the two databases the store runs
// on: SQLite (sqliteDialect) and PostgreSQL (postgresDialect). The
// store's queries, checks and transactions are written once, in the
// SQL both understand; a dialect only rewrites placeholders, says how a
// write transaction takes its lock, how to tell whether the schema
// exists, and which migrations make the schema. Everything a caller
// can observe (results, error classes, ordering) is decided outside it.
type dialect interface {
	// name is "sqlite" or "postgres".
	name() string
	// rebind turns the ? placeholders of query into the dialect's.
	rebind(query string) string
	// lockWrite runs first in every write transaction and serializes
	// writers (see the package doc). SQLite's writer begins IMMEDIATE
	// instead, so there it does nothing.
	lockWrite(ctx context.Context, tx *sql.Tx) error
	// hasVersionTable is a query counting the tables named
	// schema_version (0 or 1).
	hasVersionTable() string
	// migrations is the dialect's schema, step by step.
	migrations() []migration
	// readTx is the options of a read transaction that must see one
	// snapshot.
	readTx() *sql.TxOptions
	// jsonText is the SQL expression of the text at keys in the JSON
	// object in column col (NULL where there is none).
	jsonText(col string, keys ...string) string
}

type sqliteDialect struct{}

func (sqliteDialect) name() string                             { return "sqlite" }
func (sqliteDialect) rebind(q string) string                   { return q }
func (sqliteDialect) migrations() []migration                  { return migrations }
func (sqliteDialect) readTx() *sql.TxOptions                   { return &sql.TxOptions{ReadOnly: true} }
func (sqliteDialect) lockWrite(context.Context, *sql.Tx) error { return nil }
func (sqliteDialect) jsonText(col string, keys ...string) string {
	return "json_extract(" + col + ", '$." + strings.Join(keys, ".") + "')"
}
func (sqliteDialect) hasVersionTable() string {
	return `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`
}

// writeLockKey is the key of the transaction-scoped advisory lock that
// every write transaction on PostgreSQL takes ("benchd" in ASCII).
const writeLockKey = 0x62656e636864

type postgresDialect struct{}

func (postgresDialect) name() string            { return "postgres" }
func (postgresDialect) migrations() []migration { return pgMigrations }

// readTx is REPEATABLE READ on PostgreSQL: its default, READ COMMITTED,
// takes a new snapshot for every statement.
func (postgresDialect) readTx() *sql.TxOptions {
	return &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
}

func (postgresDialect) lockWrite(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(writeLockKey))
	return err
}

func (postgresDialect) jsonText(col string, keys ...string) string {
	return "(" + col + "::jsonb #>> '{" + strings.Join(keys, ",") + "}')"
}

func (postgresDialect) hasVersionTable() string {
	return `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_version'`
}

// rebind numbers the ? placeholders $1, $2, ...; a ? inside a quoted
// string or identifier is left alone.
func (postgresDialect) rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// db is a connection pool that speaks the store's SQL: each query is
// rebound to the dialect's placeholders.
type db struct {
	*sql.DB
	d dialect
}

func (db db) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return db.DB.QueryRowContext(ctx, db.d.rebind(q), args...)
}

func (db db) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return db.DB.QueryContext(ctx, db.d.rebind(q), args...)
}

func (db db) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return db.DB.ExecContext(ctx, db.d.rebind(q), args...)
}

func (db db) BeginTx(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	t, err := db.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &tx{Tx: t, d: db.d}, nil
}

// tx is a transaction that speaks the store's SQL, as db.
type tx struct {
	*sql.Tx
	d dialect
}

func (tx *tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return tx.Tx.QueryRowContext(ctx, tx.d.rebind(q), args...)
}

func (tx *tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return tx.Tx.QueryContext(ctx, tx.d.rebind(q), args...)
}

func (tx *tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return tx.Tx.ExecContext(ctx, tx.d.rebind(q), args...)
}

func (tx *tx) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return tx.Tx.PrepareContext(ctx, tx.d.rebind(q))
}
