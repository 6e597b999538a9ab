package store

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// Error classes. Errors returned by Store wrap one of these where one
// applies; the daemon turns them into HTTP statuses.
var (
	// ErrNotFound: no run, attempt, journal or transcript by that id.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the row exists already (same id, journal already
	// ingested).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the argument cannot be stored (empty id, unknown state,
	// a journal that is not one).
	ErrInvalid = errors.New("invalid")
	// ErrJournal: Finish could not store the attempt's journal (the
	// error says why); nothing of the transaction was committed.
	ErrJournal = errors.New("unable to store the journal")
	// ErrSchemaTooNew: the database was written by a newer benchd.
	ErrSchemaTooNew = errors.New("database schema is newer than this benchd supports")
)

// translate turns database/sql, SQLite and PostgreSQL errors into the
// store's error classes. It is the one place where sql.ErrNoRows becomes ErrNotFound
// and a constraint violation ErrConflict or ErrNotFound.
func translate(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation, primary keys included
			return fmt.Errorf("%w: %v", ErrConflict, err)
		case "23503": // foreign_key_violation: as SQLite's below
			return fmt.Errorf("%w: %v (a row it refers to does not exist)", ErrNotFound, err)
		case "22021", "22P05": // a NUL byte or invalid UTF-8 in a TEXT column, which SQLite stores
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return err
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.ExtendedCode {
		case sqlite3.ErrConstraintPrimaryKey, sqlite3.ErrConstraintUnique:
			return fmt.Errorf("%w: %v", ErrConflict, err)
		case sqlite3.ErrConstraintForeignKey:
			// The store never deletes, so a foreign key fails only
			// when a row refers to one that does not exist.
			return fmt.Errorf("%w: %v (a row it refers to does not exist)", ErrNotFound, err)
		}
	}
	return err
}
