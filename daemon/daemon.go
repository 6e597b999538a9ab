package daemon

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/limits"
	"benchd.dev/modelgw"
	"benchd.dev/sandbox"
)

// Config configures Run.
type Config struct {
	// Socket is the unix socket to listen on; default apitype.DefaultSocket.
	Socket string
	// StateDir holds the database, the blobs and the attempts' work
	// directories; default DefaultStateDir.
	StateDir string
	// Database is where the store keeps its records: empty for SQLite
	// in StateDir, or a postgres:// URL (store.Config.Database); the
	// blobs are then in the database, and StateDir/blobs is this host's
	// cache of them.
	Database string
	// TasksDir is the task store; default tasks.DefaultDir().
	TasksDir string
	// Concurrency is how many attempts run at once; default runtime.NumCPU().
	Concurrency int
	// MaxQueued is how many attempts may wait in the queue (running ones
	// not counted); a run that would queue more is refused as busy.
	// Default DefaultMaxQueued.
	MaxQueued int
	// AgentUID and AgentGID are the credentials agents run with; both
	// must be non-zero. With UIDs set, each attempt and each grading
	// takes a uid of its own from it instead (runs.Config.UIDs).
	AgentUID, AgentGID int
	UIDs               *sandbox.UIDPool
	// Group names the group whose members may use the API (root always
	// may); default DefaultGroup.
	Group string
	// Retries is how many times an attempt that ends in an infra error is
	// retried automatically, each retry a new attempt of the same run
	// linked to the one it retries; 0 never (benchd --retries, default 1).
	Retries int
	// StopTimeout bounds how long a shutdown waits for running attempts
	// to unwind once they are canceled; default 10 s.
	StopTimeout time.Duration
	// DrainTimeout is how long a shutdown lets running attempts go on to
	// their verdicts before it cancels them (benchd --drain-timeout); 0
	// cancels them at once. Queued attempts stay queued for the next
	// start either way.
	DrainTimeout time.Duration
	// Metrics, when set, is the TCP address (host:port) GET /metrics is
	// served on, in the Prometheus text format (benchd --metrics).
	Metrics string
	// Host is this benchd's name: recorded in every attempt it runs,
	// its River queue on a fleet, and the host label of every metric
	// (benchd --host); default os.Hostname(). Hosts of one fleet must
	// have different names.
	Host string
	// RescueAfter is, on a fleet, how long an attempt's job may run
	// before River hands it to another host, which gives the attempt up
	// only if its host has gone silent (benchd --rescue-after); default
	// DefaultRescueAfter.
	RescueAfter time.Duration
	// Heartbeat is how often a host of a fleet says it runs its
	// attempts; one silent for 5 heartbeats is taken for dead. Default
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// CgroupParent is the delegated cgroup (v2 path) below which attempt
	// groups are made; "" means the group benchd is in when it starts
	// (limits.Delegate moves benchd into a leaf below it on cgroup v2).
	CgroupParent string
	// MaxStateSize, when positive, is the state directory's budget in
	// bytes (benchd --max-state-size; default 0, no budget): when an
	// attempt ends and at start, the oldest ended attempts are pruned
	// until the state fits, never one left to review or reviewed
	// (keepStateBudget).
	MaxStateSize int64
	// ReserveBytes is the free space the state directory's file system
	// must keep beyond an attempt's whole disk for the attempt to start
	// (benchd --min-free; runs.Config.ReserveBytes): 0 means
	// runs.DefaultReserveBytes, negative no check.
	ReserveBytes int64
	// Prices is the price table applied to an attempt's model calls
	// when it ends (benchd --prices); nil: no cost is computed.
	Prices *modelgw.Prices
	// Ready, when set, is called once the socket accepts connections
	// (cmd/benchd sends sd_notify READY=1 from it).
	Ready  func()
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultStateDir    = "/var/lib/benchd"
	DefaultGroup       = "benchd"
	DefaultStopTimeout = 10 * time.Second
	DefaultMaxQueued   = 1000
)

// regradeDir, in the state directory, holds the final trees rebuilt for
// regrades while they run.
const regradeDir = "regrade"

// Version is reported by GET /v1/status.
var Version = "dev"

var (
	// errShutdown is the cause given to running attempts when benchd stops.
	errShutdown = errors.New("benchd shut down during the attempt")
	// errUserCanceled is the cause given to an attempt canceled by a caller.
	errUserCanceled = errors.New("attempt canceled")
)

// server is the running daemon.
type server struct {
	cfg    Config
	log    *slog.Logger
	store  *store.Store
	engine *runs.Engine
	// runner runs an attempt: engine.Run, or in a benchmark of the
	// coordination alone an attempt that does nothing.
	runner func(ctx context.Context, id string, plan *runs.Plan, progress func(apitype.Event)) (runs.Outcome, error)
	auth   authorizer
	// key is the host key: it signs each ended attempt's statement.
	key ed25519.PrivateKey
	mux *http.ServeMux

	// workCtx is the parent of every attempt's context; stopWork cancels
	// it at shutdown with errShutdown.
	workCtx  context.Context
	stopWork context.CancelCauseFunc
	// closing is closed when event streams must end.
	closing chan struct{}

	// secrets has the --env values of the live attempts, for the log.
	secrets *secretSet
	// metrics is what GET /metrics reports.
	metrics *metrics
	// fleet is set when the store is on PostgreSQL: attempts are then
	// River jobs, and queue below is unused. stopFleet is closed at
	// shutdown.
	fleet     *fleet
	stopFleet chan struct{}

	// budgetMu lets one state budget pass run at a time.
	budgetMu sync.Mutex

	mu   sync.Mutex
	cond *sync.Cond // signals a change of queue or stopping
	// queue holds the ids of queued attempts, oldest first.
	queue []string
	// reserved counts the attempts of runs being submitted, not yet in
	// queue: they count against MaxQueued.
	reserved int
	// live holds the attempts that are queued or running in this process.
	live map[string]*liveAttempt
	// stopping is set when intake has stopped.
	stopping bool
}

func (cfg *Config) setDefaults() error {
	if cfg.Socket == "" {
		cfg.Socket = apitype.DefaultSocket
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	if cfg.TasksDir == "" {
		return fmt.Errorf("no task directory: %w", errInvalid)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = runtime.NumCPU()
	}
	if cfg.Retries < 0 {
		return fmt.Errorf("retries %d is negative: %w", cfg.Retries, errInvalid)
	}
	if cfg.Concurrency < 0 {
		return fmt.Errorf("concurrency %d is negative: %w", cfg.Concurrency, errInvalid)
	}
	if cfg.MaxQueued == 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.MaxQueued < 0 {
		return fmt.Errorf("max queued %d is negative: %w", cfg.MaxQueued, errInvalid)
	}
	if cfg.AgentUID <= 0 || cfg.AgentGID <= 0 {
		return fmt.Errorf("agent uid %d and gid %d must both be non-zero: %w", cfg.AgentUID, cfg.AgentGID, errInvalid)
	}
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.DrainTimeout < 0 {
		return fmt.Errorf("drain timeout %v is negative: %w", cfg.DrainTimeout, errInvalid)
	}
	if cfg.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("unable to read the host name: %w", err)
		}
		cfg.Host = h
	}
	if cfg.RescueAfter <= 0 {
		cfg.RescueAfter = DefaultRescueAfter
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var err error
	if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return err
	}
	if cfg.TasksDir, err = filepath.Abs(cfg.TasksDir); err != nil {
		return err
	}
	return nil
}

// Run serves the API on cfg.Socket until ctx is canceled, then shuts down
// gracefully (see the package doc) and returns nil. It returns an error
// when it cannot start.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	// Every record benchd logs, its own and its packages', is scrubbed of
	// the --env values of the attempts live at the time.
	secrets := &secretSet{}
	cfg.Logger = slog.New(secrets.handler(cfg.Logger.Handler()))
	log := cfg.Logger.With("component", "daemon")
	// The metrics address is taken first: a bad or busy one fails the
	// start before anything is changed.
	var metricsLn net.Listener
	if cfg.Metrics != "" {
		ln, err := listenMetrics(cfg.Metrics)
		if err != nil {
			return err
		}
		metricsLn = ln
		defer metricsLn.Close()
	}
	// A busy socket, one with nowhere to go or a missing task store fails
	// the start before the state directory is made, locked or migrated.
	if err := checkSocket(cfg.Socket); err != nil {
		return err
	}
	if fi, err := os.Stat(cfg.TasksDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("task store %s is not a directory: %w", cfg.TasksDir, errInvalid)
	}
	lock, err := prepareState(ctx, &cfg, log)
	if err != nil {
		return err
	}
	defer lock.Close()
	key, err := HostKey(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("unable to load the host key: %w", err)
	}
	st, err := store.Open(ctx, store.Config{Dir: cfg.StateDir, Database: cfg.Database, Logger: cfg.Logger})
	if err != nil {
		return fmt.Errorf("unable to open the store: %w", err)
	}
	defer st.Close()
	// On a fleet the host name has one live owner: a second benchd under
	// it would take this one's running attempts for a crashed host's.
	claim, err := st.ClaimHost(ctx, cfg.Host)
	if err != nil {
		return err
	}
	defer claim.Close()
	lost, resign, err := recoverStart(ctx, st, cfg, log)
	if err != nil {
		return err
	}
	eng, err := runs.New(runs.Config{
		StateDir:     cfg.StateDir,
		TasksDir:     cfg.TasksDir,
		AgentUID:     cfg.AgentUID,
		AgentGID:     cfg.AgentGID,
		UIDs:         cfg.UIDs,
		CgroupParent: cfg.CgroupParent,
		ReserveBytes: cfg.ReserveBytes,
		// Each of the attempts that run at once gets its own share of
		// benchd's descriptors: a view that takes all of its share
		// leaves the others' whole.
		ViewsAtOnce: cfg.Concurrency,
		Logger:      cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("unable to start the attempt engine: %w", err)
	}

	s, err := newServer(ctx, cfg, log, st, eng, key, secrets, len(lost))
	if err != nil {
		return err
	}
	for _, id := range resign {
		s.sign(ctx, id, nil)
	}
	s.keepStateBudget(ctx)
	log.Info("host key", "keyid", PublicHostKey(key).KeyID)
	if st.OnPostgres() {
		// The queue is River's, in the database: nothing to requeue.
		if s.fleet, err = newFleet(ctx, s); err != nil {
			return err
		}
	} else if err := s.requeue(ctx); err != nil {
		return err
	}

	ln, err := listen(cfg.Socket, cfg.Group, log)
	if err != nil {
		return err
	}
	runErr := s.serve(ctx, ln, metricsLn)
	log.Info("benchd stopped")
	return runErr
}

// serve starts the workers (this host's, or the fleet's River client),
// serves the API on ln and the metrics on metricsLn (when set) until ctx
// is canceled or serving fails, then shuts down.
func (s *server) serve(ctx context.Context, ln, metricsLn net.Listener) error {
	cfg, log := s.cfg, s.log
	srv := &http.Server{
		Handler:           s,
		ConnContext:       connContext,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	var workers sync.WaitGroup
	if err := s.attempts().startWorkers(ctx, &workers); err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	var msrv *http.Server
	if metricsLn != nil {
		msrv = metricsServer(s.metrics)
		go serveMetrics(msrv, metricsLn, log.Warn)
		log.Info("metrics served", "addr", metricsLn.Addr().String(), "host", cfg.Host)
	}
	log.Info("benchd is ready", "socket", cfg.Socket, "state", cfg.StateDir, "tasks", cfg.TasksDir, "concurrency", cfg.Concurrency)
	if cfg.Ready != nil {
		cfg.Ready()
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("unable to serve: %w", err)
	}
	s.shutdown(&workers)
	shutCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		srv.Close()
	}
	if msrv != nil {
		if err := msrv.Shutdown(shutCtx); err != nil {
			msrv.Close()
		}
	}
	return runErr
}

// newServer is the daemon of cfg on store st and engine eng, signing
// with key; lost attempts were ended by start-up recovery.
func newServer(ctx context.Context, cfg Config, log *slog.Logger, st *store.Store, eng *runs.Engine, key ed25519.PrivateKey, secrets *secretSet, lost int) (*server, error) {
	s := &server{
		cfg:       cfg,
		log:       log,
		store:     st,
		engine:    eng,
		runner:    eng.RunPlan,
		key:       key,
		auth:      authorizer{Group: cfg.Group, ProcDir: "/proc"},
		closing:   make(chan struct{}),
		stopFleet: make(chan struct{}),
		live:      map[string]*liveAttempt{},
		secrets:   secrets,
	}
	s.metrics = newMetrics(cfg.Host, s.counts)
	s.metrics.recovered(lost)
	if err := s.metrics.countStored(ctx, st); err != nil {
		return nil, err
	}
	s.cond = sync.NewCond(&s.mu)
	s.workCtx, s.stopWork = context.WithCancelCause(context.WithoutCancel(ctx))
	s.mux = s.routes()
	return s, nil
}

// prepareState makes the state directory and takes its lock (returned:
// held until benchd stops), moves benchd into its delegated cgroup leaf
// (cfg.CgroupParent follows) and clears what a crash left behind, in that
// order: nothing in the directory is touched before the lock is held.
func prepareState(ctx context.Context, cfg *Config, log *slog.Logger) (io.Closer, error) {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("unable to create the state directory: %w", err)
	}
	// The state directory has one owner: the lock comes before anything
	// in it is cleaned, migrated or made.
	lock, err := lockState(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.Close()
		}
	}()
	if err := secureState(cfg, log); err != nil {
		return nil, err
	}
	// On a cgroup v2 host benchd's own group cannot hold both benchd and
	// the groups of its attempts: move into a leaf (limits.Delegate).
	deleg, err := limits.Delegate(ctx, limits.DelegateConfig{Parent: cfg.CgroupParent, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("unable to prepare cgroups for attempts: %w", err)
	}
	if deleg.Parent != "" {
		cfg.CgroupParent = deleg.Parent
		log.Info("attempt cgroups go below the delegated group", "parent", deleg.Parent, "self", deleg.Self, "scope", deleg.Scope)
	}
	// Leftovers of a crash go before anything new is made.
	if err := runs.Cleanup(ctx, cfg.StateDir, cfg.CgroupParent); err != nil {
		log.Warn("cleanup of a previous run was incomplete", "err", err)
	}
	// Trees rebuilt for regrades in progress at a crash are of no use.
	os.RemoveAll(filepath.Join(cfg.StateDir, regradeDir))
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, regradeDir), 0o700); err != nil {
		return nil, fmt.Errorf("unable to create the state directory: %w", err)
	}
	ok = true
	return lock, nil
}

// recoverStart is start-up recovery: the attempts in flight when the
// last benchd stopped (on a fleet, this host's only: the others' are
// their hosts', or the rescuer's) end as infra errors, and journals left
// unsealed are sealed. It returns the attempts ended, and those to sign
// again once their last update is stored.
func recoverStart(ctx context.Context, st *store.Store, cfg Config, log *slog.Logger) (lost, resign []string, err error) {
	recoverHost := ""
	if st.OnPostgres() {
		recoverHost = cfg.Host
	}
	// The one batch of endings written before anything runs: stored
	// here, signed by Run, counted by metrics.recovered.
	lost, err = st.MarkHostInFlightInfraError(ctx, ender(apitype.StateInfraError, "benchd stopped while the attempt ran"), recoverHost)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to recover attempts in flight: %w", err)
	}
	for _, id := range lost {
		log.Warn("attempt in flight at the last stop is now infra_error", "attempt", id)
	}
	// Sealing a left journal updates its attempt (head, changeset): such
	// an attempt is signed again, after its last update.
	resign = append([]string{}, lost...)
	for _, id := range recoverJournals(ctx, st, cfg, log) {
		if !slices.Contains(resign, id) {
			resign = append(resign, id)
		}
	}
	return lost, resign, nil
}

// shutdown stops intake and hands the queued attempts back (they stay
// queued in the store for the next start). Running attempts go on for
// at most cfg.DrainTimeout; those still running then are canceled, and
// shutdown waits at most cfg.StopTimeout more for them to unwind. The
// API stays up meanwhile: callers see the attempts end, may cancel them,
// and new runs are refused as busy.
func (s *server) shutdown(workers *sync.WaitGroup) {
	s.mu.Lock()
	s.stopping = true
	running := 0
	for _, la := range s.live {
		if la.cancel != nil {
			running++
		}
	}
	queued := len(s.queue)
	s.cond.Broadcast()
	s.mu.Unlock()
	s.attempts().closeIntake()

	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	if s.cfg.DrainTimeout > 0 && running > 0 {
		s.log.Info("stopping: intake closed, draining running attempts; queued ones stay queued for the next start",
			"running", running, "queued", queued, "drain_timeout", s.cfg.DrainTimeout)
		select {
		case <-done:
			s.log.Info("drained: every running attempt ended")
		case <-time.After(s.cfg.DrainTimeout):
			_, left := s.counts()
			s.log.Warn("drain timeout passed: canceling the attempts still running", "running", left, "drain_timeout", s.cfg.DrainTimeout)
		}
	} else {
		s.log.Info("stopping: intake closed, canceling running attempts; queued ones stay queued for the next start", "running", running, "queued", queued)
	}
	s.stopWork(errShutdown)

	select {
	case <-done:
	case <-time.After(s.cfg.StopTimeout):
		s.log.Error("running attempts did not end in time; marking them infra_error", "timeout", s.cfg.StopTimeout)
		s.abandonRunning()
	}
	close(s.closing)
}

// abandonRunning records every attempt still running as infra_error.
func (s *server) abandonRunning() {
	s.mu.Lock()
	var ids []string
	for id, la := range s.live {
		if la.cancel != nil {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, id := range ids {
		a, err := s.store.GetAttempt(ctx, id)
		if err != nil {
			continue
		}
		end(&a, apitype.StateInfraError, errShutdown.Error()+"; it did not stop in time")
		if _, err := s.finish(ctx, &closing{a: a, write: s.store.UpdateAttempt, infra: infraShutdownTimeout}); err != nil {
			s.log.Error("unable to record an abandoned attempt", "attempt", id, "err", err)
		}
	}
}

// listen creates the socket, mode 0660, owned by group when it exists.
// A stale socket file of a dead benchd is replaced; a live one is an
// error.
func listen(path, group string, log *slog.Logger) (net.Listener, error) {
	if err := checkSocket(path); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("unable to create the socket directory: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("unable to remove the stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("unable to listen: %w", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("unable to set the socket's mode: %w", err)
	}
	if gid, err := lookupGID(group); err == nil {
		if err := os.Chown(path, 0, gid); err != nil {
			ln.Close()
			return nil, fmt.Errorf("unable to give the socket to group %s: %w", group, err)
		}
	} else {
		log.Warn("group does not exist: only root may use benchd", "group", group)
	}
	return ln, nil
}

// checkSocket says whether benchd could listen at path without changing
// anything: the socket's directory may be missing (listen makes it, as
// /run/benchd), but not its parent, so a mistyped path does not grow a
// tree at the file-system root; a file there must be a socket, and no
// live benchd may be listening on it.
func checkSocket(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Dir(dir)); err != nil {
			return fmt.Errorf("socket %s: %s does not exist (benchd makes only the socket's own directory): %w", path, filepath.Dir(dir), errInvalid)
		}
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket: %w", path, errInvalid)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("another benchd already listens on %s: %w", path, errConflict)
	}
	return nil
}

// ServeHTTP authorizes the caller, then routes the request.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := peerFrom(r.Context())
	if err := s.auth.allow(p); err != nil {
		s.log.Info("caller refused", "uid", p.UID, "pid", p.PID, "path", r.URL.Path, "err", err)
		writeError(w, s.log, r, err)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// newID returns a random id with prefix.
func newID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
