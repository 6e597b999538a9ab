// Package apitype holds the wire types of benchd's HTTP/JSON API: the
// requests, the resources, the event stream, the error codes, the socket
// path and the API prefix. It imports nothing but the standard library,
// so that any client can use it.
//
// Endpoints (all under Prefix, JSON bodies, errors as Error with a 4xx or
// 5xx status):
//
//	POST /v1/runs                        RunRequest -> Run (201)
//	GET  /v1/runs/{id}                   -> Run
//	GET  /v1/attempts[?run=ID&task=ID&limit=N] -> AttemptList (newest first)
//	GET  /v1/attempts/{id}               -> Attempt
//	GET  /v1/attempts/{id}/events        -> newline-delimited Event until the attempt ends
//	POST /v1/attempts/{id}/cancel        -> Attempt
//	POST /v1/attempts/{id}/regrade       -> Regrade
//	GET  /v1/attempts/{id}/journal       -> the journal, JSON lines (fsmon/journal format)
//	GET  /v1/attempts/{id}/blobs/{sha}   -> one content blob (application/octet-stream)
//	GET  /v1/attempts/{id}/transcript    -> Transcript
//	GET  /v1/attempts/{id}/export        -> the archive (application/x-tar, see ExportLayout)
//	GET  /v1/tasks                       -> TaskList
//	POST /v1/tasks/check[?task=ID]       -> TaskCheck (runs the reference and known attempts)
//	GET  /v1/status                      -> Status
package apitype

import "time"

// DefaultSocket is where benchd listens unless told otherwise.
const DefaultSocket = "/run/benchd/benchd.sock"

// SocketEnv names the environment variable that overrides DefaultSocket
// for clients.
const SocketEnv = "BENCHD_SOCKET"

// Prefix is the path prefix of every endpoint.
const Prefix = "/v1/"

// Error codes carried by Error. Each maps to one HTTP status.
const (
	CodeInvalid   = "invalid"   // 400: bad input; nothing changed
	CodeForbidden = "forbidden" // 403: caller not root and not in group benchd
	CodeNotFound  = "not_found" // 404
	CodeConflict  = "conflict"  // 409: e.g. cancel of a finished attempt
	CodeTooLarge  = "too_large" // 413: body over MaxBodyBytes
	CodeBusy      = "busy"      // 503: shutting down
	CodeInternal  = "internal"  // 500
)

// MaxBodyBytes caps a request body.
const MaxBodyBytes = 1 << 20

// Error is the body of every error response.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Limits on a RunRequest.
const (
	MaxAttempts    = 100
	MinTimeout     = time.Second
	MaxTimeout     = 6 * time.Hour
	DefaultTimeout = 600 * time.Second
)

// Built-in agents. Any other agent is a command line.
const (
	AgentReference     = "builtin:reference" // applies the task's solution
	AgentNull          = "builtin:null"      // does nothing
	AgentAttemptPrefix = "builtin:attempt:"  // applies attempts/NAME
)

// EnvVar passes one environment variable to the agent. Its value is used
// for the run only: never stored, never logged, never returned.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// RunRequest asks for Attempts attempts of one task by one agent.
type RunRequest struct {
	Task     string   `json:"task"`               // e.g. "rt-01"
	Agent    string   `json:"agent"`              // a built-in or a command line (split like a shell, no expansion)
	Attempts int      `json:"attempts,omitempty"` // default 1, at most MaxAttempts
	Timeout  string   `json:"timeout,omitempty"`  // Go duration; default the task's, within [MinTimeout, MaxTimeout]
	Env      []EnvVar `json:"env,omitempty"`
	Gateways []string `json:"gateways,omitempty"` // NAME=HOST:PORT
	Model    string   `json:"model,omitempty"`    // recorded in the agent's identity
}

// Run is a group of attempts made by one request.
type Run struct {
	ID       string    `json:"id"`
	Task     string    `json:"task"`
	Agent    string    `json:"agent"`
	Attempts []string  `json:"attempts"` // attempt ids, in order
	Created  time.Time `json:"created"`
}

// Attempt states.
const (
	StateQueued     = "queued"
	StateRunning    = "running"
	StateDone       = "done"        // graded; see Pass
	StateInfraError = "infra_error" // the harness failed; never scored as the agent's failure
	StateCanceled   = "canceled"
)

// Attempt phases, in order, while StateRunning.
const (
	PhasePrepare = "prepare"
	PhaseMount   = "mount"
	PhaseConfine = "confine"
	PhaseRun     = "run"
	PhaseCollect = "collect"
	PhaseGrade   = "grade"
	PhaseStore   = "store"
)

// Reason is one reason of a verdict: a stable code and a sentence.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// AgentIdentity is what ran: the executable's hash and arguments, and a
// version and model where known. Two attempts with equal identities ran
// the same frozen agent.
type AgentIdentity struct {
	Spec    string   `json:"spec"`              // the --agent given
	Exe     string   `json:"exe,omitempty"`     // resolved executable path
	SHA256  string   `json:"sha256,omitempty"`  // of the executable (built-ins: of the applied overlay)
	Args    []string `json:"args,omitempty"`    // arguments after the executable
	Version string   `json:"version,omitempty"` // what the agent reports, if it does
	Model   string   `json:"model,omitempty"`
	Env     []string `json:"env,omitempty"` // names of the variables passed (never values)
}

// NetAttempt is one outbound connection attempt or datagram.
type NetAttempt struct {
	Time  time.Time `json:"time"`
	Proto string    `json:"proto"` // tcp, udp
	Dst   string    `json:"dst"`   // ip:port
}

// DNSQuery is one name looked up.
type DNSQuery struct {
	Time time.Time `json:"time"`
	Name string    `json:"name"`
	Type string    `json:"type"`
}

// GatewayUse counts the traffic through one gateway.
type GatewayUse struct {
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"` // host:port
	Conns    int64  `json:"conns"`
	BytesIn  int64  `json:"bytes_in"`
	BytesOut int64  `json:"bytes_out"`
}

// Network is what the agent did on the network.
type Network struct {
	Mode     string       `json:"mode"` // closed or open
	Attempts []NetAttempt `json:"attempts"`
	DNS      []DNSQuery   `json:"dns"`
	Gateways []GatewayUse `json:"gateways"`
	BytesIn  int64        `json:"bytes_in"`
	BytesOut int64        `json:"bytes_out"`
}

// Change is one entry of a changeset (fsmon/journal.Change on the wire).
type Change struct {
	Kind   string `json:"kind"` // added, modified, deleted, renamed
	Path   string `json:"path"`
	From   string `json:"from,omitempty"`
	Type   string `json:"type"`
	SHA256 string `json:"sha256,omitempty"`
}

// Attempt is one agent run on one task, and its verdict.
type Attempt struct {
	ID    string        `json:"id"`
	Run   string        `json:"run"`
	Task  string        `json:"task"`
	Agent AgentIdentity `json:"agent"`
	State string        `json:"state"`
	Phase string        `json:"phase,omitempty"`

	// The verdict (State done). Pass is false until then.
	Pass    bool     `json:"pass"`
	Reward  int      `json:"reward"`
	Reasons []Reason `json:"reasons"`

	ExitCode        int   `json:"exit_code"` // -1 when a signal ended the agent
	Signal          int   `json:"signal,omitempty"`
	TimedOut        bool  `json:"timed_out"`
	OOM             bool  `json:"oom"`
	WallMS          int64 `json:"wall_ms"`
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	MaxRSSBytes     int64 `json:"max_rss_bytes"`

	Edits     int64    `json:"edits"`  // journal records that changed the workspace
	Denied    int64    `json:"denied"` // operations the policy refused
	Changeset []Change `json:"changeset"`
	Network   Network  `json:"network"`

	// JournalHead is the hash of the journal's last record: the value an
	// exported archive is checked against.
	JournalHead string `json:"journal_head,omitempty"`
	// InfraError says what failed when State is infra_error.
	InfraError string `json:"infra_error,omitempty"`
	// TaskSHA256 identifies the task bundle that graded this attempt.
	TaskSHA256 string `json:"task_sha256,omitempty"`

	Created  time.Time  `json:"created"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
}

// AttemptList is a page of attempts.
type AttemptList struct {
	Attempts []Attempt `json:"attempts"`
}

// Event is one line of an attempt's event stream: progress while it runs,
// and a last event with Done set and the final Attempt.
type Event struct {
	Attempt     string   `json:"attempt"`
	State       string   `json:"state"`
	Phase       string   `json:"phase,omitempty"`
	ElapsedMS   int64    `json:"elapsed_ms"`
	MemoryBytes int64    `json:"memory_bytes"`
	Edits       int64    `json:"edits"`
	Denied      int64    `json:"denied"`
	Done        bool     `json:"done,omitempty"`
	Final       *Attempt `json:"final,omitempty"`
}

// Regrade is the result of grading an attempt's stored final tree again.
type Regrade struct {
	Attempt string  `json:"attempt"`
	Same    bool    `json:"same"`
	Before  Verdict `json:"before"`
	After   Verdict `json:"after"`
}

// Verdict is pass, reward and reasons.
type Verdict struct {
	Pass    bool     `json:"pass"`
	Reward  int      `json:"reward"`
	Reasons []Reason `json:"reasons"`
}

// Transcript is the agent's captured output.
type Transcript struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
}

// TaskInfo describes one task of the store.
type TaskInfo struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	Grader        string   `json:"grader"`
	AllowInternet bool     `json:"allow_internet"`
	TimeoutSec    int      `json:"timeout_sec"`
	KnownAttempts []string `json:"known_attempts"`
	SHA256        string   `json:"sha256"` // of the bundle
	// Allow and Ignore are the globs of the task's edit policy
	// (fsmon/journal.Policy): with Ignore, a verifier recomputes an
	// attempt's changeset from its journal alone.
	Allow  []string `json:"allow,omitempty"`
	Ignore []string `json:"ignore,omitempty"`
}

// TaskList lists the task store.
type TaskList struct {
	Tasks []TaskInfo `json:"tasks"`
}

// CheckResult is one known attempt (or the reference) run through the
// whole pipeline.
type CheckResult struct {
	Task     string   `json:"task"`
	Agent    string   `json:"agent"` // builtin:reference or builtin:attempt:NAME
	Attempt  string   `json:"attempt"`
	WantPass bool     `json:"want_pass"`
	WantCode string   `json:"want_code,omitempty"`
	GotPass  bool     `json:"got_pass"`
	GotCodes []string `json:"got_codes"`
	OK       bool     `json:"ok"` // the verdict is the expected one
}

// TaskCheck is the result of POST /v1/tasks/check.
type TaskCheck struct {
	Results []CheckResult `json:"results"`
	OK      bool          `json:"ok"`
}

// Status describes the daemon.
type Status struct {
	Version     string `json:"version"`
	Queued      int    `json:"queued"`
	Running     int    `json:"running"`
	Concurrency int    `json:"concurrency"`
	StateDir    string `json:"state_dir"`
	Tasks       string `json:"tasks"`
}

// ExportLayout describes the export archive (a tar): journal.jsonl,
// blobs/<sha[:2]>/<sha>, transcript/stdout and transcript/stderr,
// attempt.json (the Attempt, verdict included), task.json (the TaskInfo
// with the bundle hash). benchctl verify checks it offline.
const ExportLayout = "journal.jsonl, journal.jsonl.blobs/, transcript/stdout, transcript/stderr, attempt.json, task.json"
