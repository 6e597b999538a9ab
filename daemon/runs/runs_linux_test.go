package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/confine"
	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/graders"
	"benchd.dev/internal/testenv"
	"benchd.dev/limits"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

func TestMain(m *testing.M) {
	sandbox.Init()
	undo := limits.DelegateForTest()
	code := m.Run()
	undo()
	os.Exit(code)
}

// tasksDir is the repository's task store.
func tasksDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func findTask(t testing.TB, id string) *tasks.Task {
	t.Helper()
	task, err := tasks.Find(tasksDir(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// newEngine makes an engine on a fresh state dir and checks, when the
// test ends, that nothing of it is left: no mount below the state dir,
// no namespace file, no cgroup of confine's, no grader scratch.
func newEngine(t testing.TB) *Engine {
	t.Helper()
	return newEngineWith(t, Config{})
}

// newEngineWith is newEngine with cfg, whose directories and logger it
// fills in.
func newEngineWith(t testing.TB, cfg Config) *Engine {
	t.Helper()
	testenv.Require(t, testenv.Root, testenv.FUSE, testenv.Cgroups, testenv.Netns, testenv.Userns, testenv.Python, testenv.Pytest, testenv.Loop)
	state := t.TempDir()
	scratch := t.TempDir()
	cfg.StateDir, cfg.TasksDir, cfg.ScratchDir, cfg.Logger = state, tasksDir(t), scratch, testLogger(t)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNothingLeft(t, state, scratch) })
	return e
}

func checkNothingLeft(t testing.TB, state, scratchDir string) {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		if strings.Contains(line, state) {
			t.Errorf("mount left: %s", line)
		}
	}
	if left := loopsOf(state); len(left) > 0 {
		t.Errorf("loop devices left attached to files in the state dir: %v", left)
	}
	ns, _ := os.ReadDir(filepath.Join(state, "netns"))
	for _, e := range ns {
		if e.Name() != ".state" {
			t.Errorf("network namespace left: %s", e.Name())
		}
	}
	for _, p := range ownCgroupDirs(t) {
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), confine.NamePrefix+strconv.Itoa(os.Getpid())+"-") {
				t.Errorf("cgroup left: %s", filepath.Join(p, e.Name()))
			}
		}
	}
	if left, _ := os.ReadDir(scratchDir); len(left) > 0 {
		t.Errorf("grader scratch left: %v", left)
	}
	grades, _ := filepath.Glob(filepath.Join(state, "attempts", "*", "grade-*"))
	if len(grades) > 0 {
		t.Errorf("grading copies left: %v", grades)
	}
}

// loopsOf lists the loop devices attached to a file below dir. A device
// of AUTOCLEAR detaches as its last user goes, which may lag the unmount
// a little: it is given a few seconds.
func loopsOf(dir string) []string {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), real+"/") {
				left = append(left, filepath.Base(filepath.Dir(filepath.Dir(f)))+": "+strings.TrimSpace(string(b)))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// ownCgroupDirs lists the directories of this process's cgroups (v1
// memory and pids, and the v2 one), where confine makes its groups
// (directly, or in the intermediate group of this process). Groups of
// other processes are not this test's business.
func ownCgroupDirs(t testing.TB) []string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var mount string
		switch parts[1] {
		case "memory", "pids":
			mount = "/sys/fs/cgroup/" + parts[1]
		case "":
			mount = "/sys/fs/cgroup/unified"
			if _, err := os.Stat(mount); err != nil {
				mount = "/sys/fs/cgroup"
			}
		default:
			continue
		}
		d := filepath.Join(mount, parts[2])
		dirs = append(dirs, d)
		dirs = append(dirs, filepath.Join(d, "benchd-"+strconv.Itoa(os.Getpid())))
	}
	return dirs
}

// testLogger sends warnings to the test's log (debug records with -v
// and BENCHD_DEBUG set).
func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("BENCHD_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func codes(rs []apitype.Reason) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}

// mountFinal mounts the disk of the attempt out ran on its FinalDir,
// read-only, until the test ends: the final tree is on it.
func mountFinal(t *testing.T, out Outcome) {
	t.Helper()
	unmount, err := MountDiskReadOnly(filepath.Dir(out.FinalDir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
	})
}

func runAttempt(t *testing.T, e *Engine, spec Spec) (Outcome, []apitype.Event) {
	t.Helper()
	var mu sync.Mutex
	var events []apitype.Event
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := e.Run(ctx, spec, func(ev apitype.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out, events
}

func TestBuiltins(t *testing.T) {
	e := newEngine(t)
	task := findTask(t, "rt-01")
	tests := []struct {
		agent     string
		wantPass  bool
		wantCode  string
		wantEdits bool
	}{
		{apitype.AgentReference, true, "", true},
		{apitype.AgentNull, false, "tests_failed", false},
		{apitype.AgentAttemptPrefix + "edits-tests", false, graders.CodeWrongFiles, true},
		{apitype.AgentAttemptPrefix + "deletes-tests", false, graders.CodeWrongFiles, false},
	}
	for i, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			out, events := runAttempt(t, e, Spec{AttemptID: fmt.Sprintf("b%d", i), Task: task, Agent: tt.agent})
			a := out.Attempt
			if a.Pass != tt.wantPass {
				t.Errorf("got pass %v (reasons %v), want %v", a.Pass, a.Reasons, tt.wantPass)
			}
			if tt.wantCode != "" && !slices.Contains(codes(a.Reasons), tt.wantCode) {
				t.Errorf("got reasons %v, want one with code %s", codes(a.Reasons), tt.wantCode)
			}
			if tt.wantPass && (a.Reward != 1 || len(a.Reasons) != 0) {
				t.Errorf("got reward %d reasons %v, want 1 and none", a.Reward, a.Reasons)
			}
			if got := a.Edits > 0; got != tt.wantEdits {
				t.Errorf("got %d edits, want edits %v", a.Edits, tt.wantEdits)
			}
			if a.Agent.Spec != tt.agent || len(a.Agent.SHA256) != 64 {
				t.Errorf("got identity %+v, want spec %s and a SHA-256", a.Agent, tt.agent)
			}
			if a.JournalHead == "" {
				t.Error("got no journal head")
			}
			recs, err := journal.Read(out.JournalPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := journal.Verify(recs, &journal.Blobs{Dir: journal.BlobsDir(out.JournalPath)}); err != nil {
				t.Errorf("journal does not verify: %v", err)
			}
			if last := recs[len(recs)-1]; last.Op != journal.OpUnmount || last.Hash != a.JournalHead {
				t.Errorf("got last record %s %s, want unmount with the journal head %s", last.Op, last.Hash, a.JournalHead)
			}
			var phases []string
			for _, ev := range events {
				if len(phases) == 0 || phases[len(phases)-1] != ev.Phase {
					phases = append(phases, ev.Phase)
				}
			}
			want := []string{apitype.PhasePrepare, apitype.PhaseMount, apitype.PhaseRun, apitype.PhaseCollect, apitype.PhaseGrade}
			if !slices.Equal(phases, want) {
				t.Errorf("got phases %v, want %v", phases, want)
			}
			a.ID = fmt.Sprintf("b%d", i)
			mountFinal(t, out)
			rv, err := e.Regrade(context.Background(), task, a, journal.CapsOf(verifiedJournal(t, out.JournalPath)), out.FinalDir)
			if err != nil {
				t.Fatalf("Regrade: %v", err)
			}
			if rv.Pass != a.Pass || !slices.Equal(codes(rv.Reasons), codes(a.Reasons)) {
				t.Errorf("regrade got pass %v %v, want the same as %v %v", rv.Pass, codes(rv.Reasons), a.Pass, codes(a.Reasons))
			}
			if _, err := os.Stat(filepath.Join(out.FinalDir, planFile)); err != nil {
				t.Errorf("the final tree has no plan: %v", err)
			}
			for _, c := range a.Changeset {
				if c.Path == planFile {
					t.Errorf("plan.md is in the changeset: %+v", c)
				}
			}
		})
	}
}

// fixRT01 fixes RT-01's off-by-one with the shell's own redirection (a
// builtin printf), so the write is sh's own; sed -i would make a
// temporary file, which the policy refuses.
const fixRT01 = `c=$(sed 's/nxt > self._capacity/nxt >= self._capacity/' src/counter.py) && printf '%s\n' "$c" > src/counter.py && test -f "$BENCH_PLAN" && cat {plan} >/dev/null`

func TestCommandAgent(t *testing.T) {
	e := newEngine(t)
	task := findTask(t, "rt-01")
	t.Run("fixes rt-01", func(t *testing.T) {
		out, events := runAttempt(t, e, Spec{AttemptID: "c1", Task: task, Agent: "sh -c '" + strings.ReplaceAll(fixRT01, "'", `'\''`) + "'", Model: "none"})
		a := out.Attempt
		if !a.Pass || a.ExitCode != 0 || a.TimedOut {
			t.Fatalf("got pass %v exit %d timed out %v reasons %v, want a pass", a.Pass, a.ExitCode, a.TimedOut, a.Reasons)
		}
		if len(a.Changeset) != 1 || a.Changeset[0].Path != "src/counter.py" || a.Changeset[0].Kind != journal.Modified {
			t.Errorf("got changeset %+v, want src/counter.py modified", a.Changeset)
		}
		if a.Agent.Exe == "" || a.Agent.Model != "none" || len(a.Agent.Args) != 2 || a.Agent.Args[0] != "-c" {
			t.Errorf("got identity %+v, want the resolved sh, its two args and the model", a.Agent)
		}
		sum, err := journal.HashFile(a.Agent.Exe)
		if err != nil || sum != a.Agent.SHA256 {
			t.Errorf("got sha %s, want the hash of %s (%s, %v)", a.Agent.SHA256, a.Agent.Exe, sum, err)
		}
		if a.MaxRSSBytes <= 0 || a.PeakMemoryBytes <= 0 {
			t.Errorf("got max rss %d, peak %d, want both > 0", a.MaxRSSBytes, a.PeakMemoryBytes)
		}
		recs, err := journal.Read(out.JournalPath)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range recs {
			if r.Path == "src/counter.py" && r.Op == journal.OpOpen && r.Comm == "sh" && r.PID > 1 && r.UID == uint32(DefaultAgentID) && r.Decision == journal.Allowed {
				found = true
			}
		}
		if !found {
			t.Errorf("no journal record of sh (uid %d) opening src/counter.py for writing in %d records", DefaultAgentID, len(recs))
		}
		sawRun := false
		for _, ev := range events {
			sawRun = sawRun || ev.Phase == apitype.PhaseRun
		}
		if !sawRun {
			t.Error("no progress event of the run phase")
		}
	})
	t.Run("changes the plan", func(t *testing.T) {
		// The view has the kernel check mode bits: the plan must stay
		// readable, and its edits (a write, a chmod) must reach the edit
		// policy, which refuses and journals them, not be refused by the
		// kernel unrecorded.
		out, _ := runAttempt(t, e, Spec{AttemptID: "c2", Task: task, Agent: `sh -c 'cat /workspace/plan.md > /dev/null || exit 3; echo x >> /workspace/plan.md; chmod 0600 /workspace/plan.md; true'`})
		a := out.Attempt
		if a.ExitCode != 0 {
			t.Fatalf("got exit %d, want 0 (3: the agent could not read the plan)", a.ExitCode)
		}
		if a.Pass || a.Denied == 0 || !slices.Contains(codes(a.Reasons), graders.CodeWrongFiles) {
			t.Errorf("got pass %v denied %d reasons %v, want a refused edit failing with wrong_files", a.Pass, a.Denied, codes(a.Reasons))
		}
		recs := verifiedJournal(t, out.JournalPath)
		for _, op := range []journal.Op{journal.OpOpen, journal.OpChmod} {
			found := false
			for _, r := range recs {
				found = found || r.Op == op && r.Path == planFile && r.Decision == journal.Denied && r.Result == "EACCES" && r.UID == uint32(DefaultAgentID)
			}
			if !found {
				t.Errorf("no denied %s record of plan.md by uid %d in %d records", op, DefaultAgentID, len(recs))
			}
		}
	})
	t.Run("times out", func(t *testing.T) {
		marker := "987.5"
		start := time.Now()
		out, _ := runAttempt(t, e, Spec{AttemptID: "c3", Task: task, Agent: "sh -c 'sleep " + marker + " & setsid sleep " + marker + " & sleep " + marker + "'", Timeout: 2 * time.Second})
		a := out.Attempt
		if !a.TimedOut || a.Pass || !slices.Contains(codes(a.Reasons), graders.CodeTimeout) {
			t.Errorf("got timed out %v pass %v reasons %v, want a timeout", a.TimedOut, a.Pass, codes(a.Reasons))
		}
		if a.WallMS < 2000 || time.Since(start) > time.Minute {
			t.Errorf("got wall %d ms, want at least the 2 s limit", a.WallMS)
		}
		if pids := procsWith("sleep\x00" + marker); len(pids) > 0 {
			t.Errorf("processes of the agent survived: %v", pids)
		}
		recs := verifiedJournal(t, out.JournalPath)
		if r := recs[len(recs)-2]; r.Op != journal.OpInterrupted || !strings.Contains(r.Name, "time limit") {
			t.Errorf("record before the unmount: got %s %q, want interrupted by the time limit", r.Op, r.Name)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		type result struct {
			out Outcome
			err error
		}
		done := make(chan result, 1)
		go func() {
			out, err := e.Run(ctx, Spec{AttemptID: "c4", Task: task, Agent: `sh -c 'echo "# edited" >> src/counter.py; sleep 3517'`}, nil)
			done <- result{out, err}
		}()
		// The edit's release record reaches the journal file while the
		// agent sleeps: the writer syncs in batches.
		jpath := filepath.Join(e.AttemptDir("c4"), "journal.jsonl")
		deadline := time.Now().Add(2 * time.Minute)
		for !hasRelease(jpath, "src/counter.py") {
			if time.Now().After(deadline) {
				cancel(errors.New("test gave up"))
				t.Fatalf("no release of src/counter.py in %s after 2 minutes", jpath)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cause := errors.New("canceled by the test")
		cancel(cause)
		var res result
		select {
		case res = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatal("Run did not return within 2 minutes of the cancel")
		}
		if res.err == nil {
			t.Fatal("Run of a canceled attempt returned no error")
		}
		if res.out.JournalPath != jpath || res.out.StdoutPath == "" {
			t.Fatalf("outcome of a canceled attempt: got journal %q stdout %q, want %s and the transcript", res.out.JournalPath, res.out.StdoutPath, jpath)
		}
		recs := verifiedJournal(t, jpath)
		if r := recs[len(recs)-2]; r.Op != journal.OpInterrupted || r.Name != cause.Error() {
			t.Errorf("record before the unmount: got %s %q, want interrupted %q", r.Op, r.Name, cause)
		}
		if !hasRelease(jpath, "src/counter.py") {
			t.Error("the sealed journal lost the edit")
		}
	})
}

// verifiedJournal reads the journal at path and checks that it verifies
// and replays.
func verifiedJournal(t *testing.T, path string) []journal.Record {
	t.Helper()
	recs, err := journal.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	blobs := &journal.Blobs{Dir: journal.BlobsDir(path)}
	if err := journal.Verify(recs, blobs); err != nil {
		t.Fatalf("journal does not verify: %v", err)
	}
	if err := journal.VerifyReplay(recs, blobs); err != nil {
		t.Fatalf("journal does not replay: %v", err)
	}
	return recs
}

// hasRelease reports whether the journal file at path has, among its
// complete lines, an ok release record of p.
func hasRelease(path, p string) bool {
	recs, _ := journal.Read(path) // the records before a torn line
	for _, r := range recs {
		if r.Op == journal.OpRelease && r.Path == p && r.Result == "ok" {
			return true
		}
	}
	return false
}

// procsWith lists processes whose command line contains s.
func procsWith(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestConfinedGraderRunner grades RT-01 workspaces with the confined
// runner directly, as `benchd grade` does.
func TestConfinedGraderRunner(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Netns, testenv.Userns, testenv.Python, testenv.Pytest)
	task := findTask(t, "rt-01")
	netnsDir := filepath.Join(t.TempDir(), "netns")
	runner := ConfinedGraderRunner(GraderRunnerConfig{Mask: []string{tasksDir(t)}, NetnsRunDir: netnsDir})
	tests := []struct {
		attempt  string
		wantPass bool
		wantCode string
	}{
		{"reference", true, ""},
		{"untouched", false, "tests_failed"},
		{"edits-tests", false, graders.CodeWrongFiles},
	}
	for _, tt := range tests {
		t.Run(tt.attempt, func(t *testing.T) {
			at, err := task.Attempt(tt.attempt)
			if err != nil {
				t.Fatal(err)
			}
			ws := attemptTree(t, task, at)
			v, err := graders.Grade(context.Background(), graders.Input{Task: task, Workspace: ws}, runner)
			if err != nil {
				t.Fatal(err)
			}
			if v.Pass != tt.wantPass || (tt.wantCode != "" && !v.Has(tt.wantCode)) {
				t.Errorf("got pass %v reasons %v, want pass %v with %q", v.Pass, v.Codes(), tt.wantPass, tt.wantCode)
			}
		})
	}
	t.Run("max rss of a short python", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "benchd-rss-test-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		run := func(script string) graders.RunResult {
			res, err := runner.Run(context.Background(), graders.RunSpec{Args: []string{graders.Python, "-c", script}, Dir: dir, Timeout: 30 * time.Second})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("got %v exit %d (%s), want success", err, res.ExitCode, res.Stderr)
			}
			return res
		}
		base := run("pass")
		big := run("b = bytearray(64 << 20)\nopen('out', 'w').write('x')")
		// RSS counts the interpreter's resident file pages too, which two
		// runs need not share alike: on Debian 12's kernel with the root
		// on 9p (the VM lane) the difference was 59 MiB.
		if d := big.MaxRSS - base.MaxRSS; d < 48<<20 || d > 80<<20 {
			t.Errorf("got max rss %d MiB against a %d MiB baseline, want about 64 MiB more", big.MaxRSS>>20, base.MaxRSS>>20)
		}
		if _, err := os.Stat(filepath.Join(dir, "out")); err != nil {
			t.Errorf("the command could not write its scratch dir: %v", err)
		}
	})
}

// TestCleanup leaves what a crash would (a mounted view, a grading copy,
// a dead benchd's scratch root) and checks that Cleanup removes it and
// keeps the attempt's record.
func TestCleanup(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE)
	state := t.TempDir()
	dir := filepath.Join(state, "attempts", "x1")
	backing, mnt, grade := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt"), filepath.Join(dir, "grade-123")
	for _, d := range []string{backing, mnt, grade} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, err := journal.Create(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := fsmon.Mount(context.Background(), fsmon.Config{Backing: backing, Mountpoint: mnt, Journal: w}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	deadScratch := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-test", scratchPrefix, cmd.Process.Pid))
	liveScratch := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-test", scratchPrefix, os.Getpid()))
	for _, d := range []string{deadScratch, liveScratch} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(d)
	}

	if err := Cleanup(context.Background(), state, ""); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if m, err := fsmon.IsMountpoint(mnt); err != nil || m {
		t.Errorf("got view mounted %v (%v), want it unmounted", m, err)
	}
	for _, gone := range []string{grade, deadScratch} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left (stat: %v)", gone, err)
		}
	}
	for _, kept := range []string{backing, filepath.Join(dir, "journal.jsonl"), liveScratch} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s removed: %v", kept, err)
		}
	}
}

// TestConfinedAttempts grades, for every bundle, the known attempts
// whose verdicts need the confined runner, and the reference: RT-04's
// memory held in a memfd counts (the cgroup's charge), the forbidden
// modules' files are absent (so loading dbm.dumb by its path fails), and
// code that behaves only when it sees signs of grading sees none (the
// probes run in the agent's world). Three gradings each, verdicts alike.
func TestConfinedAttempts(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Netns, testenv.Userns, testenv.Python, testenv.Pytest)
	all, err := tasks.LoadAll(tasksDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var confined int
	for _, task := range all {
		var ats []tasks.Attempt
		for _, at := range task.Attempts {
			if at.Expect.Confined {
				ats = append(ats, at)
			}
		}
		if len(ats) == 0 {
			continue
		}
		confined += len(ats)
		runner := ConfinedGraderRunner(GraderRunnerConfig{Mask: []string{tasksDir(t)}, NetnsRunDir: filepath.Join(t.TempDir(), "netns"),
			MemoryMax: int64(task.MemoryMB) << 20})
		for _, at := range append([]tasks.Attempt{task.Reference()}, ats...) {
			t.Run(task.ID+"/"+at.Name, func(t *testing.T) {
				ws := attemptTree(t, task, at)
				for i := range 3 {
					scratch := t.TempDir()
					os.Chmod(scratch, 0o711)
					v, err := graders.Grade(context.Background(), graders.Input{Task: task, Workspace: ws, ScratchRoot: scratch}, runner)
					if err != nil {
						t.Fatal(err)
					}
					if v.Pass != at.Expect.Pass || (!at.Expect.Pass && !v.Has(at.Expect.Code)) {
						t.Fatalf("grading %d: got pass %v reasons %v, want pass %v with %q\n%s", i, v.Pass, v.Reasons, at.Expect.Pass, at.Expect.Code, v.Detail)
					}
				}
			})
		}
	}
	if confined < 3 {
		t.Errorf("got %d attempts that need the confined runner, want RT-04's memfd and dbm ones and RT-01's detects-grading", confined)
	}
}

// TestAgentWorld: a grader command with a Workspace sees what an agent
// sees: /workspace as its working directory, the agent's host name,
// uid (WorldUID) and environment, and nothing of the scratch beside it;
// one without runs as the grading's own uid.
func TestAgentWorld(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Netns, testenv.Userns, testenv.Python)
	scratch := t.TempDir()
	os.Chmod(scratch, 0o711)
	top := filepath.Join(scratch, "g")
	ws := filepath.Join(top, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "plan.md"), []byte("plan"), 0o644)
	os.WriteFile(filepath.Join(top, "hidden"), []byte("x"), 0o644)
	runner := ConfinedGraderRunner(GraderRunnerConfig{UID: 4242, GID: 4242, WorldUID: 4343, WorldGID: 4343, ScratchRoot: scratch, NetnsRunDir: filepath.Join(t.TempDir(), "netns")})
	const script = `import json, os, socket, sys
print(json.dumps([os.getcwd(), socket.gethostname(), os.getuid(), dict(os.environ), sys.flags.hash_randomization,
    os.path.exists("/workspace/plan.md"), os.path.exists(sys.argv[1])]))`
	res, err := runner.Run(context.Background(), graders.RunSpec{Args: []string{graders.Python, "-c", script, filepath.Join(top, "hidden")},
		Dir: ws, Workspace: ws, Env: graders.AgentEnv, Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("got %v exit %d (%s)", err, res.ExitCode, res.Stderr)
	}
	var got []any
	if err := json.Unmarshal(res.Stdout, &got); err != nil {
		t.Fatal(err)
	}
	// Python itself sets LC_CTYPE when the locale is C (PEP 538), for the
	// agent's code alike.
	if e, ok := got[3].(map[string]any); ok && e["LC_CTYPE"] == "C.UTF-8" {
		delete(e, "LC_CTYPE")
	}
	env := map[string]any{}
	for _, kv := range graders.AgentEnv {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	want := []any{"/workspace", agentHostname, float64(4343), env, float64(1), true, false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// The grader's own commands run as the grading's uid, not the agent's.
	res, err = runner.Run(context.Background(), graders.RunSpec{Args: []string{graders.Python, "-c", "import os; print(os.getuid())"},
		Dir: ws, Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "4242" {
		t.Errorf("grader command: got %v exit %d uid %q, want uid 4242 (%s)", err, res.ExitCode, res.Stdout, res.Stderr)
	}
}

// TestWorkspaceCap: an agent that creates files past the view's files
// cap gets EDQUOT, the journal has the cap record, and the verdict fails
// with workspace_cap though every file it made is an ignored one.
func TestWorkspaceCap(t *testing.T) {
	// rt-01's workspace holds 5 entries and plan.md: 14 more fit.
	e := newEngineWith(t, Config{WorkspaceFiles: 20})
	task := findTask(t, "rt-01")
	out, _ := runAttempt(t, e, Spec{AttemptID: "cap1", Task: task, Agent: `sh -c 'for i in $(seq 50); do touch /workspace/f$i.tmp 2>/dev/null || echo refused; done; true'`})
	a := out.Attempt
	if a.ExitCode != 0 {
		t.Fatalf("got exit %d, want 0", a.ExitCode)
	}
	if a.Pass || !slices.Contains(codes(a.Reasons), graders.CodeCap) {
		t.Errorf("got pass %v reasons %v, want a failure with %s", a.Pass, codes(a.Reasons), graders.CodeCap)
	}
	if a.Denied != 0 {
		t.Errorf("got %d denied, want 0: a cap is no refusal of the policy", a.Denied)
	}
	recs := verifiedJournal(t, out.JournalPath)
	if caps := journal.CapsOf(recs); !slices.Equal(caps, []string{journal.CapFiles}) {
		t.Errorf("journal caps: got %v, want [%s]", caps, journal.CapFiles)
	}
	b, err := os.ReadFile(out.StdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "refused"); got != 50-14 {
		t.Errorf("creates refused: got %d, want %d", got, 50-14)
	}
	// A regrade of the attempt as the daemon stored it (with its ID),
	// given the caps of its journal, agrees.
	a.ID = "cap1"
	mountFinal(t, out)
	v, err := e.Regrade(context.Background(), task, a, journal.CapsOf(recs), out.FinalDir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(codes(v.Reasons), graders.CodeCap) {
		t.Errorf("regrade: got reasons %v, want %s", codes(v.Reasons), graders.CodeCap)
	}
}

// attemptTree is task's workspace with the known attempt at applied, in
// a directory of the test's.
func attemptTree(t *testing.T, task *tasks.Task, at tasks.Attempt) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := tasks.CopyTree(task.WorkspaceDir(), ws); err != nil {
		t.Fatal(err)
	}
	if err := tasks.ApplyOverlay(ws, at.Dir, at.Delete); err != nil {
		t.Fatal(err)
	}
	return ws
}
