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
//	signatures(attempt, keyid, envelope, signed)
//	retries(attempt, retry_of)         retry_of unique: retried at most once
//	requests(attempt, request)
//	reviews(attempt, outcome, why, uid, reviewed, graded)
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
// The daemon stores a journal at every ending, so that no attempt a
// dispute may be about lacks one: at the end of the attempt (done,
// canceled, out of time, stopped by a shutdown: each sealed by fsmon, the
// early ones with an interrupted record), and at the next start for an
// attempt whose benchd died (kill -9, crash, power loss) or gave up
// waiting for it at shutdown, after journal.Recover sealed what the file
// holds. Journal (ErrNotFound) is how start-up recovery finds the
// attempts whose journal is still only a file; the store needs no
// column or migration for it.
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
// # Signatures
//
// signatures holds, per ended attempt, the DSSE envelope of its signed
// statement (apitype.Statement) as benchd made it, byte for byte. The
// store does not sign or check envelopes; it keeps the latest one of an
// attempt (SaveEnvelope replaces an earlier one, as when an attempt
// abandoned at shutdown is ended again) and gives it back (Envelope).
//
// # Retries
//
// An attempt that ended in infra_error (the harness failed, so it has no
// verdict) may be retried by a new attempt of the same run: CreateRetry
// stores the new queued attempt, its row in retries, its request, and
// appends it to the run's attempts, in one transaction, and only if the
// attempt it retries is an infra error of that run that no attempt
// retries yet (retries.retry_of is unique, so two racing retries cannot
// both be stored). A run's slot is therefore a chain of attempts, each
// but the last an infra error, and at most the last has a verdict: no
// slot is scored twice. Attempts read back with RetryOf and RetriedBy
// filled in from retries (like the columns, they are never kept in
// data). requests keeps, per attempt, what it was asked to run (the
// daemon's request, without environment values), byte for byte, so that
// a retry runs the same request.
//
// # Reviews
//
// A verdict the grader left to review (outcome review: neither a pass
// nor a fail) is decided by a person once: ReviewAttempt stores the
// decision in reviews (pass or fail, why, the reviewer's uid, when, and
// the grader's verdict as it was, JSON) and replaces the attempt's
// verdict with the decided one, in one transaction. The reviews row is
// the truth for the review: an attempt's data column never holds one,
// and every read of an attempt joins its review in (Attempt.Review). An
// attempt is reviewed at most once (the table's primary key, and a
// check in the transaction that names the first review), and only when
// its outcome is review.
//
// # Errors
//
// Errors wrap one of ErrNotFound, ErrConflict, ErrInvalid or
// ErrSchemaTooNew where one applies. sql.ErrNoRows becomes ErrNotFound
// in exactly one place (translate), as do SQLite's unique and primary key
// violations ErrConflict.
package store
