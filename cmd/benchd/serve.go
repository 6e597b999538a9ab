package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/modelgw"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

// DefaultAgentUser is the unprivileged account agents run as.
const DefaultAgentUser = "benchd-agent"

// nobody is the fallback account when DefaultAgentUser does not exist.
const nobody = 65534

// runServe runs the daemon in the foreground until ctx is canceled
// (SIGTERM, SIGINT), telling systemd when it is ready and when it stops.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl, o := serveFlags()
	if code, ok := parseFlags(fl, args, stdout, stderr, "", serveExamples); !ok {
		return code
	}
	socket, state, database, tasksDir := o.socket, o.state, o.database, o.tasksDir
	concurrency, maxQueued, agentUser, group := o.concurrency, o.maxQueued, o.agentUser, o.group
	cgroupParent, retries, drain, host := o.cgroupParent, o.retries, o.drain, o.host
	rescueAfter, metricsAddr, pricesFile := o.rescueAfter, o.metricsAddr, o.pricesFile
	uidRange, maxState, minFree := o.uidRange, o.maxState, o.minFree
	if fl.NArg() > 0 {
		return fail(stderr, 2, "unexpected argument %q", fl.Arg(0))
	}
	if *concurrency < 0 {
		return fail(stderr, 2, "--concurrency %d is negative", *concurrency)
	}
	if *retries < 0 {
		return fail(stderr, 2, "--retries %d is negative", *retries)
	}
	if *maxQueued < 1 {
		return fail(stderr, 2, "--max-queued %d: want at least 1", *maxQueued)
	}
	if *database != "" && !store.IsPostgres(*database) {
		return fail(stderr, 2, "--database: want a postgres:// or postgresql:// URL")
	}
	if *rescueAfter <= 0 {
		return fail(stderr, 2, "--rescue-after %v: want a positive duration", *rescueAfter)
	}
	if *drain < 0 {
		return fail(stderr, 2, "--drain-timeout %v is negative", *drain)
	}
	if *metricsAddr != "" {
		if _, _, err := net.SplitHostPort(*metricsAddr); err != nil {
			return fail(stderr, 2, "--metrics %q: want host:port, such as 127.0.0.1:9464: %v", *metricsAddr, err)
		}
	}
	var prices *modelgw.Prices
	if *pricesFile == "" {
		if _, err := os.Stat(modelgw.DefaultPricesFile); err == nil {
			*pricesFile = modelgw.DefaultPricesFile
		}
	}
	if *pricesFile != "" {
		p, err := modelgw.LoadPrices(*pricesFile)
		if err != nil {
			return fail(stderr, 2, "--prices: %v", err)
		}
		prices = p
	}
	if os.Geteuid() != 0 {
		return fail(stderr, 2, "the daemon must run as root")
	}
	explicit := false
	fl.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "agent-user" })
	log := slog.New(slog.NewTextHandler(stderr, nil))
	uid, gid, err := lookupAgent(*agentUser)
	if err != nil {
		if explicit {
			return fail(stderr, 2, "--agent-user: %v", err)
		}
		log.Warn("agent user missing: agents run as nobody (scripts/install creates it)", "user", *agentUser)
		uid, gid = nobody, nobody
	}
	uids, err := openUIDRange(*uidRange, "/etc/passwd")
	if err != nil {
		return fail(stderr, 2, "--uid-range: %v", err)
	}
	if *tasksDir == "" {
		*tasksDir = tasks.DefaultDir()
	}
	cfg := daemon.Config{
		Socket:       *socket,
		StateDir:     *state,
		Database:     *database,
		TasksDir:     *tasksDir,
		Concurrency:  *concurrency,
		Retries:      *retries,
		DrainTimeout: *drain,
		Metrics:      *metricsAddr,
		Host:         *host,
		RescueAfter:  *rescueAfter,
		MaxQueued:    *maxQueued,
		MaxStateSize: maxState.n,
		ReserveBytes: reserveOf(minFree.n),
		AgentUID:     uid,
		AgentGID:     gid,
		UIDs:         uids,
		Group:        *group,
		CgroupParent: *cgroupParent,
		Prices:       prices,
		Logger:       log,
		Ready:        func() { sdNotify(log, "READY=1") },
	}
	// STOPPING=1 goes out when the stop begins, and at the latest before
	// benchd exits: a stop that takes no time must not exit first.
	var stopping sync.Once
	notifyStopping := func() { stopping.Do(func() { sdNotify(log, "STOPPING=1") }) }
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			notifyStopping()
		case <-stopped:
		}
	}()
	err = daemon.Run(ctx, cfg)
	if ctx.Err() != nil {
		notifyStopping()
	}
	if err != nil {
		return fail(stderr, 1, "%v", err)
	}
	return 0
}

// lookupAgent resolves the agent's account; root is refused.
func lookupAgent(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return 0, 0, err
	}
	if gid, err = strconv.Atoi(u.Gid); err != nil {
		return 0, 0, err
	}
	if uid == 0 || gid == 0 {
		return 0, 0, errors.New("agents may not run as root")
	}
	return uid, gid, nil
}

// sdNotify sends state to systemd's notification socket, if there is
// one ($NOTIFY_SOCKET; a leading @ names an abstract socket).
func sdNotify(log *slog.Logger, state string) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return
	}
	if addr[0] == '@' {
		addr = "\x00" + addr[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		log.Warn("unable to notify systemd", "state", state, "err", err)
		return
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		log.Warn("unable to notify systemd", "state", state, "err", fmt.Errorf("write: %w", err))
	}
}

// openUIDRange parses --uid-range and makes its pool, after checking
// that no account of passwd has a uid in it (such an account would
// share its files and kernel allowances with agents). An empty range
// means no pool.
func openUIDRange(s, passwd string) (*sandbox.UIDPool, error) {
	if s == "" {
		return nil, nil
	}
	r, err := sandbox.ParseUIDRange(s)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(passwd)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	used, err := r.Accounts(f)
	if err != nil {
		return nil, fmt.Errorf("unable to read %s: %w", passwd, err)
	}
	if len(used) > 0 {
		return nil, fmt.Errorf("%s: uids in use in %s: %s", r, passwd, strings.Join(used, ", "))
	}
	return sandbox.NewUIDPool(r), nil
}

// reserveOf is the daemon's ReserveBytes for --min-free n: 0 there
// means the default, so no reserve at all is one byte.
func reserveOf(n int64) int64 {
	if n == 0 {
		return 1
	}
	return n
}

// serveOpts are the daemon's flags.
type serveOpts struct {
	socket       *string
	state        *string
	database     *string
	tasksDir     *string
	concurrency  *int
	maxQueued    *int
	agentUser    *string
	group        *string
	cgroupParent *string
	retries      *int
	drain        *time.Duration
	host         *string
	rescueAfter  *time.Duration
	metricsAddr  *string
	pricesFile   *string
	uidRange     *string
	maxState     *sizeFlag
	minFree      *sizeFlag
}

// serveFlags defines the daemon's flags: one set, from which its help is
// made too.
func serveFlags() (*flag.FlagSet, *serveOpts) {
	fl := flag.NewFlagSet("benchd", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	o := &serveOpts{}
	o.socket = fl.String("socket", apitype.DefaultSocket, "unix socket `PATH` to listen on")
	o.state = fl.String("state", daemon.DefaultStateDir, "state directory `DIR` (database, blobs, attempts)")
	o.database = fl.String("database", "", "PostgreSQL database `URL` (postgres://...) for the store (default: SQLite in the state directory)")
	o.tasksDir = fl.String("tasks", "", "task store `DIR` (default: $BENCHD_TASKS or the installed tasks)")
	o.concurrency = fl.Int("concurrency", 0, "`N` attempts run at once (default: the number of cores)")
	o.maxQueued = fl.Int("max-queued", daemon.DefaultMaxQueued, "`N` attempts that may wait in the queue; a run beyond it is refused as busy")
	o.agentUser = fl.String("agent-user", DefaultAgentUser, "unprivileged user `NAME` agents run as when --uid-range is empty")
	o.uidRange = fl.String("uid-range", sandbox.DefaultUIDRange, "uids `FIRST-LAST` reserved for benchd: each running attempt and each grading runs as one of its own (empty: every agent runs as --agent-user)")
	o.group = fl.String("group", daemon.DefaultGroup, "group `NAME` whose members may use benchd")
	o.cgroupParent = fl.String("cgroup-parent", "", "delegated cgroup v2 group `PATH` for attempt groups (default: benchd's own)")
	o.retries = fl.Int("retries", 1, "`N` times an infra-error attempt is retried automatically (0: never)")
	o.drain = fl.Duration("drain-timeout", 0, "at SIGTERM, how long (`D`) running attempts may go on to their verdicts before they are canceled (0: cancel at once)")
	o.host = fl.String("host", "", "this host's `NAME` in the attempts it runs, its fleet queue and its metrics (default: the host name)")
	o.rescueAfter = fl.Duration("rescue-after", daemon.DefaultRescueAfter, "on a fleet (--database postgres://), how long (`D`) an attempt's job may run before another host checks whether its host is still alive")
	o.metricsAddr = fl.String("metrics", "", "serve GET /metrics (Prometheus text format) on this TCP `ADDR`, a host:port such as 127.0.0.1:9464 (default: off)")
	o.pricesFile = fl.String("prices", "", "price table `FILE` (TOML: USD per million tokens per model) that turns the model calls' tokens into cost (default: "+modelgw.DefaultPricesFile+" if present)")
	o.maxState = &sizeFlag{off: 0}
	fl.Var(o.maxState, "max-state-size", "budget `SIZE` of the state directory (such as 200G): over it, the oldest ended attempts are pruned, never one in review (default: off)")
	o.minFree = &sizeFlag{n: runs.DefaultReserveBytes, off: -1}
	fl.Var(o.minFree, "min-free", "free space `SIZE` the state's disk must keep beyond an attempt's whole disk for the attempt to start (off: no check)")
	return fl, o
}

var serveExamples = []string{
	"benchd                                  # as the service runs it: /run/benchd/benchd.sock, /var/lib/benchd",
	"benchd --socket /tmp/b/benchd.sock --state /tmp/b/state --tasks ./tasks",
	"benchd --database postgres://benchd@db/benchd --host worker-1   # one host of a fleet",
}
