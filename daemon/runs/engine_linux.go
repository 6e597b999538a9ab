package runs

import (
	"benchd.dev/internal/undo"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/confine"
	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/graders"
	"benchd.dev/limits"
	"benchd.dev/netns"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
	"golang.org/x/sys/unix"
)

// DefaultAgentID is the uid and gid agents and graders run as when
// Config leaves them zero (nobody, nogroup).
const DefaultAgentID = 65534

// progressInterval is how often Run reports progress while the agent runs.
const progressInterval = 250 * time.Millisecond

// gatewayProbeTimeout bounds the dial of each gateway's endpoint before
// an attempt starts.
const gatewayProbeTimeout = 5 * time.Second

// agentHostname is the sandbox's host name for agents.
const agentHostname = "sandbox"

// AgentCPUWeight is each agent's share of contended CPU in its own
// cgroup: a default group's, twice a grader command's
// (DefaultGraderCPUWeight), so that one attempt's busy loops take no more
// than their share from a neighbour.
const AgentCPUWeight = 100

// cpuQuota is the CPU quota of a task's [environment] cpus, per
// limits.DefaultCPUPeriod; 0 (no cpus) is none.
func cpuQuota(task *tasks.Task) time.Duration {
	return time.Duration(task.CPUs * float64(limits.DefaultCPUPeriod))
}

// Config configures an Engine.
type Config struct {
	// StateDir is benchd's state directory; attempts work in
	// StateDir/attempts/ID. It is masked in every sandbox.
	StateDir string
	// TasksDir is the task store; it is masked in every sandbox.
	TasksDir string
	// UIDs, when set, gives each attempt's agent a uid of its own, and
	// each grading another, for as long as they run (gid the same
	// number), so that the kernel's per-user allowances are per attempt
	// ("Uids" in docs/security.md). Without it, AgentUID and AgentGID
	// run every agent and grader; default DefaultAgentID.
	UIDs               *sandbox.UIDPool
	AgentUID, AgentGID int
	// CgroupParent is where attempt cgroups are made (see
	// limits.Config.Parent); empty means benchd's own cgroup.
	CgroupParent string
	// NetnsRunDir holds the bind mounts of network namespaces; default
	// StateDir/netns, so that Cleanup(ctx, StateDir) finds them.
	NetnsRunDir string
	// ScratchDir is where grader scratch roots are made; it must lie
	// outside StateDir and TasksDir, which graders' sandboxes mask, and
	// never be a shared directory such as /tmp: New makes it mode 0711,
	// root's, and refuses one that is writable by others or sticky.
	// Default DefaultScratchDir(StateDir), where Cleanup looks for
	// leftovers.
	ScratchDir string
	// WorkspaceFiles and WorkspaceRecords cap the entries of an
	// attempt's workspace view and the records of its journal, and
	// WorkspaceStorage is the workspace's storage size, of which the
	// view stores at most fsmon.BlobFactor times as blobs; 0 means
	// fsmon's defaults (fsmon.Config, "Caps" in its package doc).
	// The task's [environment] storage_mb, when set, is the storage
	// size of its attempts instead of WorkspaceStorage; either is also
	// the size of the attempt's disk.
	WorkspaceFiles, WorkspaceRecords, WorkspaceStorage int64
	// WorkspaceOpenFiles bounds the descriptors an attempt's view may
	// hold, WorkspaceJournalBytes its journal's size; 0 means fsmon's
	// defaults (fsmon.Config). When WorkspaceOpenFiles is 0 and
	// ViewsAtOnce is set, each view's bound is its share of benchd's
	// descriptor limit split across ViewsAtOnce views
	// (fsmon.MaxOpenFilesFor), read when the view mounts, so that a
	// limit changed while benchd runs (prlimit) is the one shared.
	WorkspaceOpenFiles    int
	WorkspaceJournalBytes int64
	ViewsAtOnce           int
	// ReserveBytes is the free space the state directory's file system
	// must keep beyond an attempt's whole disk for the attempt to start
	// (else it ends as an infra error, ErrDiskFull, before its agent
	// starts); 0 means DefaultReserveBytes, a negative value no check.
	ReserveBytes int64
	Logger       *slog.Logger

	// noDisk keeps the backing directory in the state directory, without
	// a disk of its own: for measuring what the disk costs.
	noDisk bool
	// statfs reads the state directory's file system (unix.Statfs
	// when nil): tests give a full one.
	statfs func(path string, st *unix.Statfs_t) error
}

// Engine runs attempts. Its methods may be called concurrently.
type Engine struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and makes the state directory's attempts/ and netns/.
func New(cfg Config) (*Engine, error) {
	if cfg.StateDir == "" || cfg.TasksDir == "" {
		return nil, fmt.Errorf("%w: state and tasks directories are required", ErrInvalid)
	}
	var err error
	if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return nil, err
	}
	if cfg.TasksDir, err = filepath.Abs(cfg.TasksDir); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(cfg.TasksDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: tasks directory %s is not a directory", ErrInvalid, cfg.TasksDir)
	}
	if cfg.AgentUID == 0 {
		cfg.AgentUID = DefaultAgentID
	}
	if cfg.AgentGID == 0 {
		cfg.AgentGID = DefaultAgentID
	}
	if cfg.AgentUID < 0 || cfg.AgentGID < 0 {
		return nil, fmt.Errorf("%w: agent uid %d gid %d", ErrInvalid, cfg.AgentUID, cfg.AgentGID)
	}
	if cfg.NetnsRunDir == "" {
		cfg.NetnsRunDir = filepath.Join(cfg.StateDir, "netns")
	}
	if cfg.ScratchDir == "" {
		cfg.ScratchDir = DefaultScratchDir(cfg.StateDir)
	}
	if cfg.ScratchDir, err = filepath.Abs(cfg.ScratchDir); err != nil {
		return nil, err
	}
	for _, d := range []string{cfg.StateDir, cfg.TasksDir} {
		if cfg.ScratchDir == d || strings.HasPrefix(cfg.ScratchDir, d+"/") {
			return nil, fmt.Errorf("%w: scratch directory %s lies in %s, which graders' sandboxes mask", ErrInvalid, cfg.ScratchDir, d)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{AttemptsDir(cfg.StateDir), cfg.NetnsRunDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("unable to make %s: %w", d, err)
		}
	}
	if err := makeScratchDir(cfg.ScratchDir); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, log: cfg.Logger.With("component", "runs")}, nil
}

// PhaseTime is the time one phase of an attempt took.
type PhaseTime struct {
	Phase    string
	Duration time.Duration
}

// Outcome is a finished attempt.
type Outcome struct {
	// Attempt has the verdict, the metrics, the agent's identity, the
	// changeset, the network report, edits and denied counts, the
	// journal head and the start and end times; ID, Run, Task, State
	// and Created are the caller's.
	Attempt apitype.Attempt
	// JournalPath is the sealed journal (its blobs in
	// journal.BlobsDir(JournalPath)); StdoutPath and StderrPath the
	// transcript (absent for built-ins); FinalDir the backing directory,
	// the mountpoint of the attempt's disk, which holds the final tree
	// (plan.md included) while Run grades it; once Run returns the disk
	// is unmounted and the tree is in attempts/ID/disk.img.
	JournalPath, StdoutPath, StderrPath, FinalDir string
	// Caps names the view's caps the attempt hit (the journal's cap
	// records), for the grade.
	Caps []string
	// Phases is the time each phase took, in order; grading included.
	Phases []PhaseTime
	// ModelDir is the work directory whose model calls' log and
	// messages the HTTP gateways wrote (modelgw.ReadLog); "" when the
	// attempt had no HTTP gateway or did not get as far as confining
	// the agent.
	ModelDir string
}

// cutShort is what Run knows of an attempt that does not reach its end:
// the files it made so far (Run returns them with its error) and why it
// stopped (the view's interrupted record says so).
type cutShort struct {
	partial Outcome
	cause   string
}

var attemptIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$`)

// AttemptDir is the work directory of an attempt.
func (e *Engine) AttemptDir(id string) string {
	return AttemptDirOf(e.cfg.StateDir, id).Path()
}

// attempt is one attempt as Run takes it, step by step: what the steps
// share, and the undo stack each set-up step registers its undo on.
type attempt struct {
	e        *Engine
	id       string
	plan     *Plan
	task     *tasks.Task
	log      *slog.Logger
	progress func(apitype.Event)
	start    time.Time
	undos    *undo.Stack
	cut      *cutShort

	// From the plan, checked before the attempt was queued.
	ag      agent
	env     []string
	gws     []gatewaySpec
	timeout time.Duration

	// Made by the steps.
	uid, gid int             // the agent's credentials (acquireUID)
	dir      string          // the attempt's work directory
	out      Outcome         // what Run returns
	a        apitype.Attempt // the record being filled in
	w        *journal.Writer
	closeW   func() error // seals the journal, once
	mnt      string
	view     *fsmon.View
	job      *confine.Job
	model    *modelGateways // the HTTP gateways, nil without
	res      confine.Result
	cs       journal.Changeset
	netMode  netns.Mode

	phase      string
	phaseStart time.Time
	phases     []PhaseTime
}

func (at *attempt) enter(phase string) {
	now := time.Now()
	if at.phase != "" {
		at.phases = append(at.phases, PhaseTime{at.phase, now.Sub(at.phaseStart)})
	}
	at.phase, at.phaseStart = phase, now
	if phase != "" {
		at.progress(apitype.Event{Attempt: at.id, State: apitype.StateRunning, Phase: phase, ElapsedMS: now.Sub(at.start).Milliseconds()})
	}
}

// step is one step of an attempt.
type step struct {
	name string
	run  func(context.Context) error
}

// steps are the attempt's steps, in order (docs/design.md): each set-up
// step pushes its undo on at.undos, which Run unwinds whatever happens.
func (at *attempt) steps() []step {
	return []step{
		{"probe", at.probe},
		{"prepare", at.prepare},
		{"mount", at.mount},
		{"confine", at.confine},
		{"run", at.run},
		{"collect", at.collect},
		{"seal", at.seal},
		{"upstream", at.upstream},
		{"grade", at.grade},
		{"verdict", at.verdict},
	}
}

// Run plans spec (Plan) and runs the plan as attempt spec.AttemptID
// (RunPlan).
func (e *Engine) Run(ctx context.Context, spec Spec, progress func(apitype.Event)) (Outcome, error) {
	plan, err := e.Plan(spec)
	if err != nil {
		return Outcome{}, err
	}
	return e.RunPlan(ctx, spec.AttemptID, plan, progress)
}

// RunPlan runs plan as attempt id, in its steps (attempt.steps;
// docs/design.md, "One attempt, step by step"), one method each, each
// set-up step registering its undo on the one undo stack; whatever
// happens, nothing stays mounted and no cgroup or namespace is left when
// it returns. It checks nothing of the plan again. progress (may be nil)
// gets an event at each phase and every 250 ms while the agent runs. An
// error is an infra error (or the cancellation of ctx): the attempt must
// not be scored. With an error, the Outcome still names the journal
// (sealed, with an interrupted record naming the cause, when the view was
// mounted) and the transcript files made so far, for the record.
func (e *Engine) RunPlan(ctx context.Context, id string, plan *Plan, progress func(apitype.Event)) (res Outcome, retErr error) {
	var undos undo.Stack
	var cut cutShort
	defer func() {
		if retErr != nil {
			cut.cause = interruptCause(ctx, retErr)
		}
		if err := undos.Run(); err != nil {
			e.log.Error("undoing an attempt", "attempt", id, "err", err)
			if retErr == nil {
				retErr = fmt.Errorf("unable to tear the attempt down: %w", err)
			}
		}
		if retErr != nil {
			res = cut.partial
		}
	}()
	at, err := e.newAttempt(id, plan, progress, &undos, &cut)
	if err != nil {
		return Outcome{}, err
	}
	for _, st := range at.steps() {
		if err := st.run(ctx); err != nil {
			return Outcome{}, err
		}
	}
	return at.out, nil
}

// interruptCause says why an attempt stopped before its end, for the
// journal's interrupted record: the cause its context was canceled with
// (a cancel, benchd stopping), else the error.
func interruptCause(ctx context.Context, err error) string {
	if cause := context.Cause(ctx); cause != nil {
		return cause.Error()
	}
	return err.Error()
}

// newAttempt makes attempt id of plan its work directory's name, before
// any step. The id, benchd's own, is checked as the path it becomes.
func (e *Engine) newAttempt(id string, plan *Plan, progress func(apitype.Event), undos *undo.Stack, cut *cutShort) (*attempt, error) {
	if progress == nil {
		progress = func(apitype.Event) {}
	}
	if !attemptIDRE.MatchString(id) {
		return nil, fmt.Errorf("%w: attempt id %q", ErrInvalid, id)
	}
	task := plan.Task
	at := &attempt{e: e, id: id, plan: plan, task: task, progress: progress, start: time.Now(), undos: undos, cut: cut,
		log: e.log.With("attempt", id, "task", task.ID),
		ag:  plan.ag, env: plan.agentEnv, gws: plan.gws, timeout: plan.Timeout, netMode: netns.Closed}
	if task.AllowInternet {
		at.netMode = netns.Open
	}
	at.dir = e.AttemptDir(id)
	if _, err := os.Lstat(at.dir); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrConflict, at.dir)
	}
	started := time.Now().UTC()
	at.a = apitype.Attempt{Agent: plan.Identity, Started: &started, Reasons: []apitype.Reason{}, Changeset: []apitype.Change{}}
	at.out.JournalPath = AttemptDir(at.dir).Journal()
	at.out.FinalDir = AttemptDir(at.dir).Backing()
	return at, nil
}

// probe: a gateway whose endpoint does not answer is benchd's failure
// (an infra error naming it), found before anything of the attempt is
// made.
func (at *attempt) probe(ctx context.Context) error {
	return probeGateways(ctx, at.gws)
}

// prepare: the attempt's work directory, in it the attempt's disk
// mounted on the backing dir, and in that the bundle's workspace and the
// plan. The disk stays mounted to the end of Run (grading reads the
// final tree from it): its undo is the stack's last.
func (at *attempt) prepare(ctx context.Context) error {
	at.enter(apitype.PhasePrepare)
	if err := at.e.checkFreeSpace(at.e.storageBytes(at.task)); err != nil {
		return err
	}
	var err error
	if at.uid, at.gid, err = at.e.acquireUID(at.undos); err != nil {
		return err
	}
	if err := os.Mkdir(at.dir, 0o700); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrConflict, at.dir)
	} else if err != nil {
		return fmt.Errorf("unable to make the attempt dir: %w", err)
	}
	if !at.e.cfg.noDisk {
		img := AttemptDir(at.dir).DiskImage()
		if err := makeDisk(ctx, img, at.e.storageBytes(at.task)); err != nil {
			return err
		}
		if err := os.Mkdir(at.out.FinalDir, 0o755); err != nil {
			return fmt.Errorf("unable to make the backing dir: %w", err)
		}
		if err := mountDisk(img, at.out.FinalDir, false); err != nil {
			return err
		}
		at.undos.Push("unmount attempt disk", func() error { return unmountDisk(at.out.FinalDir) })
		// mkfs's lost+found is no part of the workspace.
		if err := os.Remove(filepath.Join(at.out.FinalDir, "lost+found")); err != nil {
			return fmt.Errorf("unable to prepare the attempt disk: %w", err)
		}
	}
	return prepareBacking(at.task, at.out.FinalDir, at.ag.builtin, at.uid, at.gid)
}

// acquireUID takes the uid and gid an agent or grading runs as, from
// the pool when there is one; the release goes on undos, so the uid is
// free again only after everything pushed later (the job, whose end
// kills every process of the uid) is undone.
func (e *Engine) acquireUID(undos *undo.Stack) (uid, gid int, err error) {
	if e.cfg.UIDs == nil {
		return e.cfg.AgentUID, e.cfg.AgentGID, nil
	}
	uid, release, err := e.cfg.UIDs.Acquire()
	if err != nil {
		return 0, 0, err
	}
	undos.Push("release uid", func() error { release(); return nil })
	return uid, uid, nil
}

// mount: the journaled view of the backing dir. Its undo seals a
// journal the attempt did not reach the end of with an interrupted
// record naming the cause.
func (at *attempt) mount(ctx context.Context) error {
	at.enter(apitype.PhaseMount)
	w, err := journal.Create(at.out.JournalPath)
	if err != nil {
		return fmt.Errorf("unable to create the journal: %w", err)
	}
	at.w = w
	var closeJournal sync.Once
	at.closeW = func() (err error) {
		closeJournal.Do(func() { err = w.Close() })
		return err
	}
	at.undos.Push("close journal", at.closeW)
	at.mnt = AttemptDir(at.dir).Mount()
	if err := os.Mkdir(at.mnt, 0o755); err != nil {
		return fmt.Errorf("unable to make the mountpoint: %w", err)
	}
	view, err := fsmon.Mount(ctx, fsmon.Config{Backing: at.out.FinalDir, Mountpoint: at.mnt, Journal: w, Policy: at.task.Policy, Logger: at.log,
		MaxFiles: at.e.cfg.WorkspaceFiles, MaxRecords: at.e.cfg.WorkspaceRecords, StorageBytes: at.e.storageBytes(at.task),
		MaxOpenFiles: at.e.openFiles(), MaxJournalBytes: at.e.cfg.WorkspaceJournalBytes})
	if err != nil {
		// Nothing ran in it: a journal of the initial tree alone, never
		// sealed, would only mislead start-up recovery.
		os.Remove(at.out.JournalPath)
		os.RemoveAll(journal.BlobsDir(at.out.JournalPath))
		return fmt.Errorf("unable to mount the workspace view: %w", err)
	}
	at.view = view
	at.cut.partial.JournalPath = at.out.JournalPath
	// Reached with the view still mounted only when the attempt is cut
	// short: the journal then says why (after a normal unmount this does
	// nothing).
	at.undos.Push("unmount view", func() error {
		cause := at.cut.cause
		if cause == "" {
			cause = "the attempt ended early"
		}
		return view.UnmountInterrupted(context.Background(), cause)
	})
	return nil
}

// confine: the agent's sandbox, cgroup and network namespace, with the
// agent started in them (none for a built-in agent). confine.Job's Wait,
// in run, takes it all down.
func (at *attempt) confine(ctx context.Context) error {
	if at.ag.builtin {
		return nil
	}
	at.enter(apitype.PhaseConfine)
	e := at.e
	at.out.StdoutPath, at.out.StderrPath = AttemptDir(at.dir).Stdout(), AttemptDir(at.dir).Stderr()
	at.cut.partial.StdoutPath, at.cut.partial.StderrPath = at.out.StdoutPath, at.out.StderrPath
	argv := make([]string, len(at.ag.argv))
	for i, s := range at.ag.argv {
		argv[i] = planRE.ReplaceAllLiteralString(s, PlanPath)
	}
	// The HTTP gateways' handlers record into the work directory; the
	// namespace's close (the job's end) ends their connections, and this
	// undo the calls still waiting on the upstream.
	model, gws, err := at.startModelGateways()
	if err != nil {
		return err
	}
	if model != nil {
		at.model = model
		at.out.ModelDir, at.cut.partial.ModelDir = at.dir, at.dir
		at.undos.Push("close model gateways", model.close)
	}
	job, err := confine.Start(ctx, confine.Spec{
		Args:      argv,
		Env:       at.env,
		Dir:       "/workspace",
		Workspace: at.mnt,
		// The backing dir lies in the state dir and is masked with it.
		Mask:         []string{e.cfg.StateDir, e.cfg.TasksDir},
		UID:          at.uid,
		GID:          at.gid,
		Hostname:     agentHostname,
		Timeout:      at.timeout,
		MemoryMax:    int64(at.task.MemoryMB) << 20,
		CPUWeight:    AgentCPUWeight,
		CPUQuota:     cpuQuota(at.task),
		Network:      at.netMode,
		Gateways:     gws,
		Binds:        append(TaskBinds(at.task), at.ag.binds...),
		Files:        at.ag.files,
		StdoutPath:   at.out.StdoutPath,
		StderrPath:   at.out.StderrPath,
		Name:         at.id,
		CgroupParent: e.cfg.CgroupParent,
		NetnsRunDir:  e.cfg.NetnsRunDir,
		Logger:       at.log,
	})
	if err != nil {
		return fmt.Errorf("unable to start the agent: %w", err)
	}
	at.job = job
	return nil
}

// run: the agent, to its end (or its time limit); a built-in agent's
// changes are applied through the view.
func (at *attempt) run(ctx context.Context) error {
	at.enter(apitype.PhaseRun)
	if at.ag.builtin {
		t0 := time.Now()
		if err := applyOverlay(at.mnt, at.ag.overlay, at.ag.deletes); err != nil {
			return err
		}
		at.res.Wall = time.Since(t0)
		at.res.Network = netns.Report{Mode: at.netMode}
		return nil
	}
	stop := at.watch(at.job, at.view)
	res, err := at.job.Wait(ctx)
	stop()
	if err != nil {
		return fmt.Errorf("agent run: %w", err)
	}
	at.res = res
	return nil
}

// collect: the view unmounted (a timed-out agent's journal says so), the
// changeset, and the agent's facts in the record.
func (at *attempt) collect(ctx context.Context) error {
	at.enter(apitype.PhaseCollect)
	view, res := at.view, at.res
	// ENOSPC from the disk under passthrough writes never reaches the
	// view: a disk full at the agent's end is journaled as a cap.
	if !at.e.cfg.noDisk {
		if full, err := diskFull(at.out.FinalDir); err != nil {
			return err
		} else if full {
			view.NoteCap(journal.CapStorage, syscall.ENOSPC)
		}
	}
	unmount := view.Unmount
	if res.TimedOut {
		unmount = func(ctx context.Context) error {
			return view.UnmountInterrupted(ctx, fmt.Sprintf("the agent's time limit of %v passed", at.timeout))
		}
	}
	if err := unmount(ctx); err != nil {
		return fmt.Errorf("unable to unmount the workspace view: %w", err)
	}
	cs, err := view.Changeset()
	if err != nil {
		return err
	}
	if cs == nil {
		cs = journal.Changeset{}
	}
	at.cs = cs
	st := view.Stats()
	a := &at.a
	a.ExitCode, a.Signal = res.ExitCode, int(res.Signal)
	a.TimedOut, a.OOM = res.TimedOut, res.OOM
	a.WallMS = res.Wall.Milliseconds()
	a.PeakMemoryBytes, a.MaxRSSBytes = res.PeakMemory, res.MaxRSS
	a.Edits, a.Denied = st.Edits, st.Denied
	a.ViewCPUMS = st.CPU.Milliseconds()
	at.out.Caps = st.Caps
	a.Changeset = append([]apitype.Change{}, cs...)
	a.Network = wireNetwork(res.Network)
	// The namespace is closed: no call starts any more. The log is
	// complete once the gateways are.
	if err := at.model.close(); err != nil {
		return fmt.Errorf("unable to record the model calls: %w", err)
	}
	at.model.wire(&a.Network)
	for _, b := range res.Binds {
		a.Binds = append(a.Binds, b.Source)
	}
	return nil
}

// seal: the journal closed, its head in the record.
func (at *attempt) seal(ctx context.Context) error {
	at.a.JournalHead = at.w.Last().Hash
	if err := at.closeW(); err != nil {
		return fmt.Errorf("unable to seal the journal: %w", err)
	}
	return nil
}

// upstream: a gateway that failed to reach its upstream during the run
// makes the attempt an infra error, not graded (the agent may have failed
// for want of its model). The record so far (journal, network report)
// goes back with the error.
func (at *attempt) upstream(ctx context.Context) error {
	err := upstreamFailed(at.a.Network)
	if err != nil {
		at.enter("")
		at.cut.partial = at.out
		at.cut.partial.Attempt = at.a
		at.cut.partial.Phases = at.phases
	}
	return err
}

// grade: the final tree graded (Engine.grade), the verdict in the record.
func (at *attempt) grade(ctx context.Context) error {
	at.enter(apitype.PhaseGrade)
	var cpu time.Duration
	v, err := at.e.grade(ctx, at.task, at.a, at.out.Caps, at.out.FinalDir, filepath.Dir(at.out.FinalDir), at.out.StdoutPath, at.cs, at.undos, at.uid, at.gid, &cpu)
	at.a.GradeCPUMS = cpu.Milliseconds()
	if err != nil {
		return err
	}
	a := &at.a
	a.Pass, a.Reward, a.Outcome, a.Reasons, a.GradeSeed = v.Pass, v.Reward, v.Outcome, v.Reasons, v.Seed
	return nil
}

// verdict: the attempt ends; Run returns the record (storing and
// signing it is the daemon's).
func (at *attempt) verdict(ctx context.Context) error {
	at.enter("")
	finished := time.Now().UTC()
	at.a.Finished = &finished
	at.out.Attempt = at.a
	at.out.Phases = at.phases
	return nil
}

var planRE = regexp.MustCompile(`\{plan\}`)

// TaskBinds are the task's [environment] binds, read-only at their host
// paths.
func TaskBinds(task *tasks.Task) []sandbox.Bind {
	var bs []sandbox.Bind
	for _, p := range task.Binds {
		bs = append(bs, sandbox.Bind{Source: p, Target: p})
	}
	return bs
}

// watch reports progress every progressInterval until the returned stop
// is called.
func (at *attempt) watch(job *confine.Job, view *fsmon.View) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				ev := apitype.Event{Attempt: at.id, State: apitype.StateRunning, Phase: apitype.PhaseRun, ElapsedMS: now.Sub(at.start).Milliseconds()}
				if u, err := job.Usage(); err == nil {
					ev.MemoryBytes = u.CurrentBytes
				}
				st := view.Stats()
				ev.Edits, ev.Denied = st.Edits, st.Denied
				at.progress(ev)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// grade grades a copy of the final tree (plan.md left out) with the
// confined grader runner, and composes the verdict; caps are the view's
// caps the attempt hit. cpu, when not nil, gets the CPU time of the
// grader's commands (their cgroups' usage), error or not.
func (e *Engine) grade(ctx context.Context, task *tasks.Task, a apitype.Attempt, caps []string, finalDir, workParent, stdoutPath string, cs journal.Changeset, undos *undo.Stack, worldUID, worldGID int, cpu *time.Duration) (apitype.Verdict, error) {
	work, err := os.MkdirTemp(workParent, gradePrefix)
	if err != nil {
		return apitype.Verdict{}, fmt.Errorf("unable to make the grading dir: %w", err)
	}
	undos.Push("remove grading copy", func() error { return os.RemoveAll(work) })
	ws := filepath.Join(work, "workspace")
	// No link followed; what the agent left that may not be copied
	// (links, FIFOs, a tree too deep) fails the verdict.
	treeReasons, err := graders.CopyWorkspace(finalDir, ws, task.Policy)
	if err != nil {
		return apitype.Verdict{}, fmt.Errorf("unable to copy the final tree: %w", err)
	}
	if err := os.Remove(filepath.Join(ws, planFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return apitype.Verdict{}, err
	}
	// Scratch outside the state dir, which the grader's sandbox masks.
	scratch, err := os.MkdirTemp(e.cfg.ScratchDir, scratchPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return apitype.Verdict{}, fmt.Errorf("unable to make the grader's scratch root: %w", err)
	}
	undos.Push("remove grader scratch", func() error { return os.RemoveAll(scratch) })
	// Passable, not listable: each grader's scratch below it is 0700,
	// its commands' uid's.
	if err := os.Chmod(scratch, 0o711); err != nil {
		return apitype.Verdict{}, err
	}
	// The grader's own commands run as a uid of the grading's, apart
	// from the agent's; the agent's code, in its world, as the uid it ran
	// as (the attempt still holds it, and none of its processes lives).
	uid, gid, err := e.acquireUID(undos)
	if err != nil {
		return apitype.Verdict{}, err
	}
	runner := ConfinedGraderRunner(GraderRunnerConfig{
		UID: uid, GID: gid, WorldUID: worldUID, WorldGID: worldGID,
		ScratchRoot:  scratch,
		MemoryMax:    int64(task.MemoryMB) << 20,
		Mask:         []string{e.cfg.StateDir, e.cfg.TasksDir},
		Binds:        TaskBinds(task),
		CgroupParent: e.cfg.CgroupParent,
		NetnsRunDir:  e.cfg.NetnsRunDir,
		Logger:       e.log,
	})
	in := RecordedFacts(a, stdoutPath)
	in.Task, in.Workspace, in.Changeset = task, ws, cs
	in.ScratchRoot, in.TreeReasons, in.Caps = scratch, treeReasons, caps
	gv, err := graders.Grade(ctx, in, runner)
	if cpu != nil {
		*cpu = GradingCPU(runner)
	}
	if err != nil {
		return apitype.Verdict{}, fmt.Errorf("grading: %w", err)
	}
	if !gv.Pass {
		e.log.Debug("graded a failure", "task", task.ID, "reasons", gv.Codes(), "detail", gv.Detail)
	}
	return gv.Verdict, nil // the wire verdict as Grade decided it; Detail stays here
}

// scratchPrefix, then benchd's pid and a dash, names the grader scratch
// roots, so that Cleanup can find those a crashed benchd left.
const scratchPrefix = "benchd-scratch-"

// DefaultScratchDir is the grader scratch directory of a state
// directory: its sibling STATE.scratch (/var/lib/benchd.scratch for
// /var/lib/benchd). It cannot lie inside the state directory, which the
// graders' sandboxes mask, and must not be the host's shared /tmp: the
// scratch holds copies of hidden tests while they run.
func DefaultScratchDir(stateDir string) string {
	return filepath.Clean(stateDir) + ".scratch"
}

// makeScratchDir makes dir (mode 0711, root's: the grader's uid may pass
// through to the 0700 scratch handed to it, and list nothing) and refuses
// a shared directory: one that is a symbolic link, not this process's,
// writable by others or sticky.
func makeScratchDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("unable to make the scratch directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("unable to make the scratch directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode()&(0o002|fs.ModeSticky) != 0 {
		return fmt.Errorf("%w: scratch directory %s is shared (mode %v, owner %d): graders need a private one", ErrInvalid, dir, fi.Mode(), st.Uid)
	}
	return os.Chmod(dir, 0o711)
}

// Regrade grades an attempt's stored final tree again, with the facts
// recorded in a (exit, timeout, changeset, network, denied count), the
// caps its journal says it hit (journal.CapsOf of the stored records)
// and the transcript in its work directory.
func (e *Engine) Regrade(ctx context.Context, task *tasks.Task, a apitype.Attempt, caps []string, finalDir string) (_ apitype.Verdict, retErr error) {
	if task == nil {
		return apitype.Verdict{}, fmt.Errorf("%w: no task", ErrInvalid)
	}
	var undos undo.Stack
	defer func() {
		if err := undos.Run(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	cs := RecordedFacts(a, "").Changeset
	stdout, workParent := "", e.cfg.StateDir
	if attemptIDRE.MatchString(a.ID) {
		if fi, err := os.Stat(e.AttemptDir(a.ID)); err == nil && fi.IsDir() {
			stdout, workParent = AttemptDir(e.AttemptDir(a.ID)).Stdout(), e.AttemptDir(a.ID)
		}
	}
	// The agent's uid went with its attempt: its code runs as another.
	return e.grade(ctx, task, a, caps, finalDir, workParent, stdout, cs, &undos, 0, 0, nil)
}

// prepareBacking copies the bundle's workspace to backing and the plan
// to backing/plan.md (mode 0644). For a command agent the whole tree,
// plan.md included, is handed to the agent's uid: the view has the
// kernel check mode bits (default_permissions), so a plan that was
// root's and read-only would have its edits refused by the kernel
// before the view saw them, unjournaled; as the agent's, every edit of
// it reaches the edit policy, which refuses it (plan.md is outside
// every task's allow globs) and journals it as denied.
func prepareBacking(task *tasks.Task, backing string, builtin bool, uid, gid int) error {
	if err := tasks.CopyTree(task.WorkspaceDir(), backing); err != nil {
		return fmt.Errorf("unable to copy the workspace: %w", err)
	}
	plan, err := os.ReadFile(task.InstructionPath())
	if err != nil {
		return fmt.Errorf("unable to read the plan: %w", err)
	}
	planPath := filepath.Join(backing, planFile)
	os.Remove(planPath)
	if err := os.WriteFile(planPath, plan, 0o644); err != nil {
		return fmt.Errorf("unable to write the plan: %w", err)
	}
	if builtin {
		return nil
	}
	if err := chownTree(backing, uid, gid); err != nil {
		return fmt.Errorf("unable to hand the workspace to uid %d: %w", uid, err)
	}
	return nil
}

// applyOverlay applies a built-in agent through the view at mnt, so the
// journal records it like any agent's work: each delete, then each
// directory and file of the overlay. A change the edit policy refuses is
// skipped, as an agent would go on (the refusal is journaled); any other
// error is an infra error.
func applyOverlay(mnt, overlay string, deletes []string) error {
	for _, d := range deletes {
		if err := tasks.ApplyOverlay(mnt, "", []string{d}); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
	}
	if overlay == "" {
		return nil
	}
	if _, err := os.Stat(overlay); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(overlay, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(overlay, p)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(mnt, rel)
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o755); errors.Is(err, fs.ErrPermission) {
				return filepath.SkipDir
			} else if err != nil {
				return fmt.Errorf("unable to apply the overlay: %w", err)
			}
			return nil
		}
		if err := tasks.CopyTree(p, target); err != nil && !errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("unable to apply the overlay: %w", err)
		}
		return nil
	})
}

// presetEnv adds a preset's variables to env, unless the caller passed
// the same name.
func presetEnv(env, preset []string) []string {
	have := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		have[name] = true
	}
	for _, kv := range preset {
		if name, _, _ := strings.Cut(kv, "="); !have[name] {
			env = append(env, kv)
		}
	}
	return env
}

// wireNetwork turns a namespace report into the wire form. DNS questions
// answered locally (localhost, the sandbox's own name, a gateway's host)
// are kept: networkUse leaves them out.
func wireNetwork(r netns.Report) apitype.Network {
	n := apitype.Network{Mode: string(r.Mode), Attempts: []apitype.NetAttempt{}, DNS: []apitype.DNSQuery{}, Gateways: []apitype.GatewayUse{},
		BytesIn: int64(r.BytesIn), BytesOut: int64(r.BytesOut)}
	if n.Mode == "" {
		n.Mode = string(netns.Closed)
	}
	for _, at := range r.Attempts {
		n.Attempts = append(n.Attempts, apitype.NetAttempt{Time: at.Time, Proto: at.Proto, Dst: net.JoinHostPort(at.Dst.String(), strconv.Itoa(int(at.Port))), Refused: at.Refused})
	}
	for _, q := range r.DNS {
		n.DNS = append(n.DNS, apitype.DNSQuery{Time: q.Time, Name: q.Name, Type: q.Type})
	}
	for _, g := range r.Gateways {
		n.Gateways = append(n.Gateways, apitype.GatewayUse{Name: g.Name, Endpoint: net.JoinHostPort(g.Host, strconv.Itoa(g.Port)), Kind: apitype.GatewayTCP,
			Conns: g.Conns, Refused: g.Refused, DialErrors: g.DialErrors, LastDialError: g.LastDialError,
			BytesIn: g.BytesIn, BytesOut: g.BytesOut})
	}
	return n
}

// upstreamFailed is an error wrapping netns.ErrUpstream if a gateway
// failed to dial its endpoint during the attempt. The gateway bounds what
// it accepts (netns.MaxGatewayConns, MaxGatewayDials), so that no number
// of connections the agent opens makes its dials fail.
func upstreamFailed(n apitype.Network) error {
	for _, g := range n.Gateways {
		if g.DialErrors > 0 {
			return fmt.Errorf("%w: gateway %s: %d failed dial(s) to %s during the attempt, the last: %s",
				netns.ErrUpstream, g.Name, g.DialErrors, g.Endpoint, g.LastDialError)
		}
	}
	return nil
}

// networkUse lists the agent's network use that is not a gateway's, for
// the graders' network rule: every outbound attempt ("tcp 1.2.3.4:443")
// and every DNS question for a name that is not localhost, the sandbox's
// host name or a gateway's host ("dns example.com").
func networkUse(n apitype.Network, hostname string) []string {
	local := map[string]bool{"localhost": true, hostname: true}
	for _, g := range n.Gateways {
		if h, _, err := net.SplitHostPort(g.Endpoint); err == nil {
			local[h] = true
		}
	}
	var out []string
	for _, at := range n.Attempts {
		out = append(out, at.Proto+" "+at.Dst)
	}
	for _, q := range n.DNS {
		if !local[q.Name] {
			out = append(out, "dns "+q.Name)
		}
	}
	return out
}

// finalMessage is the end of the agent's stdout: its last 20 lines, at
// most 4 KiB.
func finalMessage(stdoutPath string) string {
	if stdoutPath == "" {
		return ""
	}
	f, err := os.Open(stdoutPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	const maxBytes = 4 << 10
	off := max(fi.Size()-maxBytes, 0)
	b := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(b, off)
	b = b[:n]
	lines := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' && i != len(b)-1 {
			lines++
			if lines == 20 {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}
