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

	"benchd.dev/agents"
	"benchd.dev/client/apitype"
	"benchd.dev/confine"
	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/graders"
	"benchd.dev/netns"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

// DefaultAgentID is the uid and gid agents and graders run as when
// Config leaves them zero (nobody, nogroup).
const DefaultAgentID = 65534

// progressInterval is how often Run reports progress while the agent runs.
const progressInterval = 250 * time.Millisecond

// agentHostname is the sandbox's host name for agents.
const agentHostname = "sandbox"

// Config configures an Engine.
type Config struct {
	// StateDir is benchd's state directory; attempts work in
	// StateDir/attempts/ID. It is masked in every sandbox.
	StateDir string
	// TasksDir is the task store; it is masked in every sandbox.
	TasksDir string
	// AgentUID and AgentGID run agents and graders; default
	// DefaultAgentID.
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
	Logger     *slog.Logger
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
	for _, d := range []string{filepath.Join(cfg.StateDir, "attempts"), cfg.NetnsRunDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("unable to make %s: %w", d, err)
		}
	}
	if err := makeScratchDir(cfg.ScratchDir); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, log: cfg.Logger.With("component", "runs")}, nil
}

// Spec is one attempt to run.
type Spec struct {
	AttemptID string // [A-Za-z0-9][A-Za-z0-9_.-], at most 40 characters
	Task      *tasks.Task
	Agent     string        // a built-in or a command line
	Timeout   time.Duration // 0: the task's agent timeout
	Env       []apitype.EnvVar
	Gateways  []string // NAME=HOST:PORT
	Model     string
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
	// transcript (absent for built-ins); FinalDir the final tree (the
	// backing directory, plan.md included).
	JournalPath, StdoutPath, StderrPath, FinalDir string
	// Phases is the time each phase took, in order; grading included.
	Phases []PhaseTime
}

var attemptIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$`)
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// AttemptDir is the work directory of an attempt.
func (e *Engine) AttemptDir(id string) string {
	return filepath.Join(e.cfg.StateDir, "attempts", id)
}

// attemptRun is the state of one Run, for its steps.
type attemptRun struct {
	e        *Engine
	spec     Spec
	log      *slog.Logger
	progress func(apitype.Event)
	start    time.Time

	phase      string
	phaseStart time.Time
	phases     []PhaseTime
}

func (r *attemptRun) enter(phase string) {
	now := time.Now()
	if r.phase != "" {
		r.phases = append(r.phases, PhaseTime{r.phase, now.Sub(r.phaseStart)})
	}
	r.phase, r.phaseStart = phase, now
	if phase != "" {
		r.progress(apitype.Event{Attempt: r.spec.AttemptID, State: apitype.StateRunning, Phase: phase, ElapsedMS: now.Sub(r.start).Milliseconds()})
	}
}

// Run runs one attempt: prepare, mount, confine and run, collect, grade,
// verdict (DESIGN.md), each set-up step registering its undo; whatever
// happens, nothing stays mounted and no cgroup or namespace is left when
// Run returns. progress (may be nil) gets an event at each phase and
// every 250 ms while the agent runs. An error is an infra error (or the
// cancellation of ctx): the attempt must not be scored.
func (e *Engine) Run(ctx context.Context, spec Spec, progress func(apitype.Event)) (_ Outcome, retErr error) {
	var undos undo.Stack
	defer func() {
		if err := undos.Run(); err != nil {
			e.log.Error("undoing an attempt", "attempt", spec.AttemptID, "err", err)
			if retErr == nil {
				retErr = fmt.Errorf("unable to tear the attempt down: %w", err)
			}
		}
	}()
	out, cs, r, err := e.runAgent(ctx, spec, progress, &undos)
	if err != nil {
		return Outcome{}, err
	}

	// 6-7 grade and verdict.
	r.enter(apitype.PhaseGrade)
	a := out.Attempt
	v, err := e.grade(ctx, spec.Task, a, out.FinalDir, filepath.Dir(out.FinalDir), out.StdoutPath, cs, &undos)
	if err != nil {
		return Outcome{}, err
	}
	a.Pass, a.Reward, a.Reasons = v.Pass, v.Reward, v.Reasons
	r.enter("")
	finished := time.Now().UTC()
	a.Finished = &finished
	out.Attempt = a
	out.Phases = r.phases
	return out, nil
}

// runAgent takes the steps up to collect (the part of an attempt whose
// cost is benchd's own, besides grading). Its undo steps go on undo.
func (e *Engine) runAgent(ctx context.Context, spec Spec, progress func(apitype.Event), undos *undo.Stack) (out Outcome, _ journal.Changeset, _ *attemptRun, _ error) {
	if progress == nil {
		progress = func(apitype.Event) {}
	}
	if !attemptIDRE.MatchString(spec.AttemptID) {
		return Outcome{}, nil, nil, fmt.Errorf("%w: attempt id %q", ErrInvalid, spec.AttemptID)
	}
	if spec.Task == nil {
		return Outcome{}, nil, nil, fmt.Errorf("%w: no task", ErrInvalid)
	}
	task := spec.Task
	env, envNames, err := agentEnv(spec.Env)
	if err != nil {
		return Outcome{}, nil, nil, err
	}
	ag, err := resolveAgent(spec.Agent, task, env, &agents.Input{Model: spec.Model, Gateways: spec.Gateways, EnvNames: envNames, Home: sandbox.DefaultHome})
	if err != nil {
		return Outcome{}, nil, nil, err
	}
	if ag.id.Model == "" { // a preset names its model itself
		ag.id.Model = spec.Model
	}
	ag.id.Env = envNames
	env = presetEnv(env, ag.env)
	gws, err := parseGateways(spec.Gateways)
	if err != nil {
		return Outcome{}, nil, nil, err
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = task.AgentTimeout
	}
	if timeout <= 0 {
		timeout = apitype.DefaultTimeout
	}

	r := &attemptRun{e: e, spec: spec, progress: progress, start: time.Now(),
		log: e.log.With("attempt", spec.AttemptID, "task", task.ID)}

	dir := e.AttemptDir(spec.AttemptID)
	if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
		return Outcome{}, nil, nil, fmt.Errorf("%w: %s", ErrConflict, dir)
	} else if err != nil {
		return Outcome{}, nil, nil, fmt.Errorf("unable to make the attempt dir: %w", err)
	}
	started := time.Now().UTC()
	a := apitype.Attempt{Agent: ag.id, Started: &started, Reasons: []apitype.Reason{}, Changeset: []apitype.Change{}}
	out.JournalPath = filepath.Join(dir, "journal.jsonl")
	out.FinalDir = filepath.Join(dir, "backing")

	// 1 prepare: the backing dir is the bundle's workspace and the plan.
	r.enter(apitype.PhasePrepare)
	backing := out.FinalDir
	if err := prepareBacking(task, backing, ag.builtin, e.cfg.AgentUID, e.cfg.AgentGID); err != nil {
		return Outcome{}, nil, nil, err
	}

	// 2 mount: the journaled view.
	r.enter(apitype.PhaseMount)
	w, err := journal.Create(out.JournalPath)
	if err != nil {
		return Outcome{}, nil, nil, fmt.Errorf("unable to create the journal: %w", err)
	}
	var closeJournal sync.Once
	closeW := func() (err error) {
		closeJournal.Do(func() { err = w.Close() })
		return err
	}
	undos.Push("close journal", closeW)
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return Outcome{}, nil, nil, fmt.Errorf("unable to make the mountpoint: %w", err)
	}
	view, err := fsmon.Mount(ctx, fsmon.Config{Backing: backing, Mountpoint: mnt, Journal: w, Policy: task.Policy, Logger: r.log})
	if err != nil {
		return Outcome{}, nil, nil, fmt.Errorf("unable to mount the workspace view: %w", err)
	}
	undos.Push("unmount view", func() error { return view.Unmount(context.Background()) })

	// 3-4 confine and run.
	var res confine.Result
	netMode := netns.Closed
	if task.AllowInternet {
		netMode = netns.Open
	}
	if ag.builtin {
		r.enter(apitype.PhaseRun)
		t0 := time.Now()
		if err := applyOverlay(mnt, ag.overlay, ag.deletes); err != nil {
			return Outcome{}, nil, nil, err
		}
		res.Wall = time.Since(t0)
		res.Network = netns.Report{Mode: netMode}
	} else {
		r.enter(apitype.PhaseConfine)
		out.StdoutPath, out.StderrPath = filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
		argv := make([]string, len(ag.argv))
		for i, s := range ag.argv {
			argv[i] = planRE.ReplaceAllLiteralString(s, PlanPath)
		}
		job, err := confine.Start(ctx, confine.Spec{
			Args:      argv,
			Env:       env,
			Dir:       "/workspace",
			Workspace: mnt,
			// The backing dir lies in the state dir and is masked with it.
			Mask:         []string{e.cfg.StateDir, e.cfg.TasksDir},
			UID:          e.cfg.AgentUID,
			GID:          e.cfg.AgentGID,
			Hostname:     agentHostname,
			Timeout:      timeout,
			MemoryMax:    int64(task.MemoryMB) << 20,
			Network:      netMode,
			Gateways:     gws,
			Files:        ag.files,
			StdoutPath:   out.StdoutPath,
			StderrPath:   out.StderrPath,
			Name:         spec.AttemptID,
			CgroupParent: e.cfg.CgroupParent,
			NetnsRunDir:  e.cfg.NetnsRunDir,
			Logger:       r.log,
		})
		if err != nil {
			return Outcome{}, nil, nil, fmt.Errorf("unable to start the agent: %w", err)
		}
		r.enter(apitype.PhaseRun)
		stop := r.watch(job, view)
		res, err = job.Wait(ctx)
		stop()
		if err != nil {
			return Outcome{}, nil, nil, fmt.Errorf("agent run: %w", err)
		}
	}

	// 5 collect.
	r.enter(apitype.PhaseCollect)
	if err := view.Unmount(ctx); err != nil {
		return Outcome{}, nil, nil, fmt.Errorf("unable to unmount the workspace view: %w", err)
	}
	cs, err := view.Changeset()
	if err != nil {
		return Outcome{}, nil, nil, err
	}
	if cs == nil {
		cs = journal.Changeset{}
	}
	st := view.Stats()
	a.JournalHead = w.Last().Hash
	if err := closeW(); err != nil {
		return Outcome{}, nil, nil, fmt.Errorf("unable to seal the journal: %w", err)
	}
	a.ExitCode, a.Signal = res.ExitCode, int(res.Signal)
	a.TimedOut, a.OOM = res.TimedOut, res.OOM
	a.WallMS = res.Wall.Milliseconds()
	a.PeakMemoryBytes, a.MaxRSSBytes = res.PeakMemory, res.MaxRSS
	a.Denied = st.Denied
	a.Edits = max(st.Records-2-st.Denied, 0) // less the mount and unmount records
	a.Changeset = wireChangeset(cs)
	a.Network = wireNetwork(res.Network)
	out.Attempt = a
	return out, cs, r, nil
}

var planRE = regexp.MustCompile(`\{plan\}`)

// watch reports progress every progressInterval until the returned stop
// is called.
func (r *attemptRun) watch(job *confine.Job, view *fsmon.View) (stop func()) {
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
				ev := apitype.Event{Attempt: r.spec.AttemptID, State: apitype.StateRunning, Phase: apitype.PhaseRun, ElapsedMS: now.Sub(r.start).Milliseconds()}
				if u, err := job.Usage(); err == nil {
					ev.MemoryBytes = u.CurrentBytes
				}
				st := view.Stats()
				ev.Edits, ev.Denied = max(st.Records-1-st.Denied, 0), st.Denied
				r.progress(ev)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// grade grades a copy of the final tree (plan.md left out) with the
// confined grader runner, and composes the verdict.
func (e *Engine) grade(ctx context.Context, task *tasks.Task, a apitype.Attempt, finalDir, workParent, stdoutPath string, cs journal.Changeset, undos *undo.Stack) (apitype.Verdict, error) {
	work, err := os.MkdirTemp(workParent, "grade-")
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
	runner := ConfinedGraderRunner(GraderRunnerConfig{
		UID: e.cfg.AgentUID, GID: e.cfg.AgentGID,
		ScratchRoot:  scratch,
		MemoryMax:    int64(task.MemoryMB) << 20,
		Mask:         []string{e.cfg.StateDir, e.cfg.TasksDir},
		CgroupParent: e.cfg.CgroupParent,
		NetnsRunDir:  e.cfg.NetnsRunDir,
		Logger:       e.log,
	})
	exit := a.ExitCode
	in := graders.Input{
		Task:         task,
		Workspace:    ws,
		Changeset:    cs,
		AgentExit:    &exit,
		TimedOut:     a.TimedOut,
		Network:      networkUse(a.Network, agentHostname),
		FinalMessage: finalMessage(stdoutPath),
		ScratchRoot:  scratch,
		TreeReasons:  treeReasons,
	}
	gv, err := graders.Grade(ctx, in, runner)
	if err != nil {
		return apitype.Verdict{}, fmt.Errorf("grading: %w", err)
	}
	if !gv.Pass {
		e.log.Debug("graded a failure", "task", task.ID, "reasons", gv.Codes(), "detail", gv.Detail)
	}
	return composeVerdict(gv, a.Denied), nil
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
// recorded in a (exit, timeout, changeset, network, denied count) and
// the transcript in its work directory.
func (e *Engine) Regrade(ctx context.Context, task *tasks.Task, a apitype.Attempt, finalDir string) (_ apitype.Verdict, retErr error) {
	if task == nil {
		return apitype.Verdict{}, fmt.Errorf("%w: no task", ErrInvalid)
	}
	var undos undo.Stack
	defer func() {
		if err := undos.Run(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	cs := make(journal.Changeset, 0, len(a.Changeset))
	for _, c := range a.Changeset {
		cs = append(cs, journal.Change{Kind: c.Kind, Path: c.Path, From: c.From, Type: c.Type, SHA256: c.SHA256})
	}
	stdout, workParent := "", e.cfg.StateDir
	if attemptIDRE.MatchString(a.ID) {
		if fi, err := os.Stat(e.AttemptDir(a.ID)); err == nil && fi.IsDir() {
			stdout, workParent = filepath.Join(e.AttemptDir(a.ID), "stdout"), e.AttemptDir(a.ID)
		}
	}
	return e.grade(ctx, task, a, finalDir, workParent, stdout, cs, &undos)
}

// composeVerdict is the attempt's verdict: the graders' (which apply the
// shared rules: exit status, timeout, changed files, network, imports),
// plus the edit violation the journal alone knows: an operation the edit
// policy refused. Such an attempt fails with wrong_files even though the
// refused change never reached the tree.
func composeVerdict(gv graders.Verdict, denied int64) apitype.Verdict {
	v := apitype.Verdict{Pass: gv.Pass, Reward: gv.Reward, Reasons: []apitype.Reason{}}
	for _, r := range gv.Reasons {
		v.Reasons = append(v.Reasons, apitype.Reason{Code: r.Code, Message: r.Message})
	}
	if denied > 0 && !gv.Has(graders.CodeWrongFiles) {
		v.Reasons = append(v.Reasons, apitype.Reason{Code: graders.CodeWrongFiles,
			Message: fmt.Sprintf("the agent tried %d change(s) the task's edit policy forbids; they were refused (see the journal's denied records)", denied)})
	}
	if len(v.Reasons) > 0 {
		v.Pass, v.Reward = false, 0
	}
	return v
}

// prepareBacking copies the bundle's workspace to backing and the plan
// to backing/plan.md (read-only, root's). For a command agent the rest
// of the tree is handed to the agent's uid.
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
	if err := os.WriteFile(planPath, plan, 0o444); err != nil {
		return fmt.Errorf("unable to write the plan: %w", err)
	}
	if builtin {
		return nil
	}
	if err := chownTree(backing, uid, gid); err != nil {
		return fmt.Errorf("unable to hand the workspace to uid %d: %w", uid, err)
	}
	return os.Lchown(planPath, 0, 0)
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

// agentEnv builds the agent's environment from the named variables, plus
// BENCH_PLAN, and returns the names (never the values) for its identity.
func agentEnv(vars []apitype.EnvVar) ([]string, []string, error) {
	env := make([]string, 0, len(vars)+1)
	names := make([]string, 0, len(vars))
	seen := map[string]bool{}
	for _, v := range vars {
		if !envNameRE.MatchString(v.Name) || v.Name == "BENCH_PLAN" {
			return nil, nil, fmt.Errorf("%w: environment variable name %q", ErrInvalid, v.Name)
		}
		if seen[v.Name] {
			return nil, nil, fmt.Errorf("%w: environment variable %s given twice", ErrInvalid, v.Name)
		}
		seen[v.Name] = true
		env = append(env, v.Name+"="+v.Value)
		names = append(names, v.Name)
	}
	env = append(env, "BENCH_PLAN="+PlanPath)
	return env, names, nil
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

// parseGateways parses NAME=HOST:PORT specs.
func parseGateways(specs []string) ([]netns.Gateway, error) {
	var gws []netns.Gateway
	for _, s := range specs {
		g, err := netns.ParseGateway(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		gws = append(gws, g)
	}
	return gws, nil
}

// ParseGateways checks gateway specs (NAME=HOST:PORT) as Run will; an
// error wraps ErrInvalid.
func ParseGateways(specs []string) error {
	_, err := parseGateways(specs)
	return err
}

func wireChangeset(cs journal.Changeset) []apitype.Change {
	out := make([]apitype.Change, 0, len(cs))
	for _, c := range cs {
		out = append(out, apitype.Change{Kind: c.Kind, Path: c.Path, From: c.From, Type: c.Type, SHA256: c.SHA256})
	}
	return out
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
		n.Attempts = append(n.Attempts, apitype.NetAttempt{Time: at.Time, Proto: at.Proto, Dst: net.JoinHostPort(at.Dst.String(), strconv.Itoa(int(at.Port)))})
	}
	for _, q := range r.DNS {
		n.DNS = append(n.DNS, apitype.DNSQuery{Time: q.Time, Name: q.Name, Type: q.Type})
	}
	for _, g := range r.Gateways {
		n.Gateways = append(n.Gateways, apitype.GatewayUse{Name: g.Name, Endpoint: net.JoinHostPort(g.Host, strconv.Itoa(g.Port)),
			Conns: g.Conns, BytesIn: g.BytesIn, BytesOut: g.BytesOut})
	}
	return n
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
