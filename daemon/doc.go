// Package daemon is benchd's service: the HTTP/JSON API on a unix
// socket, the authorization of callers by their peer credentials, the
// queue of attempts, recovery at start-up and a bounded shutdown.
//
// # API
//
// The endpoints are those of client/apitype's package doc, served with Go
// 1.22 ServeMux patterns under apitype.Prefix. Request bodies are JSON,
// capped at apitype.MaxBodyBytes, with unknown fields refused; responses
// are JSON, and every error is an apitype.Error whose code matches the
// HTTP status. Errors are translated in one place (errors.go): handlers
// return errors that wrap one of a few classes (invalid, not found,
// conflict, busy, too large, forbidden) or the equivalent classes of
// daemon/store, daemon/runs and tasks, and anything else is an internal
// error. Every /v1/attempts/{id} endpoint resolves {id} first
// (resolveAttempt): the id, a unique prefix of at least 4 characters
// after "a-" (which may be left out), or latest; an ambiguous prefix is
// invalid and names the candidates, newest first.
//
// # Callers
//
// Every connection's peer credentials (SO_PEERCRED) are read when it is
// accepted. Root, and any process whose primary or supplementary groups
// (the Groups line of /proc/PID/status) hold the group Config.Group
// ("benchd"), may use every endpoint; anyone else gets 403 forbidden. The
// socket itself is mode 0660 and owned by that group when it exists, so
// the file mode and the check agree.
//
// # Queue
//
// POST /v1/runs validates the whole request before it changes anything
// (every task, agent, attempts, timeout, environment names, gateways),
// then records the run and its attempts as queued and puts them on its
// queue (attemptQueue, the one interface the rest asks): a FIFO queue
// served by Config.Concurrency workers; attempts of one run may run in
// parallel. With the store on PostgreSQL the queue is River's instead,
// shared by every benchd on the database (a fleet: see fleet.go's
// comment on type fleet for how an attempt is scored exactly once and
// what happens when a host dies). A run has one task or several (RunRequest.Tasks, a batch):
// its attempts are queued task by task, each with its task's request,
// and the unknown tasks of a request are refused together (not found),
// naming them and the known ones, with nothing queued. A request is
// bounded where it enters (invalid beyond a bound): an agent command of
// at most apitype.MaxAgentBytes, at most apitype.MaxEnvVars variables of
// apitype.MaxEnvValue bytes each, apitype.MaxRunTasks tasks, and
// apitype.MaxAttempts attempts of each (or Config.MaxQueued, when lower),
// at most Config.MaxQueued attempts in all. A run whose attempts would
// make more than Config.MaxQueued wait in the queue is refused whole as
// busy (503), with the numbers; running attempts do not count. GET
// /v1/runs/{id}/status gives each slot of a run (its first attempt, or
// that attempt's last retry) and whether all have ended; POST
// /v1/runs/{id}/cancel cancels every queued attempt of a run, then every
// running one, and waits until they have ended (batch.go). What one attempt asks (agent, timeout,
// environment, gateways, model) is checked by runs.Engine.Plan, the one
// validator, and its runs.Request is the one form kept of it: in the
// store (requests), read back to run it, requeue it after a restart or
// retry it; the values of environment variables are kept in memory
// only, never on disk.
//
// POST /v1/tasks/check submits the reference and every known attempt of
// the tasks asked for, each as a run of its own, and awaits them
// together (check.go); with ?stream=1 it streams an apitype.CheckEvent as
// it starts and as each attempt ends, the answer in the last, so that a
// check of every task (half a minute) is not silent.
//
// # Purposes and pruning
//
// A run request's Purpose (default run; tasks check submits check,
// library index index) is checked where it enters, with the rest of the
// request, and stored with each attempt; a retry keeps the purpose of
// the attempt it retries. GET /v1/attempts reads every filter of
// apitype's package doc (a bad value is invalid and named) and the store
// applies them in SQL. POST /v1/prune has the store delete the ended
// attempts it selects (store.Prune, one transaction) and then removes
// each one's work directory STATE/attempts/ID, except one with a file
// system mounted in it (a read-only mount of its disk for a diff or a
// regrade) or of an attempt still in memory, which it leaves and names.
// Any caller admitted to the socket may prune, as it may cancel; the uid
// is logged.
//
// # Retries
//
// An attempt that ends in an infra error (not a cancel, not a shutdown)
// is retried automatically up to Config.Retries times along its chain
// (benchd --retries, default 1): the retry is a new queued attempt of the
// same run, appended to the run's attempts, linked to the one it retries
// (retry_of, which its signed statement carries; retried_by on the
// other), with the same request and, since it is made while the first
// one's values are still in memory, the same environment values. POST
// /v1/runs/{id}/retry retries every infra error of a run that no attempt
// retries yet, with its stored request; one that named environment
// variables is skipped with the reason (their values are gone), and a
// run with nothing to retry is a conflict that says why. The store takes
// a retry only of an infra error of the same run, and only once
// (store.CreateRetry), so that a slot of a run has at most one verdict
// whatever callers race.
//
// # Secrets
//
// The values of a request's environment variables are the caller's
// secrets (API keys). An agent may print them, and a grader's or the
// kernel's report may carry what it printed. Where an attempt's text
// enters the store, in the worker that ends it, every exact match of a
// value of MinSecretBytes or more is replaced by "[env NAME]": in the
// capture files (rewritten in place) and so the stored transcript, the
// infra error, the reasons' messages and the DNS names of the network
// report; the signed statement and exports are made from the stored
// record. Every record benchd logs (the daemon's, the engine's, the
// store's) goes through one slog.Handler that does the same with the
// values of every attempt live at the time. Not scrubbed: the journal
// and its blobs (what the agent wrote into the workspace is the graded
// evidence, and the hash chain covers it), the agent command line (the
// caller wrote it), and the capture files of an attempt interrupted by
// a crash, whose values died with the process.
//
// # Signed attempts
//
// benchd has a host key: an Ed25519 key in STATE/hostkey.pem (PKCS #8,
// PEM), made at the first start (or by "benchd key") with mode 0600 and
// owned by root, and refused when others may read it or, under root,
// when root does not own it. GET /v1/key gives its public half.
//
// Every ending of an attempt (a verdict, an infra error, a cancel, the
// infra error recovery gives an attempt in flight at a crash) stores the
// attempt first and then signs what was stored: the apitype.Statement of
// the stored record (verdict and reasons, journal head, task bundle hash,
// agent identity, limits, timings, benchd's version, metrics, changeset,
// network) plus the edit policy of the bundle that graded it, as the
// payload of a DSSE envelope (internal/dsse) of payload type
// apitype.StatementPayloadType. The envelope is kept in the store
// (signatures) and exported as attempt.dsse.json, so that benchctl verify
// can check offline that attempt.json is what benchd recorded. The key
// is trusted as far as the host is: whoever is root there can sign
// anything with it; the signature proves which host recorded an attempt
// and that the record was not edited since, not that the host is honest.
//
// # Reviews
//
// A verdict the grader left to review (outcome review) is decided by POST
// /v1/attempts/{id}/review (benchctl review). The reviewer is the uid of
// the connection's peer credentials, read when it was accepted: the
// request body holds only the decision and why, and unknown fields are
// refused, so no caller can review in another's name. The store records
// the review and the decided verdict in one transaction (it refuses a
// second review and an attempt not in review, as conflicts); the attempt
// is then signed again, its statement of type
// apitype.StatementTypeReviewed with the review in it, keeping the edit
// policy of the statement signed at the attempt's end. The export adds
// review.json. Should the second signing fail, the review stands and the
// request fails with the reason: the stored envelope is still the
// attempt's first, which verify then finds does not match attempt.json.
//
// # Recovery and shutdown
//
// At start-up benchd first takes the state directory: an exclusive flock
// on STATE/benchd.lock, which holds the owner's pid. A second benchd on
// the same directory refuses to start, naming that pid, before it has
// cleaned, migrated or made anything there; the kernel drops the lock
// when its owner ends, however it ends. On a fleet it then claims its
// host name in the database (store.ClaimHost): a benchd under the name
// of a live host refuses to start, naming it. Then, before anything runs,
// leftovers of a crash are removed
// (runs.Cleanup: FUSE views, cgroups, network namespaces), every attempt
// that was running is marked infra_error (never an agent failure), the
// journal of every ended attempt that the store does not hold (found in
// its work directory, STATE/attempts/ID) is sealed with journal.Recover
// (cut at the last complete record, an interrupted record, the unmount
// of the tree the records account for) and stored, and the attempt gets
// its journal head, changeset, edit counts and transcript from it; then
// queued attempts are queued again. An attempt that named environment
// variables cannot go on after a restart, since their values are gone: it
// becomes infra_error too.
//
// When Run's context is canceled, intake stops (new runs get 503 busy),
// queued attempts stay queued for the next start (handed back), and
// running attempts go on for at most Config.DrainTimeout (benchd
// --drain-timeout, default 0) to end as they would have; the API stays
// up meanwhile, so callers see them end and may cancel them. An infra
// error that ends during the drain is still retried automatically: the
// retry is queued, so handed back too. Then the attempts still running
// are canceled and end as infra_error, and Run waits at most
// Config.StopTimeout for them to unwind before it closes the listeners
// and the store.
//
// # Metrics
//
// With Config.Metrics set (benchd --metrics ADDR), GET /metrics is
// served on that TCP address in the Prometheus text format, from a
// registry of benchd's own (metrics.go; docs/operations.md lists the
// series). That listener serves nothing else, and it authorizes no one:
// what it tells (counts and durations, no ids, tasks or agents) is meant
// for whoever can reach the address, which is why it is off by default
// and best bound to loopback. Every series carries the const label host
// (Config.Host, the host name), so that the series of several hosts
// stay apart in one Prometheus. The attempts by state are those of the
// store: queued and running as this process holds them (which recovery
// makes the same as the store's), ended ones counted from the store at
// start and at each ending this process records.
//
// # What each ending leaves
//
// Every attempt whose workspace view was mounted has a stored, verifying
// journal, however it ended, and benchctl log, diff, export and verify
// show it:
//
//   - done (a verdict, a timeout included): the journal sealed at
//     collect; a timed-out one has an interrupted record;
//   - canceled, or running at SIGTERM and unwound within StopTimeout:
//     the journal sealed with an interrupted record naming the cause,
//     stored as the attempt ends, with the changeset it shows (no
//     verdict);
//   - running at SIGTERM past StopTimeout, or at kill -9, a crash or a
//     power loss: infra_error, and the journal file as far as it was
//     synced (journal.SyncInterval), sealed and stored at the next
//     start.
package daemon
