// Package store keeps benchd's state: runs, attempts and their verdicts,
// each attempt's journal and transcript in a SQLite database
// (STATE/benchd.db), and the content blobs the journals name in a
// content-addressed directory beside it (STATE/blobs, the layout of
// fsmon/journal.Blobs). Or, for a fleet of benchd hosts, all of it in one
// PostgreSQL database (Config.Database, benchd --database URL; see
// PostgreSQL below), each host keeping STATE/blobs as its cache.
//
// Open opens (creating if needed) and migrates the database; every method
// of Store is safe for concurrent use. SQLite stays the embedded default.
//
// # Schema
//
//	schema_version(version)            one row: the last migration applied
//	runs(id, task, agent, attempts, created, tasks)
//	attempts(n, id, run, task, state, created, purpose, data, host, seen, cancel_requested)
//	journals(attempt, records, head, bytes, ingested)
//	journal_lines(k, line)             k = attempts.n << 32 | seq
//	transcripts(attempt, stdout, stderr, stdout_truncated, stderr_truncated)
//	signatures(attempt, keyid, envelope, signed)
//	retries(attempt, retry_of)         retry_of unique: retried at most once
//	requests(attempt, request)
//	reviews(attempt, outcome, why, uid, reviewed, graded)
//	journal_blobs(attempt, sha)        the blobs each journal names
//	scored(root, attempt)              one done attempt per retry chain
//
// An attempt (apitype.Attempt) is stored as columns for what queries
// select and order by (id, run, task, state, created, purpose) and one JSON column,
// data, for the rest (verdict, metrics, agent identity, changeset,
// network...). The columns are the truth: data is written with those
// fields zeroed, and reading fills them in from the columns, so the two
// can never disagree. Times are integers, nanoseconds since the Unix
// epoch in UTC. attempts.n is the row id: it breaks ties between equal
// creation times, and it is the key by which journals, journal_lines and
// transcripts refer to an attempt. attempts.run refers to runs.id
// (NULL for an attempt that belongs to no run); a run's attempts column
// is the JSON list of attempt ids given to CreateRun, in order, and its
// tasks column the JSON list of its task ids, in order ('[]' for a run
// stored before runs had several tasks: GetRun gives it [task]).
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
// (This section is SQLite's; PostgreSQL has its own below.) The
// database runs in WAL mode: readers never block the writer nor the
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
// # Purposes, filters and pruning
//
// An attempt's purpose (apitype.Purpose*: run, check, index, review) is
// a column, set when the attempt is created (empty is run) and kept by
// every update. Attempts stored before the column existed (SQLite step
// 6, PostgreSQL step 2) read as run, except those of the built-in agents
// builtin:attempt:NAME, which only tasks check submitted: the step sets
// them to check. ListAttempts' Filter is SQL where clauses on both
// backends: the columns, and for the agent's spec and model the JSON of
// data (json_extract on SQLite, #>> on PostgreSQL).
//
// Prune deletes the ended attempts before a time (of some purposes) in
// one write transaction: their journal lines and journals, transcripts,
// signatures, requests, reviews, the retry links to and from them, the
// attempts (but an attempt whose retry is kept stays: the retry's signed
// statement names it), and their runs when no attempt is left on them (a
// run that keeps some has the pruned ones taken off its list). A blob goes when no remaining
// journal names it, as journal_blobs says: on PostgreSQL its rows (and
// this host's cached copy), on SQLite its file in STATE/blobs, removed
// once the transaction is committed (a crash in between leaves files no
// journal names, never a journal naming a missing file). SQLite has
// journal_blobs since step 6; a journal ingested before has no rows
// there, and Prune lists its blobs from its records (their hashes, and
// the files of the manifests that mount and unmount records name) the
// first time it runs, inside its transaction. An ingest holds the
// store's blob lock, shared, from the moment it places its blobs until
// its journal names them, and Prune holds it exclusively, so a blob
// placed for a journal not yet committed is never taken for an unused
// one.
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
// # PostgreSQL
//
// The store is one interface with two implementations, but the
// interface is the dialect, not Store: Store and its methods (the
// queries, the checks in each transaction, the error classes, the
// ordering) are written once in the SQL both databases understand, over
// database/sql, and a dialect (dialect.go: sqliteDialect,
// postgresDialect) supplies only what differs: placeholders (? becomes
// $1, $2, ... in one place, rebind), how a write transaction takes its
// lock, how to see whether the schema exists, which migrations make the
// schema, and the options of a snapshot read. So there is one truth
// for the semantics, and the same tests (each run on both backends,
// backends in helpers_test.go) hold both to it; the daemon keeps using
// *Store whichever database is behind it.
//
// The driver is pgx (github.com/jackc/pgx/v5) through its database/sql
// adapter (pgx/v5/stdlib), not pgx's native interface: the store's code
// is database/sql for SQLite already, so both backends share every line
// that touches a row, and the transactions are *sql.Tx. A later step
// that queues jobs with River in the same transactions can use River's
// database/sql driver on the same pool (or reach the pgx connection
// under a *sql.Conn through sql.Conn.Raw and stdlib.Conn) without a
// second code path.
//
// The schema is the same tables with the same meaning, with
// PostgreSQL's types: BIGINT for the integers (nanosecond times, keys),
// BYTEA for SQLite's BLOBs, BOOLEAN for the transcripts' truncated
// flags, attempts.n an identity column instead of the rowid (so an
// insert returns it with RETURNING n, which SQLite understands too), and
// the id columns COLLATE "C", so that they sort by byte as in SQLite
// (AttemptIDs scans a prefix as a key range). Its migrations are a list
// of their own (pgMigrations): no PostgreSQL database was released
// before, so its first step is SQLite's five at once; a change from now
// on is a new step in each list. schema_version means the same and a
// newer database is refused alike (ErrSchemaTooNew).
//
// Transactions. SQLite has one writer at a time, and the store's checks
// rely on it (CreateRetry reads a run's attempts and writes them back;
// ReviewAttempt checks and then inserts). On PostgreSQL every write
// transaction (and every migration step) first takes one
// transaction-scoped advisory lock (pg_advisory_xact_lock), so writers
// of all hosts queue as SQLite's do and each statement after the lock
// sees every earlier commit (READ COMMITTED): the same semantics, with
// the constraints (unique retry_of, the primary keys) as the second
// guard they are on SQLite. Several hosts starting at once migrate once:
// the first applies each step, the others wait and find it applied.
// Reads take no lock; the one read that must see one snapshot (a
// journal's lines and their count) is a REPEATABLE READ transaction.
// The price is that writes do not run in parallel across the fleet,
// which is where SQLite is today; a narrower lock is for a later step.
// Hosts. Many benchd hosts may share one PostgreSQL database (a fleet).
// An attempt records the host that runs it (host, a column beside the
// JSON's Host and HostKeyID) and that host's last heartbeat (seen);
// StartAttempt takes a queued attempt only while it is queued, and
// UpdateRunning and Finish write a running one only while it runs on
// that host, so a host another gave the attempt up for (Rescue: its
// heartbeat stopped) records nothing of it. Finish writes the journal,
// its blobs, the attempt and what the caller adds (River's job
// completion) in one transaction. scored(root, attempt) is the rule that
// an attempt is scored at most once: its key is the first attempt of a
// retry chain, and every write that makes an attempt done inserts its
// row, so a second done attempt of the chain is refused (ErrConflict)
// by the database. Cancels asked from another host are a flag
// (cancel_requested) the running host reads at its heartbeat. The same
// columns exist on SQLite, where one host is the only one.
//
// PostgreSQL's durability is the server's (synchronous_commit, fsync):
// benchd commits as it does on SQLite and relies on the server's
// defaults, which are durable.
//
// Blobs. The hosts of a fleet share no file system, so on PostgreSQL the
// blobs are in the database: blobs(sha, size), their content in
// blob_chunks(sha, i, data) rows of 1 MiB, and journal_blobs(attempt,
// sha) the blobs of each journal (its blob directory when it was
// ingested). IngestJournal places the blobs in the local STATE/blobs as
// on SQLite and then, in the transaction that stores the lines, inserts
// each blob the database lacks (hashing it as it goes: a blob whose
// content does not match its name fails the ingest with ErrInvalid) and
// names every one in journal_blobs: a committed journal never names a
// missing blob, on any host. A blob is stored once whichever journals
// name it. STATE/blobs is each host's cache: BlobsFor(attempt) makes
// sure every blob of the attempt's journal is in it, fetching the
// missing ones from the database (journal.Blobs hashes each as it places
// it; a mismatch is journal.ErrBlobCorrupt and is not placed), and
// returns it; the daemon calls it before it reads an attempt's blobs
// (the blob endpoint, export, regrade), so journal.Replay and the rest
// read files as before. With SQLite BlobsFor returns STATE/blobs as it
// is.
//
// Not yet: attempts do not say which host runs them, so a starting
// benchd's recovery (MarkInFlightInfraError) marks every running attempt
// in the database infra_error, another host's too. Until the step that
// assigns attempts to hosts (the queue), several benchd hosts may share
// a database one after the other (a host's records, exports and regrades
// are then served by the next), not at the same time.
//
// One difference shows: PostgreSQL's TEXT holds neither a NUL byte nor
// invalid UTF-8, which SQLite stores as given. Where one reaches a text
// column (a review's why, a task name) PostgreSQL refuses the write, an
// error matching ErrInvalid; the JSON columns never hold either
// (encoding/json escapes NUL and replaces invalid UTF-8).
//
// Config.Database is trusted: it comes from benchd's command line. Its
// password, if it has one, is left out of error messages; pgx also
// reads PGPASSWORD and ~/.pgpass, which keep it off the command line.
//
// # Errors
//
// Errors wrap one of ErrNotFound, ErrConflict, ErrInvalid or
// ErrSchemaTooNew where one applies. sql.ErrNoRows becomes ErrNotFound
// in exactly one place (translate), as do SQLite's unique and primary key
// violations and PostgreSQL's unique_violation (SQLSTATE 23505)
// ErrConflict, a foreign key violation of either (23503) ErrNotFound,
// and PostgreSQL's refusal of a NUL byte or invalid UTF-8 in text
// (22021, 22P05) ErrInvalid.
package store
