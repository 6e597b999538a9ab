package store

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"benchd.dev/fsmon/journal"

	_ "github.com/mattn/go-sqlite3" // the "sqlite3" database/sql driver
)

// DBName is the database file in the state directory.
const DBName = "benchd.db"

// BlobsName is the blob directory in the state directory.
const BlobsName = "blobs"

// Config configures Open.
type Config struct {
	// Dir is the state directory (benchd's --state). It is created if
	// missing; the database is Dir/DBName and the blobs Dir/BlobsName.
	Dir string
	// Database is where the records are: empty for SQLite in
	// Dir/DBName, or the URL of a PostgreSQL database
	// (postgres://... or postgresql://..., as pgx reads it). With
	// PostgreSQL, Dir/BlobsName is this host's cache of the blobs the
	// database holds.
	Database string
	// Logger receives migrations and recovery; nil means none.
	Logger *slog.Logger
}

// IsPostgres reports whether database (Config.Database) names a
// PostgreSQL database.
func IsPostgres(database string) bool {
	return strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://")
}

// Store is benchd's state. It is safe for concurrent use.
type Store struct {
	dir   string
	log   *slog.Logger
	d     dialect
	w     db // SQLite: one connection, every write goes through it
	r     db // SQLite: read-only connections; PostgreSQL: w's pool
	blobs *journal.Blobs

	// blobMu is held shared by an ingest from the moment it places its
	// blobs until its journal names them, and exclusively by a prune
	// while it deletes the blobs no journal names: a blob placed for a
	// journal not yet committed is never taken for an unused one.
	blobMu sync.RWMutex
}

// pragmas are set on every connection (the driver's DSN parameters).
// The writer adds _txlock=immediate (each transaction takes the write
// lock at BEGIN), the readers _query_only.
const pragmas = "_journal_mode=WAL&_synchronous=FULL&_busy_timeout=5000&_foreign_keys=on"

// dsn returns the driver's data source name for the database file path.
func dsn(path, extra string) string {
	u := url.URL{Scheme: "file", Path: path}
	return u.String() + "?" + pragmas + extra
}

// Open opens the store in cfg.Dir, creating the directory, the database
// and the blob directory if needed, and migrates the schema to the
// latest version. A database written by a newer benchd is refused with
// an error matching ErrSchemaTooNew.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("unable to open store: %w: no state directory", ErrInvalid)
	}
	if cfg.Database != "" && !IsPostgres(cfg.Database) {
		return nil, fmt.Errorf("unable to open store: %w: database %q is neither empty (SQLite) nor a postgres:// URL", ErrInvalid, redact(cfg.Database))
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("unable to open store: %w", err)
	}
	blobDir := filepath.Join(dir, BlobsName)
	if err := os.MkdirAll(blobDir, 0o755); err != nil {
		return nil, fmt.Errorf("unable to open store: %w", err)
	}
	s := &Store{
		dir:   dir,
		log:   log.With("component", "store"),
		blobs: &journal.Blobs{Dir: blobDir},
	}
	if IsPostgres(cfg.Database) {
		s.d = postgresDialect{}
		if err := s.openPostgres(ctx, cfg.Database); err != nil {
			return nil, err
		}
		return s, nil
	}
	s.d = sqliteDialect{}
	path := filepath.Join(dir, DBName)
	s.w.d, s.r.d = s.d, s.d
	if s.w.DB, err = sql.Open("sqlite3", dsn(path, "&_txlock=immediate")); err != nil {
		return nil, fmt.Errorf("unable to open store: %w", err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	// The writer creates the file and switches it to WAL before any
	// reader opens it.
	if err := s.w.PingContext(ctx); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("unable to open store %s: %w", path, err)
	}
	if err := migrate(ctx, s.d, s.w.DB, migrations, s.log); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("unable to open store %s: %w", path, err)
	}
	if s.r.DB, err = sql.Open("sqlite3", dsn(path, "&_query_only=true")); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("unable to open store: %w", err)
	}
	if err := s.r.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("unable to open store %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database. Calls after Close fail.
func (s *Store) Close() error {
	var rerr error
	if s.r.DB != nil && s.r.DB != s.w.DB {
		rerr = s.r.Close()
	}
	// Closing the last connection checkpoints the log into the database.
	werr := s.w.Close()
	if werr != nil {
		return fmt.Errorf("unable to close store: %w", werr)
	}
	if rerr != nil {
		return fmt.Errorf("unable to close store: %w", rerr)
	}
	return nil
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// Blobs returns the content-addressed blob store (STATE/blobs). With
// SQLite it holds the blobs of every ingested journal; with PostgreSQL
// it is this host's cache of the database's blobs, and BlobsFor is how
// to read an attempt's blobs.
func (s *Store) Blobs() *journal.Blobs { return s.blobs }

// querier is a db or a *tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// writeTx runs fn in a write transaction (BEGIN IMMEDIATE on SQLite,
// the writers' advisory lock on PostgreSQL) and commits it, or rolls it
// back when fn fails.
func (s *Store) writeTx(ctx context.Context, fn func(tx *tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// A panic in fn must not leave the transaction open on its pooled
	// connection (on PostgreSQL holding the writers' lock).
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()
	if err := s.d.lockWrite(ctx, tx.Tx); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	committed = true
	return tx.Commit()
}
