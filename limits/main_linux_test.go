package limits

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
)

// gateEnv, when set, makes the test binary act as a gated launcher: it
// waits for one byte on fd 3, then execs its arguments. The parent calls
// Group.Add between start and release, so the command runs inside the
// group from its first instruction.
const gateEnv = "LIMITS_TEST_GATE"

func TestMain(m *testing.M) {
	if os.Getenv(gateEnv) != "" {
		runGate()
	}
	undo := DelegateForTest()
	code := m.Run()
	undo()
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "cgroup directories left behind by the tests: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

func runGate() {
	gate := os.NewFile(3, "gate")
	var b [1]byte
	if n, _ := gate.Read(b[:]); n != 1 {
		os.Exit(97) // the parent gave up: never run the command
	}
	gate.Close()
	argv := os.Args[1:]
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	env := slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, gateEnv+"=") })
	err = syscall.Exec(path, argv, env)
	fmt.Fprintln(os.Stderr, err)
	os.Exit(99)
}

// leftovers lists directories of this test process's groups still in the
// real cgroup tree: its intermediates at the roots and, in our own
// cgroups, groups with its default name prefix or the tests' names.
func leftovers() []string {
	own, err := readProcCgroup(DefaultProcCgroup)
	if err != nil || testenv.Check(testenv.Cgroups) != nil {
		return nil
	}
	var left []string
	mounts := map[string]string{"unified": own.unified}
	if Mode() == Unified {
		mounts = map[string]string{"": DelegatedParent(own.unified)}
	}
	for _, c := range []string{"memory", "pids", "cpu", "freezer"} {
		if p, ok := own.v1[c]; ok && Mode() != Unified {
			mounts[c] = p
		}
	}
	for m, p := range mounts {
		base := filepath.Join(DefaultRoot, m)
		if _, err := os.Stat(filepath.Join(base, fmt.Sprintf("benchd-%d", os.Getpid()))); err == nil {
			left = append(left, filepath.Join(base, fmt.Sprintf("benchd-%d", os.Getpid())))
		}
		ents, _ := os.ReadDir(filepath.Join(base, p))
		for _, e := range ents {
			if e.IsDir() && (strings.HasPrefix(e.Name(), fmt.Sprintf("benchd-%d-", os.Getpid())) || strings.HasPrefix(e.Name(), testPrefix())) {
				left = append(left, filepath.Join(base, p, e.Name()))
			}
		}
	}
	return left
}

// testPrefix prefixes the names the tests give their groups.
func testPrefix() string { return fmt.Sprintf("lt%d-", os.Getpid()) }

// hostLayouts are the layouts the real tests run in: the host's, and on a
// hybrid host also Legacy (same v1 controllers, freezer instead of the v2
// group), so the pure-v1 code paths run here too.
func hostLayouts(t *testing.T) []Layout {
	t.Helper()
	testenv.Require(t, testenv.Root, testenv.Cgroups)
	switch Mode() {
	case Hybrid:
		return []Layout{Hybrid, Legacy}
	case Unified:
		requireV2Delegation(t)
		return []Layout{Unified}
	case Legacy:
		return []Layout{Legacy}
	}
	t.Fatalf("cgroups available but layout %q", Mode())
	return nil
}

// newGroup makes a real group and, when the test ends, closes it and
// checks that none of its directories is left.
func newGroup(t *testing.T, cfg Config) *Group {
	t.Helper()
	g, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		checkGone(t, g)
	})
	return g
}

// checkGone fails t if any directory of g is still there, or an
// intermediate group that no open Group of this process uses.
func checkGone(t *testing.T, g *Group) {
	t.Helper()
	for label, dir := range g.Paths() {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s group %s still there after Close (stat: %v)", label, dir, err)
		}
	}
	interMu.Lock()
	defer interMu.Unlock()
	for i := range g.hs {
		h := &g.hs[i]
		if h.inter == "" || interRefs[h.interDir()] > 0 {
			continue
		}
		if _, err := os.Stat(h.interDir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s intermediate %s still there after the last Close (stat: %v)", h.label(), h.interDir(), err)
		}
	}
}

// child is a command started inside a group through the gate.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	waited chan error
}

// startInGroup starts argv held at the gate, adds it to g, and releases
// it. When the test ends the child is killed (by pid) and reaped if it is
// still there.
func startInGroup(t *testing.T, g *Group, argv ...string) *child {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], argv...)
	cmd.Env = append(os.Environ(), gateEnv+"=1")
	cmd.ExtraFiles = []*os.File{r}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A pipe of our own rather than StdoutPipe: Wait must not close it
	// before the test has read what the child wrote.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdout.Close() })
	cmd.Stdout = stdoutW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	stdoutW.Close()
	c := &child{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), waited: make(chan error, 1)}
	t.Cleanup(func() {
		select {
		case <-c.waited:
		default:
			_ = cmd.Process.Kill()
			<-c.waited
		}
	})
	if err := g.Add(cmd.Process.Pid); err != nil {
		w.Close()
		go func() { c.waited <- cmd.Wait() }()
		t.Fatalf("Add(%d): %v", cmd.Process.Pid, err)
	}
	if _, err := w.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// The children write a line or two; nothing needs draining.
	go func() { c.waited <- cmd.Wait() }()
	return c
}

// readLine reads one line the child wrote, or fails t after 20 s.
func (c *child) readLine(t *testing.T) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := c.stdout.ReadString('\n')
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("child output: %v (got %q)", r.err, r.s)
		}
		return strings.TrimSpace(r.s)
	case <-time.After(20 * time.Second):
		t.Fatal("child wrote nothing for 20 s")
	}
	return ""
}

// wait waits for the child to end (up to 20 s) and returns its status.
func (c *child) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.waited:
		c.waited <- err // keep it for the cleanup
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("child still running after 20 s")
	}
	return nil
}

// signaled returns the signal that ended the process, or 0.
func signaled(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

// requireV2Delegation skips t (fails it in CI) when, on a unified host,
// this process's cgroup holds processes and so cannot delegate
// controllers to groups below it (see ErrParentBusy): the tests must then
// run in a cgroup whose parent-to-be holds no process.
func requireV2Delegation(t *testing.T) {
	t.Helper()
	g, err := New(t.Context(), Config{Name: testPrefix() + "probe", SampleInterval: -1})
	if errors.Is(err, ErrParentBusy) {
		msg := fmt.Sprintf("cgroup v2 groups cannot be made below this process's cgroup: %v", err)
		if testenv.InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := g.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
