package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"benchd.dev/confine"
	"benchd.dev/graders"
	"benchd.dev/sandbox"
)

// GraderRunnerConfig configures ConfinedGraderRunner.
type GraderRunnerConfig struct {
	// UID and GID run the grader's commands (non-zero); default 65534.
	UID, GID int
	// WorldUID and WorldGID run a command in the agent's world
	// (RunSpec.Workspace): the attempt's own uid, whose processes are
	// gone by grading, so that the agent's code sees the uid it ran as.
	// Default UID and GID.
	WorldUID, WorldGID int
	// ScratchRoot is the graders.Input.ScratchRoot of the gradings this
	// runner serves; "" means os.TempDir(), as for graders (local tools
	// only: the daemon always sets it). Captured output is kept there.
	ScratchRoot string
	// Mask lists host paths the grader's commands must not read (the
	// task store with every task's hidden tests and goldens, benchd's
	// state directory). ScratchRoot must not lie inside one.
	Mask []string
	// Binds are host paths every command is shown read-only besides the
	// sandbox's allow-listed root (the task's [environment] binds).
	Binds []sandbox.Bind
	// CgroupParent and NetnsRunDir are as in confine.Spec.
	CgroupParent string
	NetnsRunDir  string
	// MemoryMax is the task's memory limit ([environment] memory_mb),
	// the memory.max of every command: a RunSpec.MemoryLimit only
	// lowers it. 0 means none.
	MemoryMax int64
	// PidsMax limits each command's tasks; 0 means DefaultGraderPids.
	PidsMax int64
	// CPUWeight is each command's share of contended CPU; 0 means
	// DefaultGraderCPUWeight.
	CPUWeight uint64
	Logger    *slog.Logger
}

// Defaults of the limits on every grader command.
const (
	DefaultGraderPids      = 256
	DefaultGraderCPUWeight = 50 // half a default group's share: grading yields to the host
)

// ConfinedGraderRunner returns a graders.Runner that runs each grader
// command as a confine job: its own cgroup (memory.max the task's
// cfg.MemoryMax, or RunSpec.MemoryLimit when lower; pids.max and a CPU
// weight), a closed network namespace, a sandbox as cfg.UID with
// cfg.Mask masked. A command the OOM killer stopped has RunResult.OOM
// set; graders.Grade makes that the agent's failure (grader_oom).
//
// A command with a RunSpec.Workspace runs in the agent's world: the
// workspace copy at /workspace as its working directory, the agent's
// uid (cfg.WorldUID, the attempt's) and host name, and no other
// part of the scratch in view but RunSpec.Binds. Every command has the
// agent's host name.
//
// The grader's scratch directory (the directory of
// ScratchRoot that holds RunSpec.Dir) is handed to the command's uid
// (cfg.UID, or cfg.WorldUID in the agent's world) and, for a
// command without a Workspace, bound read-write at the same path, so every path the grader passes works
// unchanged. The command can therefore change anything in that scratch
// directory, hidden test copies included, while it runs: graders must
// not trust a file there after running the agent's code beside it. RunResult.MaxRSS is the largest single-process peak RSS
// (see confine), PeakMemory the cgroup's peak. Output is kept up to
// RunSpec.OutputCap (graders.DefaultOutputCap by default) per stream,
// head and tail, as graders.ExecRunner keeps it.
func ConfinedGraderRunner(cfg GraderRunnerConfig) graders.Runner {
	if cfg.UID == 0 {
		cfg.UID = 65534
	}
	if cfg.GID == 0 {
		cfg.GID = 65534
	}
	if cfg.WorldUID == 0 || cfg.WorldGID == 0 {
		cfg.WorldUID, cfg.WorldGID = cfg.UID, cfg.GID
	}
	if cfg.PidsMax == 0 {
		cfg.PidsMax = DefaultGraderPids
	}
	if cfg.CPUWeight == 0 {
		cfg.CPUWeight = DefaultGraderCPUWeight
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &graderRunner{cfg: cfg}
}

// graderRunner is the confined graders.Runner.
type graderRunner struct {
	cfg GraderRunnerConfig
	// cpu sums the CPU time (cpu.stat usage_usec) of every command's
	// cgroup, read as the cgroup closes: all the grading's processes.
	cpu atomic.Int64
}

// GradingCPU returns the CPU time the commands r ran so far used, for a
// runner ConfinedGraderRunner made; 0 for any other runner.
func GradingCPU(r graders.Runner) time.Duration {
	if g, ok := r.(*graderRunner); ok {
		return time.Duration(g.cpu.Load())
	}
	return 0
}

// storeCap is how much of each stream the sandbox stores; the runner then
// keeps the head and tail of it (pytest's summary is at the end).
const storeCap = 8 << 20

// CanHide reports that RunSpec.Hide is applied: hidden paths are masked
// in the command's sandbox.
func (g *graderRunner) CanHide() bool { return true }

// Run runs one grader command confined.
func (g *graderRunner) Run(ctx context.Context, spec graders.RunSpec) (graders.RunResult, error) {
	if len(spec.Args) == 0 {
		return graders.RunResult{}, errors.New("unable to run: no command")
	}
	top, err := g.scratchTop(spec.Dir)
	if err != nil {
		return graders.RunResult{}, err
	}
	// Graders write results beside the working directory (probe
	// outputs, nonce-stamped reports), so the command gets the whole
	// scratch directory.
	uid, gid := g.cfg.UID, g.cfg.GID
	if spec.Workspace != "" {
		uid, gid = g.cfg.WorldUID, g.cfg.WorldGID
	}
	if err := chownTree(top, uid, gid); err != nil {
		return graders.RunResult{}, fmt.Errorf("unable to hand the scratch dir to uid %d: %w", uid, err)
	}
	// The captured output (hidden tests' included) stays beside the
	// scratch, root's, mode 0700.
	outDir, err := os.MkdirTemp(g.cfg.ScratchRoot, "benchd-grader-out-")
	if err != nil {
		return graders.RunResult{}, fmt.Errorf("unable to make an output dir: %w", err)
	}
	defer os.RemoveAll(outDir)
	env := spec.Env
	if env == nil {
		env = []string{"PATH=/usr/bin:/bin"}
	}
	var stdin *os.File
	if spec.Stdin != nil {
		r, done, err := feedStdin(spec.Stdin)
		if err != nil {
			return graders.RunResult{}, err
		}
		defer done()
		stdin = r
	}
	keep := int64(storeCap)
	if spec.OutputCap > keep {
		keep = spec.OutputCap
	}
	dir, workspace, binds, err := g.commandView(spec, top)
	if err != nil {
		return graders.RunResult{}, err
	}
	res, err := confine.Run(ctx, confine.Spec{
		Args:         spec.Args,
		Env:          env,
		Dir:          dir,
		Workspace:    workspace,
		Binds:        append(binds, g.cfg.Binds...),
		Mask:         append(append([]string{}, g.cfg.Mask...), spec.Hide...),
		UID:          uid,
		GID:          gid,
		Hostname:     agentHostname,
		Timeout:      spec.Timeout,
		MemoryMax:    memoryMax(g.cfg.MemoryMax, spec.MemoryLimit),
		PidsMax:      g.cfg.PidsMax,
		CPUWeight:    g.cfg.CPUWeight,
		Stdin:        stdin,
		StdoutPath:   filepath.Join(outDir, "stdout"),
		StderrPath:   filepath.Join(outDir, "stderr"),
		OutputCap:    keep,
		CgroupParent: g.cfg.CgroupParent,
		NetnsRunDir:  g.cfg.NetnsRunDir,
		Logger:       g.cfg.Logger,
	})
	if err != nil {
		return graders.RunResult{}, fmt.Errorf("unable to run %s confined: %w", spec.Args[0], err)
	}
	g.cpu.Add(int64(res.Cgroup.CPU))
	capN := spec.OutputCap
	if capN <= 0 {
		capN = graders.DefaultOutputCap
	}
	out := graders.RunResult{
		ExitCode:      res.ExitCode,
		Signal:        int(res.Signal),
		TimedOut:      res.TimedOut,
		OOM:           res.OOM,
		Wall:          res.Wall,
		PeakMemory:    res.PeakMemory,
		MaxRSS:        res.MaxRSS,
		PeakAnonShmem: res.Cgroup.PeakAnonShmemBytes,
		PeakCharged:   res.Cgroup.PeakChargedBytes,
		Network:       networkUse(wireNetwork(res.Network), agentHostname),
	}
	if out.Stdout, err = headTail(filepath.Join(outDir, "stdout"), capN); err != nil {
		return graders.RunResult{}, err
	}
	if out.Stderr, err = headTail(filepath.Join(outDir, "stderr"), capN); err != nil {
		return graders.RunResult{}, err
	}
	return out, nil
}

// feedStdin makes the read end of a pipe that src is copied into; done
// closes it and waits for the copy (which ends with EPIPE when the
// command exits without reading all of it).
func feedStdin(src io.Reader) (r *os.File, done func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("unable to make the command's stdin: %w", err)
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		io.Copy(w, src)
		w.Close()
	}()
	return r, func() {
		r.Close()
		<-fed
	}, nil
}

// commandView is what of the scratch a command sees. A command in the
// agent's world sees its workspace copy at /workspace as the agent saw
// the view, and of the scratch only the directories it names (each
// checked to be below it); any other command, the whole scratch top at
// its host path, with spec.Dir as its working directory.
func (g *graderRunner) commandView(spec graders.RunSpec, top string) (dir, workspace string, binds []sandbox.Bind, err error) {
	if spec.Workspace == "" {
		return spec.Dir, "", []sandbox.Bind{{Source: top, Target: top, Writable: true}}, nil
	}
	for _, b := range spec.Binds {
		if _, err := g.scratchTop(b); err != nil {
			return "", "", nil, err
		}
		binds = append(binds, sandbox.Bind{Source: b, Target: b, Writable: true})
	}
	return "", spec.Workspace, binds, nil
}

// memoryMax is the lower of the task's limit and the command's own, 0
// meaning none.
func memoryMax(task, spec int64) int64 {
	if task <= 0 || (spec > 0 && spec < task) {
		return spec
	}
	return task
}

// scratchTop returns the directory directly below the scratch root that
// holds dir: the grader's whole scratch directory.
func (g *graderRunner) scratchTop(dir string) (string, error) {
	root := g.cfg.ScratchRoot
	if root == "" {
		root = os.TempDir()
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("grader dir %q is not an absolute path", dir)
	}
	rel, err := filepath.Rel(root, filepath.Clean(dir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("grader dir %s is not below the scratch root %s", dir, root)
	}
	first, _, _ := strings.Cut(rel, "/")
	top := filepath.Join(root, first)
	fi, err := os.Lstat(top)
	if err != nil {
		return "", fmt.Errorf("grader scratch dir: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("grader scratch %s is not a directory", top)
	}
	return top, nil
}

// chownTree gives every file of dir to uid:gid, without following
// symbolic links.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// headTail reads a captured stream and keeps its first and last max/2
// bytes, with a marker line where the middle was dropped.
func headTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size <= max {
		return io.ReadAll(f)
	}
	half := max / 2
	head := make([]byte, half)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, err
	}
	tail := make([]byte, max-half)
	if _, err := f.ReadAt(tail, size-int64(len(tail))); err != nil && err != io.EOF {
		return nil, err
	}
	out := append(head, fmt.Sprintf("\n[... %d bytes dropped ...]\n", size-max)...)
	return append(out, tail...), nil
}
