// Package apitype holds the wire types of benchd's HTTP/JSON API: the
// requests, the resources, the event stream, the error codes, the socket
// path and the API prefix. It imports the standard library and
// fsmon/journal only (pure Go, no cgo: the journal owns the change
// type), so that any client can use it.
//
// Endpoints (all under Prefix, JSON bodies, errors as Error with a 4xx or
// 5xx status):
//
//	POST /v1/runs                        RunRequest -> Run (201)
//	GET  /v1/runs/{id}                   -> Run
//	GET  /v1/runs/{id}/status            -> RunStatus (where each of the run's attempts is)
//	POST /v1/runs/{id}/cancel            -> RunCancel (cancels every queued and running attempt of the run)
//	POST /v1/runs/{id}/retry             -> Retry (each infra error of the run not yet retried, retried once)
//	GET  /v1/attempts[?FILTER&limit=N]   -> AttemptList (newest first; FILTER below)
//	GET  /v1/attempts/{id}               -> Attempt
//	GET  /v1/attempts/{id}/events        -> newline-delimited Event until the attempt ends
//	POST /v1/attempts/{id}/cancel        -> Attempt
//	POST /v1/attempts/{id}/regrade       -> Regrade
//	POST /v1/attempts/{id}/review        ReviewRequest -> Attempt (decides a verdict left to review)
//	GET  /v1/attempts/{id}/journal       -> the journal, JSON lines (fsmon/journal format)
//	GET  /v1/attempts/{id}/blobs/{sha}   -> one content blob (application/octet-stream)
//	GET  /v1/attempts/{id}/transcript    -> Transcript
//	GET  /v1/attempts/{id}/model         -> ModelLog (the model calls through HTTP gateways)
//	GET  /v1/attempts/{id}/model/{seq}/request   -> the call's request as stored (text/plain: HTTP/1.1 message, secrets redacted)
//	GET  /v1/attempts/{id}/model/{seq}/response  -> the call's response as stored (the same form)
//	GET  /v1/attempts/{id}/export        -> the archive (application/x-tar, see ExportLayout)
//	GET  /v1/tasks                       -> TaskList
//	POST /v1/tasks/check[?task=ID]       -> TaskCheck (runs the reference and known attempts)
//	POST /v1/tasks/check?stream=1[&...]  -> newline-delimited CheckEvent, the TaskCheck in the last
//	GET  /v1/status                      -> Status
//	GET  /v1/key                         -> HostKey (the public half of benchd's signing key)
//	POST /v1/prune                       PruneRequest -> Prune (deletes ended attempts)
//
// The attempts' FILTER is any of run=ID, task=ID (repeatable: one of
// them), agent=SPEC, model=M, state=S and purpose=P (repeatable: one of
// them), since=T and until=T (RFC 3339; created at or after since,
// before until); parameters of different names all apply.
//
// An attempt's {id} is its id, a unique prefix of it (the "a-" optional,
// at least 4 characters after it) or "latest", the newest attempt; a
// prefix of several attempts is CodeInvalid, naming some of them.
package apitype

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"benchd.dev/fsmon/journal"
)

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
	CodeBusy      = "busy"      // 503: shutting down, or the queue is full
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
	MaxAgentBytes  = 4 << 10  // the agent's command line (or built-in, or preset name)
	MaxEnvVars     = 64       // variables in Env
	MaxEnvValue    = 64 << 10 // bytes of one variable's value
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
// for the run only: never stored, never logged, never returned; what the
// agent prints of it is stored as "[env NAME]".
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MaxRunTasks caps the tasks of one RunRequest (the queue limit,
// benchd --max-queued, caps the attempts).
const MaxRunTasks = 1000

// RunRequest asks for Attempts attempts of each of its tasks by one
// agent, as one run. The tasks are Tasks when it is not empty, and then
// Task is ignored; else the one task Task (what a client that knows
// nothing of Tasks sends). Every task is checked before anything is
// queued: a request naming an unknown task queues nothing. The attempts
// are queued task by task, in the order of the tasks.
type RunRequest struct {
	Task     string   `json:"task"`               // e.g. "rt-01"
	Tasks    []string `json:"tasks,omitempty"`    // several tasks, at most MaxRunTasks, each once; wins over Task
	Agent    string   `json:"agent"`              // a built-in or a command line (split like a shell, no expansion)
	Attempts int      `json:"attempts,omitempty"` // default 1, at most MaxAttempts
	Timeout  string   `json:"timeout,omitempty"`  // Go duration; default the task's, within [MinTimeout, MaxTimeout]
	Env      []EnvVar `json:"env,omitempty"`
	// Gateways are NAME=HOST:PORT (raw TCP, bytes counted) or
	// NAME=http://HOST[:PORT][/PATH] or NAME=https://HOST[:PORT][/PATH]
	// (an HTTP model gateway: ModelCall, ModelUsage).
	Gateways []string `json:"gateways,omitempty"`
	Model    string   `json:"model,omitempty"`   // recorded in the agent's identity
	Purpose  string   `json:"purpose,omitempty"` // the attempts' Purpose; default PurposeRun
}

// Run is a group of attempts made by one request.
type Run struct {
	ID string `json:"id"`
	// Task is the task of a run of one task, as before runs had several;
	// "" for a run of several tasks.
	Task string `json:"task"`
	// Tasks are the run's tasks, in order: one for a run of one task.
	Tasks    []string  `json:"tasks"`
	Agent    string    `json:"agent"`
	Attempts []string  `json:"attempts"` // attempt ids, in order: task by task, each task's attempts together
	Created  time.Time `json:"created"`
}

// RunStatus is where each attempt of a run is: GET /v1/runs/{id}/status.
type RunStatus struct {
	Run Run `json:"run"`
	// Attempts has one attempt per first attempt of the run (Run.Attempts
	// lists retries too, after the attempts of the request), in that
	// order: that attempt, or the last of its retries when it was an
	// infra error benchd retried (the attempt whose verdict counts). An
	// attempt benchd is still ending (its retry may be on its way) is
	// running, in phase store.
	Attempts []Attempt `json:"attempts"`
	// Ended says whether every one of Attempts has ended (done, infra
	// error or canceled).
	Ended bool `json:"ended"`
	// Concurrency is how many attempts benchd runs at once (of every run).
	Concurrency int `json:"concurrency"`
}

// RunCancel is what POST /v1/runs/{id}/cancel did: the attempts it
// canceled, each as it ended. A run with nothing queued or running is an
// error (conflict), never an empty RunCancel.
type RunCancel struct {
	Run      string    `json:"run"`
	Canceled []Attempt `json:"canceled"`
}

// Retry is what POST /v1/runs/{id}/retry did: the retries it queued,
// and the infra errors it could not retry, with why. A run with nothing
// to retry is an error (conflict), never an empty Retry.
type Retry struct {
	Run     string         `json:"run"`
	Retried []RetriedPair  `json:"retried"`
	Skipped []SkippedRetry `json:"skipped,omitempty"`
}

// RetriedPair is one retry: Attempt retries Of.
type RetriedPair struct {
	Of      string `json:"of"`
	Attempt string `json:"attempt"`
}

// SkippedRetry is an infra error that could not be retried.
type SkippedRetry struct {
	Attempt string `json:"attempt"`
	Why     string `json:"why"`
}

// Attempt states.
const (
	StateQueued     = "queued"
	StateRunning    = "running"
	StateDone       = "done"        // graded; see Pass
	StateInfraError = "infra_error" // the harness failed; never scored as the agent's failure
	StateCanceled   = "canceled"
)

// States are the attempt states, in the order above.
var States = []string{StateQueued, StateRunning, StateDone, StateInfraError, StateCanceled}

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
	// Refused: open mode rejected it, the destination being in the
	// host's neighbourhood (private, CGNAT, link-local, multicast, the
	// host's own subnets) or the host itself.
	Refused bool `json:"refused,omitempty"`
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
	// Kind is GatewayTCP (bytes copied untouched) or GatewayHTTP (a
	// model gateway: each request proxied and recorded); URL is an HTTP
	// gateway's upstream base URL.
	Kind  string `json:"kind,omitempty"`
	URL   string `json:"url,omitempty"`
	Conns int64  `json:"conns"`
	// Refused counts connections the gateway closed at once because too
	// many were open (the agent's doing).
	Refused int64 `json:"refused,omitempty"`
	// DialErrors counts the gateway's failed dials to its endpoint during
	// the attempt, LastDialError says how the last one failed: either
	// makes the attempt an infra error.
	DialErrors    int64  `json:"dial_errors,omitempty"`
	LastDialError string `json:"last_dial_error,omitempty"`
	BytesIn       int64  `json:"bytes_in"`
	BytesOut      int64  `json:"bytes_out"`
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

// Change is one entry of a changeset: the journal's own type, so that
// an attempt's changeset and the journal's are one value, never
// converted. Its JSON is the journal's canonical form of a change.
type Change = journal.Change

// Attempt is one agent run on one task, and its verdict.
type Attempt struct {
	ID    string        `json:"id"`
	Run   string        `json:"run"`
	Task  string        `json:"task"`
	Agent AgentIdentity `json:"agent"`
	State string        `json:"state"`
	Phase string        `json:"phase,omitempty"`

	// The verdict (State done). Pass is false until then, and null in
	// JSON (see MarshalJSON). Outcome is the verdict's outcome (pass,
	// fail or review; empty for an attempt recorded before outcomes
	// existed, which is pass or fail as Pass says, and before a
	// verdict). An attempt whose Outcome is review is unresolved
	// (Unresolved): Pass is false, Reward 0, "pass": null in JSON, until
	// a review decides it.
	Pass    bool     `json:"pass"`
	Reward  int      `json:"reward"`
	Outcome string   `json:"outcome,omitempty"`
	Reasons []Reason `json:"reasons"`
	// Review is the decision of a person on a verdict the grader left
	// to review; nil when there is none. Once reviewed, Pass, Reward,
	// Outcome and Reasons are the decided verdict, and Review.Graded
	// holds the grader's.
	Review *Review `json:"review,omitempty"`
	// GradeSeed is the seed the verdict's generated checks were made
	// with (Verdict.Seed); omitted when the task generates none.
	GradeSeed uint64 `json:"grade_seed,omitempty"`

	// ExitCode and WallMS exist only once the agent's end was collected
	// (HasAgentEnd); in JSON they are null otherwise.
	ExitCode        int   `json:"exit_code"` // -1 when a signal ended the agent
	Signal          int   `json:"signal,omitempty"`
	TimedOut        bool  `json:"timed_out"`
	OOM             bool  `json:"oom"`
	WallMS          int64 `json:"wall_ms"`
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	MaxRSSBytes     int64 `json:"max_rss_bytes"`

	// ViewCPUMS is the CPU time benchd spent serving the attempt's
	// workspace view (its FUSE requests), GradeCPUMS the CPU time of
	// the grader's sandboxed commands (their cgroups' usage), in
	// milliseconds: benchd's work for the attempt (docs/security.md).
	ViewCPUMS  int64 `json:"view_cpu_ms"`
	GradeCPUMS int64 `json:"grade_cpu_ms"`

	Edits     int64    `json:"edits"`  // journal records that changed the workspace
	Denied    int64    `json:"denied"` // operations the policy refused
	Changeset []Change `json:"changeset"`
	Network   Network  `json:"network"`
	// Model sums the attempt's calls to model APIs through HTTP
	// gateways; nil when the attempt had none (no HTTP gateway, or
	// not yet ended).
	Model *ModelUsage `json:"model,omitempty"`
	// Binds are the host paths the agent's sandbox showed read-only
	// besides its allow-listed root: the task's [environment] binds and
	// the agent preset's.
	Binds []string `json:"binds,omitempty"`

	// JournalHead is the hash of the journal's last record: the value an
	// exported archive is checked against.
	JournalHead string `json:"journal_head,omitempty"`
	// InfraError says what failed when State is infra_error.
	InfraError string `json:"infra_error,omitempty"`
	// TaskSHA256 identifies the task bundle that graded this attempt.
	TaskSHA256 string `json:"task_sha256,omitempty"`
	// Limits are the limits the agent ran under (nil before it ran).
	Limits *Limits `json:"limits,omitempty"`
	// BenchdVersion is the version of the benchd that ended the attempt.
	BenchdVersion string `json:"benchd_version,omitempty"`
	// Host is the name of the benchd host that ran the attempt (benchd
	// --host), and HostKeyID the id of its host key (dsse.KeyID); both
	// empty while the attempt is queued.
	Host      string `json:"host,omitempty"`
	HostKeyID string `json:"host_keyid,omitempty"`
	// RetryOf is the infra-error attempt of the same run this attempt
	// retries; RetriedBy the attempt that retries this one. A run's slot
	// is a chain of attempts linked so, with at most one verdict: only an
	// infra error is retried, and only once.
	RetryOf   string `json:"retry_of,omitempty"`
	RetriedBy string `json:"retried_by,omitempty"`

	// Purpose is what the attempt was made for (PurposeRun, ...): only
	// runs count on scorecards and boards unless asked.
	Purpose string `json:"purpose,omitempty"`

	Created  time.Time  `json:"created"`
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
}

// Attempt purposes: what an attempt was made for.
const (
	PurposeRun    = "run"    // a run someone asked for (benchctl run, board): a result
	PurposeCheck  = "check"  // benchctl tasks check: the task store's known attempts
	PurposeIndex  = "index"  // benchctl library index: a reference run for a changeset
	PurposeReview = "review" // a run made to review something, not a result
)

// Purposes are the purposes there are, in the order above.
var Purposes = []string{PurposeRun, PurposeCheck, PurposeIndex, PurposeReview}

// ValidPurpose reports whether p is one of Purposes.
func ValidPurpose(p string) bool {
	for _, q := range Purposes {
		if p == q {
			return true
		}
	}
	return false
}

// PruneRequest asks benchd to delete the ended attempts (done,
// infra_error or canceled; never queued or running ones) created before
// Before, of one of Purposes (empty: every purpose), with their
// records, the blobs no remaining journal names, and their work
// directories; runs left without attempts go too. DryRun says what
// would go and deletes nothing.
type PruneRequest struct {
	Before   time.Time `json:"before"`
	Purposes []string  `json:"purposes,omitempty"`
	DryRun   bool      `json:"dry_run,omitempty"`
}

// Prune is what a prune deleted (or, DryRun, would delete).
type Prune struct {
	DryRun   bool     `json:"dry_run"`
	Attempts []string `json:"attempts"` // ids, oldest first
	Runs     int      `json:"runs"`     // runs left without attempts
	Blobs    int      `json:"blobs"`    // blobs no remaining journal names
	// The bytes freed: BlobBytes of blobs, RecordBytes of the
	// database's journals, transcripts, signatures and requests (on
	// SQLite the file shrinks only as the freed pages are reused),
	// WorkBytes of work directories under benchd's state directory.
	BlobBytes   int64 `json:"blob_bytes"`
	RecordBytes int64 `json:"record_bytes"`
	WorkBytes   int64 `json:"work_bytes"`
	// Kept are attempts whose work directory could not be removed
	// (in use), with why; their records are gone.
	Kept []string `json:"kept,omitempty"`
	// KeptForRetries are attempts selected but kept, whole, because a
	// kept attempt retries them (its signed statement names them).
	KeptForRetries []string `json:"kept_for_retries,omitempty"`
}

// Bytes is every byte p freed.
func (p Prune) Bytes() int64 { return p.BlobBytes + p.RecordBytes + p.WorkBytes }

// Limits are an attempt's limits.
type Limits struct {
	TimeoutMS   int64 `json:"timeout_ms"`   // the agent's wall-clock limit
	MemoryBytes int64 `json:"memory_bytes"` // the cgroup's memory.max; 0 for none
	// CPUs is the task's [environment] cpus, the agent's CPU quota in
	// CPUs (cpu.max); 0 for none.
	CPUs float64 `json:"cpus,omitempty"`
}

// HasVerdict reports whether a has a verdict: it is done. An Attempt
// without a State (a partial record, as the store keeps one) is taken
// as it is.
func (a Attempt) HasVerdict() bool {
	return a.State == StateDone || a.State == ""
}

// Unresolved reports whether a's verdict is left to review and no one
// has decided it yet: neither a pass nor a fail.
func (a Attempt) Unresolved() bool {
	return a.HasVerdict() && a.Outcome == OutcomeReview
}

// Review is a person's decision on a verdict left to review: what they
// decided, who (the uid of the caller, from the socket's peer
// credentials), when and why.
type Review struct {
	Outcome string    `json:"outcome"` // OutcomePass or OutcomeFail
	Why     string    `json:"why"`
	UID     int       `json:"uid"`
	Time    time.Time `json:"time"`
	// Graded is the grader's verdict, the one left to review (outcome
	// review, its needs_review reason).
	Graded Verdict `json:"graded"`
}

// ReviewRequest decides an attempt whose verdict is left to review.
type ReviewRequest struct {
	Outcome string `json:"outcome"` // OutcomePass or OutcomeFail
	Why     string `json:"why"`     // required, at most MaxReviewWhy bytes
}

// MaxReviewWhy caps the length of a review's reason.
const MaxReviewWhy = 4096

// ReasonFailedOnReview is the reason code of a verdict failed by review.
const ReasonFailedOnReview = "failed_on_review"

// HasAgentEnd reports whether a's exit status and wall time exist: the
// attempt is done, or it ended otherwise after its agent's end was
// measured. Queued attempts, and attempts canceled or failed before the
// agent's end was collected, have neither.
func (a Attempt) HasAgentEnd() bool {
	return a.HasVerdict() || a.WallMS > 0
}

// attemptFields is Attempt without its methods, for MarshalJSON.
type attemptFields Attempt

// MarshalJSON writes pass as null when a has no verdict or is
// unresolved, and exit_code and wall_ms as null when they do not exist
// (HasVerdict, Unresolved, HasAgentEnd).
func (a Attempt) MarshalJSON() ([]byte, error) {
	w := struct {
		attemptFields
		Pass     *bool  `json:"pass"`
		ExitCode *int   `json:"exit_code"`
		WallMS   *int64 `json:"wall_ms"`
	}{attemptFields: attemptFields(a)}
	if a.HasVerdict() && !a.Unresolved() {
		w.Pass = &a.Pass
	}
	if a.HasAgentEnd() {
		w.ExitCode, w.WallMS = &a.ExitCode, &a.WallMS
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes: null is the zero value.
func (a *Attempt) UnmarshalJSON(b []byte) error {
	w := struct {
		*attemptFields
		Pass     *bool  `json:"pass"`
		ExitCode *int   `json:"exit_code"`
		WallMS   *int64 `json:"wall_ms"`
	}{attemptFields: (*attemptFields)(a)}
	*a = Attempt{}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Pass != nil {
		a.Pass = *w.Pass
	}
	if w.ExitCode != nil {
		a.ExitCode = *w.ExitCode
	}
	if w.WallMS != nil {
		a.WallMS = *w.WallMS
	}
	return nil
}

// AttemptList is a page of attempts.
type AttemptList struct {
	Attempts []Attempt `json:"attempts"`
	// Total is how many attempts match the filter, the limit aside;
	// more than len(Attempts) when the limit cut the list.
	Total int `json:"total"`
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

// Verdict outcomes.
const (
	OutcomePass   = "pass"
	OutcomeFail   = "fail"
	OutcomeReview = "review" // neither passed nor failed: left to a person
)

// Verdict is pass, reward and reasons, and the outcome. A verdict left to
// review (Outcome review) has Pass false and Reward 0 in Go, "pass": null
// in JSON, and one reason, needs_review, saying why the grader was not
// confident. An empty Outcome (a verdict recorded before outcomes
// existed) is pass or fail as Pass says.
type Verdict struct {
	Pass    bool     `json:"pass"`
	Reward  int      `json:"reward"`
	Outcome string   `json:"outcome,omitempty"`
	Reasons []Reason `json:"reasons"`
	// Seed is the seed of the grading's generated checks (0 when the
	// task has none): a regrade with it makes the same checks.
	Seed uint64 `json:"seed,omitempty"`
}

// MarshalJSON writes "pass": null for a verdict left to review, and
// "reasons": [] rather than null.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	out := struct {
		plain
		Pass *bool `json:"pass"`
	}{plain: plain(v)}
	if out.Reasons == nil {
		out.Reasons = []Reason{}
	}
	if v.Outcome != OutcomeReview {
		out.Pass = &v.Pass
	}
	return json.Marshal(out)
}

// Gateway kinds (GatewayUse.Kind).
const (
	GatewayTCP  = "tcp"  // NAME=HOST:PORT: bytes copied both ways untouched (TLS passes through)
	GatewayHTTP = "http" // NAME=http(s)://...: an HTTP reverse proxy that records each model call
)

// Model APIs (ModelCall.API), recognized by the request's path.
const (
	ModelAPIResponses = "responses" // OpenAI Responses: POST .../responses
	ModelAPIChat      = "chat"      // OpenAI Chat Completions: POST .../chat/completions
	ModelAPIMessages  = "messages"  // Anthropic Messages: POST .../messages
	ModelAPIOther     = "other"     // anything else (model lists, token counts...): proxied and recorded, no usage read
)

// TokenUsage is what a model API reported for one response, or a sum,
// normalized across the APIs: InputTokens counts every prompt token,
// those read from or written to the provider's cache included (OpenAI's
// prompt_tokens or input_tokens; Anthropic's input_tokens plus
// cache_read_input_tokens plus cache_creation_input_tokens), and
// OutputTokens every completion token, reasoning included.
type TokenUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`          // of InputTokens, read from the cache
	CacheWriteTokens  int64 `json:"cache_write_tokens,omitempty"` // of InputTokens, written to the cache (Anthropic)
	OutputTokens      int64 `json:"output_tokens"`
	ReasoningTokens   int64 `json:"reasoning_tokens,omitempty"` // of OutputTokens
}

// Add adds v to u.
func (u *TokenUsage) Add(v TokenUsage) {
	u.InputTokens += v.InputTokens
	u.CachedInputTokens += v.CachedInputTokens
	u.CacheWriteTokens += v.CacheWriteTokens
	u.OutputTokens += v.OutputTokens
	u.ReasoningTokens += v.ReasoningTokens
}

// ModelUsage sums model calls: an attempt's (Attempt.Model), or a run's
// or an agent's (the sum of their attempts').
type ModelUsage struct {
	Calls int64 `json:"calls"`
	// Errors counts calls with no response or a status of 400 or more;
	// Unreported calls whose response carried no usage (their tokens are
	// not in the sums).
	Errors     int64 `json:"errors,omitempty"`
	Unreported int64 `json:"unreported,omitempty"`
	TokenUsage
	ToolCalls int64 `json:"tool_calls"` // tool calls the model asked for
	// CostUSD is the calls' cost at benchd's price table (benchd
	// --prices) when the attempt ended; nil without a table. Unpriced
	// counts the calls whose model the table does not list (not in
	// CostUSD).
	CostUSD  *float64 `json:"cost_usd,omitempty"`
	Unpriced int64    `json:"unpriced,omitempty"`
	// CallsSHA256 is, in an attempt's own usage (Attempt.Model), the
	// hash of its calls (ModelCallsSHA256): the signed statement
	// carries it, so that neither a call nor a stored message can be
	// changed and still verify. Add leaves it out of sums.
	CallsSHA256 string `json:"calls_sha256,omitempty"`
}

// Add adds v to u (a nil CostUSD adds nothing to the cost).
func (u *ModelUsage) Add(v ModelUsage) {
	u.Calls += v.Calls
	u.Errors += v.Errors
	u.Unreported += v.Unreported
	u.TokenUsage.Add(v.TokenUsage)
	u.ToolCalls += v.ToolCalls
	u.Unpriced += v.Unpriced
	if v.CostUSD != nil {
		c := *v.CostUSD
		if u.CostUSD != nil {
			c += *u.CostUSD
		}
		u.CostUSD = &c
	}
}

// ToolCall is one tool call a model asked for in a response.
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // as sent (JSON for function tools), the first MaxModelText bytes
}

// MaxModelText caps the text and each tool call's arguments kept in a
// ModelCall (the stored request and response are whole, up to their
// own cap).
const MaxModelText = 4096

// ModelCall is one request an agent made through an HTTP gateway and
// the upstream's response: a model turn when API is one of the model
// APIs.
type ModelCall struct {
	Seq        int       `json:"seq"` // from 1, in the order the requests arrived
	Gateway    string    `json:"gateway"`
	Time       time.Time `json:"time"`        // the request's arrival
	DurationMS int64     `json:"duration_ms"` // to the response's last byte
	Method     string    `json:"method"`
	Path       string    `json:"path"` // as the agent sent it, query included
	API        string    `json:"api"`  // ModelAPIResponses, ...
	Model      string    `json:"model,omitempty"`
	Stream     bool      `json:"stream,omitempty"`
	// Status is the upstream's status code; 0 when there was no
	// response, and Error says why (the upstream unreachable, the
	// agent gone, the response cut short).
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
	// Usage is what the response reported; nil when it reported none.
	Usage     *TokenUsage `json:"usage,omitempty"`
	ToolCalls []ToolCall  `json:"tool_calls,omitempty"`
	// Text is the assistant's text in the response, its first
	// MaxModelText bytes.
	Text string `json:"text,omitempty"`
	// The sizes of the request's and response's bodies as they crossed
	// the gateway; Truncated says the stored copy of one of them was cut
	// at the attempt's cap.
	RequestBytes  int64 `json:"request_bytes"`
	ResponseBytes int64 `json:"response_bytes"`
	Truncated     bool  `json:"truncated,omitempty"`
	// RequestSHA256 and ResponseSHA256 are the SHA-256 of the stored
	// request and response (the text the .../request and .../response
	// endpoints give, and an export's model/SEQ.request and .response):
	// the calls' hash (ModelCallsSHA256), which the statement signs,
	// binds the stored messages through them. ResponseSHA256 is the
	// hash of the empty message when there was no response.
	RequestSHA256  string `json:"request_sha256,omitempty"`
	ResponseSHA256 string `json:"response_sha256,omitempty"`
}

// ModelUsageOf sums calls as ModelUsage counts them: every call; an
// error for no response or a status of 400 or more; unreported for one
// whose response carried no usage; the tokens and tool calls of the
// rest. It sets no cost (the price table's, benchd's) and no
// CallsSHA256.
func ModelUsageOf(calls []ModelCall) ModelUsage {
	var u ModelUsage
	for _, c := range calls {
		u.Calls++
		if c.Status == 0 || c.Status >= 400 {
			u.Errors++
		}
		if c.Usage == nil {
			u.Unreported++
		} else {
			u.TokenUsage.Add(*c.Usage)
		}
		u.ToolCalls += int64(len(c.ToolCalls))
	}
	return u
}

// ModelCallsSHA256 is the hex SHA-256 of calls as JSON lines: each
// call's encoding (encoding/json) and a newline, in order; an export's
// model.jsonl is exactly these bytes. "" for no calls.
func ModelCallsSHA256(calls []ModelCall) string {
	if len(calls) == 0 {
		return ""
	}
	sum := sha256.Sum256(ModelCallsJSONL(calls))
	return hex.EncodeToString(sum[:])
}

// ModelCallsJSONL is calls encoded as ModelCallsSHA256 hashes them: a
// JSON line each, in order (an export's model.jsonl).
func ModelCallsJSONL(calls []ModelCall) []byte {
	var b []byte
	for _, c := range calls {
		line, _ := json.Marshal(c)
		b = append(append(b, line...), '\n')
	}
	return b
}

// ModelLog is an attempt's model calls, in order, and their sum.
type ModelLog struct {
	Attempt string      `json:"attempt"`
	Calls   []ModelCall `json:"calls"`
	Usage   ModelUsage  `json:"usage"`
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

// TaskList lists the task store: the bundles that load, and the ones
// that do not (Broken), which hide no other.
type TaskList struct {
	Tasks  []TaskInfo     `json:"tasks"`
	Broken []BrokenBundle `json:"broken,omitempty"`
}

// BrokenBundle is a bundle of the task store that does not load.
type BrokenBundle struct {
	Dir   string `json:"dir"`
	Error string `json:"error"`
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

// CheckEvent is one line of POST /v1/tasks/check?stream=1, the check's
// progress as newline-delimited JSON. Type says which fields are set:
//
//   - "start", first: Attempts, each attempt the check submitted with the
//     verdict it expects (GotPass, GotCodes and OK not yet known), in
//     the order of the answer's results; Concurrency, how many attempts
//     benchd runs at once;
//   - "attempt", as each attempt ends, in the order they end: Result,
//     its line of the answer, and Ended, the attempt;
//   - "end", last: Check, the answer the form without stream=1 sends;
//   - "error", last instead of "end" when the check could not finish
//     (benchd shutting down, a submit refused): Error, as an error
//     response would carry it.
type CheckEvent struct {
	Type        string        `json:"type"`
	Attempts    []CheckResult `json:"attempts,omitempty"`
	Concurrency int           `json:"concurrency,omitempty"`
	Result      *CheckResult  `json:"result,omitempty"`
	Ended       *Attempt      `json:"ended,omitempty"`
	Check       *TaskCheck    `json:"check,omitempty"`
	Error       *Error        `json:"error,omitempty"`
}

// CheckEvent types.
const (
	CheckStart   = "start"
	CheckAttempt = "attempt"
	CheckEnd     = "end"
	CheckError   = "error"
)

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
// journal.jsonl.blobs/<sha[:2]>/<sha>, transcript/stdout and transcript/stderr,
// attempt.json (the Attempt, verdict included), task.json (the TaskInfo
// with the bundle hash), attempt.dsse.json (the Statement of the
// attempt in a DSSE envelope signed by benchd's host key) and, for a
// reviewed attempt, review.json (the Review, which attempt.json and the
// signed statement carry too). An attempt with model calls adds
// model.jsonl (its ModelCalls, the bytes ModelCallsSHA256 hashes) and
// model/SEQ.request and model/SEQ.response (each call's stored
// messages). benchctl verify checks it offline.
const ExportLayout = "journal.jsonl, journal.jsonl.blobs/, transcript/stdout, transcript/stderr, attempt.json, task.json, attempt.dsse.json, review.json (reviewed attempts), model.jsonl and model/ (attempts with model calls)"

// HostKey is the public half of benchd's host key, which signs each
// ended attempt's Statement.
type HostKey struct {
	Algorithm string `json:"algorithm"`  // ed25519
	PublicKey string `json:"public_key"` // hex, 32 bytes
	KeyID     string `json:"keyid"`      // hex SHA-256 of the 32 bytes, the envelopes' keyid
}

// StatementPayloadType is the DSSE payload type of a signed Statement.
const StatementPayloadType = "application/vnd.benchd.attempt+json"

// StatementType is the _type of a Statement: its format's name and
// version. A statement of this type has no review.
const StatementType = "https://benchd.dev/attempt-statement/v1"

// StatementTypeReviewed is the _type of the Statement of a reviewed
// attempt: StatementType's fields and Review. benchd signs it when a
// review decides the attempt, and it replaces the statement signed when
// the attempt ended (whose verdict is Review.Graded).
const StatementTypeReviewed = "https://benchd.dev/attempt-statement/v2"

// Statement is what benchd signs when an attempt ends: each field but
// TaskPolicy is the attempt record's field of the same name
// (StatementOf), so that a verifier compares them one by one with the
// exported attempt.json, and TaskPolicy with task.json.
type Statement struct {
	Type          string        `json:"_type"`
	Attempt       string        `json:"attempt"`
	Run           string        `json:"run"`
	Task          string        `json:"task"`
	TaskSHA256    string        `json:"task_sha256"`
	State         string        `json:"state"`
	InfraError    string        `json:"infra_error"`
	Verdict       *Verdict      `json:"verdict"` // null without a verdict
	JournalHead   string        `json:"journal_head"`
	Agent         AgentIdentity `json:"agent"`
	Limits        *Limits       `json:"limits"`
	Created       time.Time     `json:"created"`
	Started       *time.Time    `json:"started"`
	Finished      *time.Time    `json:"finished"`
	WallMS        *int64        `json:"wall_ms"`
	ExitCode      *int          `json:"exit_code"`
	Signal        int           `json:"signal"`
	TimedOut      bool          `json:"timed_out"`
	OOM           bool          `json:"oom"`
	PeakMemory    int64         `json:"peak_memory_bytes"`
	MaxRSS        int64         `json:"max_rss_bytes"`
	Edits         int64         `json:"edits"`
	Denied        int64         `json:"denied"`
	Changeset     []Change      `json:"changeset"`
	Network       Network       `json:"network"`
	BenchdVersion string        `json:"benchd_version"`
	Host          string        `json:"host,omitempty"`
	HostKeyID     string        `json:"host_keyid,omitempty"`
	// Binds are the host paths the agent's sandbox showed read-only
	// beyond its allow-listed root (Attempt.Binds): what else the agent
	// could read is part of what is signed.
	Binds []string `json:"binds,omitempty"`
	// RetryOf is the attempt this one retries; omitted for a first
	// attempt. (RetriedBy is not signed: it is set after this attempt
	// ended, when its retry is made.)
	RetryOf string `json:"retry_of,omitempty"`
	// TaskPolicy is the edit policy of bundle TaskSHA256 (task.json's
	// allow and ignore), null when benchd no longer had that bundle when
	// it signed. It is not a field of the attempt: StatementOf leaves it
	// null, and the signer sets it.
	TaskPolicy *TaskPolicy `json:"task_policy"`
	// Review is the attempt's review: only in a statement of type
	// StatementTypeReviewed.
	Review *Review `json:"review,omitempty"`
	// Model is the attempt's model usage (Attempt.Model), with the hash
	// of its calls; omitted when it had none.
	Model *ModelUsage `json:"model,omitempty"`
}

// TaskPolicy is a task's edit policy (fsmon/journal.Policy's globs).
type TaskPolicy struct {
	Allow  []string `json:"allow"`
	Ignore []string `json:"ignore"`
}

// StatementOf is the Statement of attempt a: of type
// StatementTypeReviewed when a has a review, else StatementType.
func StatementOf(a Attempt) Statement {
	st := Statement{
		Type: StatementType, Attempt: a.ID, Run: a.Run, Task: a.Task, TaskSHA256: a.TaskSHA256,
		State: a.State, InfraError: a.InfraError, JournalHead: a.JournalHead,
		Agent: a.Agent, Limits: a.Limits,
		Created: a.Created, Started: a.Started, Finished: a.Finished,
		Signal: a.Signal, TimedOut: a.TimedOut, OOM: a.OOM,
		PeakMemory: a.PeakMemoryBytes, MaxRSS: a.MaxRSSBytes,
		Edits: a.Edits, Denied: a.Denied, Changeset: a.Changeset, Network: a.Network,
		BenchdVersion: a.BenchdVersion, Host: a.Host, HostKeyID: a.HostKeyID, Binds: a.Binds, RetryOf: a.RetryOf, Review: a.Review,
		Model: a.Model,
	}
	if a.Review != nil {
		st.Type = StatementTypeReviewed
	}
	if a.HasVerdict() {
		v := Verdict{Pass: a.Pass, Reward: a.Reward, Outcome: a.Outcome, Reasons: a.Reasons, Seed: a.GradeSeed}
		if v.Reasons == nil {
			v.Reasons = []Reason{}
		}
		st.Verdict = &v
	}
	if a.HasAgentEnd() {
		exit, wall := a.ExitCode, a.WallMS
		st.ExitCode, st.WallMS = &exit, &wall
	}
	if st.Changeset == nil {
		st.Changeset = []Change{}
	}
	return st
}
