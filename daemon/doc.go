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
// error.
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
// (task, agent, attempts, timeout, environment names, gateways), then
// records the run and its attempts as queued and puts them on a FIFO
// queue served by Config.Concurrency workers; attempts of one run may run
// in parallel. What a queued attempt needs beyond its stored record (the
// timeout, gateways) is kept in STATE/queue/ID.json until it ends; the
// values of environment variables are kept in memory only, never on disk.
//
// # Recovery and shutdown
//
// At start-up, before anything runs, leftovers of a crash are removed
// (runs.Cleanup: FUSE views, cgroups, network namespaces), every attempt
// that was running is marked infra_error (never an agent failure), and
// queued attempts are queued again. An attempt that named environment
// variables cannot go on after a restart, since their values are gone: it
// becomes infra_error too.
//
// When Run's context is canceled, intake stops (new runs get 503 busy),
// queued attempts stay queued for the next start, running attempts are
// canceled and end as infra_error, and Run waits at most
// Config.StopTimeout for them to unwind before it closes the listener and
// the store.
package daemon
