// Package store keeps benchd's state: runs, attempts and their verdicts,
// each attempt's journal and transcript in a SQLite database
// (STATE/benchd.db), and the content blobs the journals name in a
// content-addressed directory beside it (STATE/blobs, the layout of
// fsmon/journal.Blobs).
//
// Open opens (creating if needed) and migrates the database; every method
// of Store is safe for concurrent use.
//
// # Schema
//
//	schema_version(version)            one row: the last migration applied
//	runs(id, task, agent, attempts, created)
//	attempts(n, id, run, task, state, created, data)
//	journals(attempt, records, head, bytes, ingested)
//	journal_lines(k, line)             k = attempts.n << 32 | seq
//	transcripts(attempt, stdout, stderr, stdout_truncated, stderr_truncated)
//
// An attempt (apitype.Attempt) is stored as columns for what queries
// select and order by (id, run, task, state, created) and one JSON column,
// data, for the rest (verdict, metrics, agent identity, changeset,
// network...). The columns are the truth: data is written with those
// fields zeroed, and reading fills them in from the columns, so the two
// can never disagree. Times are integers, nanoseconds since the Unix
// epoch in UTC. attempts.n is the row id: it breaks ties between equal
// creation times, and it is the key by which journals, journal_lines and
// transcripts refer to an attempt. attempts.run refers to runs.id
// (NULL for an attempt that belongs to no run); a run's attempts column
// is the JSON list of attempt ids given to CreateRun, in order.
//
// A journal is stored as its raw lines, one row per record, byte for byte
// as the fsmon journal wrote them (without the newline), so JournalLines
// gives back exactly the file that was ingested and its hash chain still
// checks. A line's key k packs the attempt's row number and the record's
// seq into one integer (seq < 2^32): journal_lines is a plain rowid table
// (SQLite advises against WITHOUT ROWID for rows of a few hundred bytes,
// which journal lines are), a journal is one contiguous range of keys,
// and ingestion appends in key order. journals holds the record count and
// the head hash (the last record's hash, which an export is checked
// against).
//
// # Migrations
//
// The schema is an ordered list of migration steps; schema_version holds
// the number of steps applied. Open applies the missing steps, each in
// its own transaction together with the new version number, so a crash
// mid-migration leaves the database at the previous version. A database
// whose version is newer than this program knows is refused with an error
// matching ErrSchemaTooNew and is left untouched: an older benchd must
// not write to a schema it does not understand. A step, once released,
// is never edited; a change is a new step at the end.
//
// # Durability
//
// The database runs in WAL mode: readers never block the writer nor the
// writer the readers, so listing attempts and streaming a journal go on
// while another journal is ingested, and a commit is one append to the
// log. The store keeps two connection pools: one writer connection
// (transactions begin IMMEDIATE, so writers queue in Go instead of
// failing with SQLITE_BUSY) and a pool of read-only connections.
// busy_timeout (5 s) covers another process holding the lock (benchd
// cleanup, sqlite3 by hand).
//
// synchronous is FULL: each commit fsyncs the log before it returns. With
// NORMAL a commit survives a crash of benchd (kill -9) but not a power
// loss or kernel crash, after which the last commits are silently gone.
// benchd commits a few times per attempt (queued, running, the verdict,
// the journal), and each commit is the record of a verdict that may be
// disputed later; start-up recovery trusts the database to say which
// attempts were in flight. One fsync per commit costs a few milliseconds
// against attempts that take seconds to minutes, so the store pays it.
// foreign_keys is on.
//
// # Journals and blobs
//
// IngestJournal reads a journal file with fsmon/journal's strict reader
// (each line must be the canonical encoding of its record), checks the
// chain as it goes (sequence numbers from 1, each Prev the previous Hash,
// each Hash the hash of its line), and inserts the raw lines in batches
// of 256 rows per INSERT through one prepared statement, all in one
// transaction: a journal is stored whole or not at all. Reading and
// checking run in one goroutine and inserting in another, so that
// parsing and SQLite overlap on two cores (BenchmarkIngestJournal
// measures the rate against reading alone). It does not
// require the final unmount record, so the journal of an attempt cut
// short by a crash can still be stored; journal.Verify tells it apart.
// An attempt's journal is ingested once; a second ingest is a conflict.
//
// Before the transaction begins, every blob of the journal's blob
// directory (journal.BlobsDir) is placed in STATE/blobs: hard-linked when
// both are on one file system (blobs are read-only and never rewritten,
// so sharing the inode is safe, and the blob outlives the attempt's
// directory), copied and re-hashed otherwise (a blob whose content does
// not match its name is an error). The blob file system is then synced
// once (syncfs), so that a committed journal never names a blob lost in
// a power failure.
//
// # Transcripts
//
// The agent's stdout and stderr are stored in the database (transcripts),
// not as files, so that the attempt's work directory can be removed and
// the record stays whole. SaveTranscriptFiles reads the capture files
// the sandbox wrote, each up to MaxTranscriptBytes; a stream is marked
// truncated when the sandbox says so or when the file passes that cap.
//
// # Errors
//
// Errors wrap one of ErrNotFound, ErrConflict, ErrInvalid or
// ErrSchemaTooNew where one applies. sql.ErrNoRows becomes ErrNotFound
// in exactly one place (translate), as do SQLite's unique and primary key
// violations ErrConflict.
package store
