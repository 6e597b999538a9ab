package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/pgtest"
	"benchd.dev/internal/testenv"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

// The binaries under test, built once by TestMain into binDir (mode 0755,
// so that an unprivileged caller can run benchctl).
var (
	binDir     string
	benchdBin  string
	benchctl   string
	tasksDir   string
	buildError error
)

// callerGroup is the group the shared daemon admits (--group): one that
// exists on every Debian machine, so that the tests need not create one.
const callerGroup = "nogroup"
const callerGID = 65534

func TestMain(m *testing.M) {
	sandbox.Init()
	code := func() (code int) {
		if os.Geteuid() == 0 {
			buildError = build()
		}
		defer func() {
			if sharedD != nil {
				sharedD.stop(nil)
				os.RemoveAll(sharedD.dir)
				if log := sharedD.log.String(); strings.Contains(log, "DATA RACE") {
					fmt.Fprintf(os.Stderr, "the shared benchd reported a data race:\n%s", log)
					code = 1
				}
			}
			if binDir != "" {
				os.RemoveAll(binDir)
			}
		}()
		code = m.Run()
		if err := pgtest.StopShared(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		return code
	}()
	os.Exit(code)
}

func build() error {
	var err error
	if binDir, err = os.MkdirTemp("", "benchd-e2e-bin-"); err != nil {
		return err
	}
	if err := os.Chmod(binDir, 0o755); err != nil {
		return err
	}
	benchdBin = filepath.Join(binDir, "benchd")
	benchctl = filepath.Join(binDir, "benchctl")
	for _, b := range []struct {
		out, pkg string
		env      []string
	}{
		{benchdBin, "benchd.dev/cmd/benchd", nil},
		{benchctl, "benchd.dev/cmd/benchctl", []string{"CGO_ENABLED=0"}},
	} {
		args := []string{"build", "-o", b.out}
		if b.env == nil && os.Getenv("BENCHD_E2E_RACE") != "" {
			args = append(args, "-race") // benchd with the race detector
		}
		cmd := exec.Command("go", append(args, b.pkg)...)
		cmd.Env = append(os.Environ(), b.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "benchd.dev/tasks").Output()
	if err != nil {
		return fmt.Errorf("go list benchd.dev/tasks: %v", err)
	}
	tasksDir = strings.TrimSpace(string(out))
	return nil
}

// require gates every test: root, the kernel features an attempt needs,
// python3 and pytest for the graders, and the binaries.
func require(t *testing.T) {
	t.Helper()
	testenv.Require(t, testenv.Root, testenv.FUSE, testenv.Cgroups, testenv.Netns, testenv.Userns, testenv.Python, testenv.Pytest)
	if buildError != nil {
		t.Fatalf("building the binaries: %v", buildError)
	}
}

// daemonProc is one benchd process on its own socket and state directory.
type daemonProc struct {
	dir, socket, state string
	cmd                *exec.Cmd
	log                *lockedBuffer
	notify             *net.UnixConn
	notes              chan string
	waited             chan error
	client             *client.Client
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newDaemonDir makes a short directory (socket paths are limited to 108
// bytes) that an unprivileged caller may traverse.
func newDaemonDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "benchd-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	return dir
}

// startDaemon starts benchd on dir/benchd.sock and dir/state and waits
// for its sd_notify READY=1.
func startDaemon(t testing.TB, dir string, args ...string) *daemonProc {
	t.Helper()
	d := &daemonProc{
		dir:    dir,
		socket: filepath.Join(dir, "benchd.sock"),
		state:  filepath.Join(dir, "state"),
		log:    &lockedBuffer{},
		notes:  make(chan string, 16),
		waited: make(chan error, 1),
	}
	notifyPath := filepath.Join(dir, "notify.sock")
	os.Remove(notifyPath)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	d.notify = conn
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(d.notes)
				return
			}
			d.notes <- string(buf[:n])
		}
	}()
	d.cmd = exec.Command(benchdBin, append([]string{
		"--socket", d.socket, "--state", d.state, "--tasks", tasksDir,
	}, args...)...)
	d.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifyPath)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.waited <- d.cmd.Wait() }()
	select {
	case note := <-d.notes:
		if note != "READY=1" {
			d.kill()
			t.Fatalf("first notification: got %q, want READY=1", note)
		}
	case err := <-d.waited:
		d.waited <- err
		t.Fatalf("benchd exited before it was ready: %v\n%s", err, d.log.String())
	case <-time.After(60 * time.Second):
		d.kill()
		t.Fatalf("benchd not ready after 60 s\n%s", d.log.String())
	}
	d.client = &client.Client{Socket: d.socket}
	return d
}

// kill sends SIGKILL and waits for benchd to exit. A killed benchd can
// stay a zombie while one of its threads waits on an attempt's view that
// it served itself; then only `benchd cleanup` (which aborts the views'
// connections) ends it, so the wait is bounded and runs cleanup once.
func (d *daemonProc) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-d.waited:
	case <-time.After(30 * time.Second):
		out, _ := exec.Command(benchdBin, "cleanup", "--under", d.state).CombinedOutput()
		select {
		case <-d.waited:
		case <-time.After(30 * time.Second):
			panic(fmt.Sprintf("benchd (pid %d) still there 30 s after SIGKILL and cleanup: %s", d.cmd.Process.Pid, out))
		}
	}
	d.waited <- nil
	d.notify.Close()
}

// stop sends SIGTERM and waits for benchd to exit; it returns how long
// that took and checks the exit status and STOPPING=1 when t is set.
func (d *daemonProc) stop(t testing.TB) time.Duration {
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-d.waited:
	case <-time.After(60 * time.Second):
		d.kill()
		if t != nil {
			t.Fatalf("benchd did not stop within 60 s of SIGTERM\n%s", d.log.String())
		}
		return time.Since(start)
	}
	took := time.Since(start)
	d.waited <- err
	var notes []string
	deadline := time.After(time.Second)
collect:
	for {
		select {
		case n, ok := <-d.notes:
			if !ok {
				break collect
			}
			notes = append(notes, n)
		case <-deadline:
			break collect
		}
	}
	d.notify.Close()
	if t != nil {
		if err != nil {
			t.Errorf("benchd exit after SIGTERM: got %v, want status 0\n%s", err, d.log.String())
		}
		if strings.Contains(d.log.String(), "DATA RACE") {
			t.Errorf("benchd reported a data race:\n%s", d.log.String())
		}
		if !slices.Contains(notes, "STOPPING=1") {
			t.Errorf("notifications after SIGTERM: got %q, want STOPPING=1", notes)
		}
	}
	return took
}

var (
	sharedOnce sync.Once
	sharedD    *daemonProc
	sharedErr  string
)

// shared returns the daemon most tests use: the default concurrency (the
// number of cores), callers of group callerGroup admitted.
func shared(t *testing.T) *daemonProc {
	t.Helper()
	require(t)
	sharedOnce.Do(func() {
		ft := &fatalCatcher{TB: t}
		func() {
			defer func() { recover() }()
			sharedD = startDaemon(ft, newDaemonDir(t), "--group", callerGroup)
		}()
		sharedErr = ft.msg
	})
	if sharedD == nil {
		t.Fatalf("shared benchd did not start: %s", sharedErr)
	}
	return sharedD
}

// fatalCatcher turns a Fatal during the shared start into a message that
// every later test can report.
type fatalCatcher struct {
	testing.TB
	msg string
}

func (f *fatalCatcher) Fatalf(format string, a ...any) {
	f.msg = fmt.Sprintf(format, a...)
	panic(f.msg)
}

func (f *fatalCatcher) Fatal(a ...any) {
	f.msg = fmt.Sprint(a...)
	panic(f.msg)
}

// wait follows an attempt's event stream to its end and returns the final
// attempt.
func wait(t *testing.T, c *client.Client, id string) apitype.Attempt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	es, err := c.Events(ctx, id)
	if err != nil {
		t.Fatalf("events of %s: %v", id, err)
	}
	defer es.Close()
	for {
		ev, err := es.Next()
		if err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		if ev.Done {
			if ev.Final == nil {
				t.Fatalf("last event of %s has no final attempt", id)
			}
			return *ev.Final
		}
	}
}

// want is a known attempt and its expected verdict.
type want struct {
	task, agent string
	expect      tasks.Expect
}

func knownAttempts(t *testing.T) []want {
	all, err := tasks.LoadAll(tasksDir)
	if err != nil {
		t.Fatal(err)
	}
	var ws []want
	for _, task := range all {
		ws = append(ws, want{task.ID, apitype.AgentReference, task.Reference().Expect})
		for _, a := range task.Attempts {
			ws = append(ws, want{task.ID, apitype.AgentAttemptPrefix + a.Name, a.Expect})
		}
	}
	return ws
}

func codes(a apitype.Attempt) []string {
	var cs []string
	for _, r := range a.Reasons {
		cs = append(cs, r.Code)
	}
	return cs
}

// matches reports whether a got the verdict w expects.
func (w want) matches(a apitype.Attempt) bool {
	return a.State == apitype.StateDone && a.Pass == w.expect.Pass &&
		(w.expect.Pass || slices.Contains(codes(a), w.expect.Code))
}

// TestTasksCheck: every task's reference passes and every known attempt
// gets its expected verdict, through POST /v1/tasks/check.
func TestTasksCheck(t *testing.T) {
	d := shared(t)
	// About a hundred gradings, RT-04's among them: generous, for a slow
	// or loaded host.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := d.client.CheckTasks(ctx, "")
	t.Logf("tasks check took %v", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	ws := knownAttempts(t)
	if len(res.Results) != len(ws) {
		t.Fatalf("check results: got %d, want %d (the reference and every known attempt of every task)", len(res.Results), len(ws))
	}
	refs := 0
	for i, r := range res.Results {
		w := ws[i]
		t.Run(r.Task+"/"+strings.TrimPrefix(r.Agent, "builtin:"), func(t *testing.T) {
			if r.Task != w.task || r.Agent != w.agent {
				t.Fatalf("result %d: got %s %s, want %s %s", i, r.Task, r.Agent, w.task, w.agent)
			}
			a, err := d.client.Attempt(ctx, r.Attempt)
			if err != nil {
				t.Fatal(err)
			}
			if !r.OK || !w.matches(a) {
				t.Errorf("verdict: got state %s pass %v codes %v (%s), want pass %v code %q",
					a.State, a.Pass, codes(a), a.InfraError, w.expect.Pass, w.expect.Code)
			}
		})
		if r.Agent == apitype.AgentReference && r.OK {
			refs++
		}
	}
	if refs < 6 {
		t.Errorf("references that passed: got %d, want all six tasks", refs)
	}
	if allOK := !slices.ContainsFunc(res.Results, func(r apitype.CheckResult) bool { return !r.OK }); res.OK != allOK {
		t.Errorf("check ok: got %v, want %v", res.OK, allOK)
	}
}

// TestEightAtOnce: eight attempts submitted at the same moment, of four
// tasks, passing and failing, all get their verdicts.
func TestEightAtOnce(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	d := startDaemon(t, dir, "--concurrency", "8")
	defer d.stop(t)
	ctx := context.Background()
	var ws []want
	for _, ta := range [][2]string{
		{"rt-01", "reference"}, {"rt-01", "edits-tests"},
		{"rt-02", "reference"}, {"rt-02", "untouched"},
		{"rt-03", "reference"}, {"rt-03", "untouched"},
		{"rt-05", "reference"}, {"rt-05", "starter"},
	} {
		task, err := tasks.Find(tasksDir, ta[0])
		if err != nil {
			t.Fatal(err)
		}
		known, err := task.Attempt(ta[1])
		if err != nil {
			t.Fatal(err)
		}
		agent := apitype.AgentAttemptPrefix + ta[1]
		if ta[1] == "reference" {
			agent = apitype.AgentReference
		}
		ws = append(ws, want{ta[0], agent, known.Expect})
	}
	ids := make([]string, len(ws))
	var wg sync.WaitGroup
	errs := make([]error, len(ws))
	for i, w := range ws {
		wg.Go(func() {
			run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: w.task, Agent: w.agent})
			if err == nil {
				ids[i] = run.Attempts[0]
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	maxRunning := 0
	for {
		st, err := d.client.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		maxRunning = max(maxRunning, st.Running)
		if st.Running == 0 && st.Queued == 0 || time.Since(start) > 2*time.Minute {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, w := range ws {
		a := wait(t, d.client, ids[i])
		if !w.matches(a) {
			t.Errorf("%s %s: got state %s pass %v codes %v (%s), want pass %v code %q",
				w.task, w.agent, a.State, a.Pass, codes(a), a.InfraError, w.expect.Pass, w.expect.Code)
		}
	}
	if maxRunning < 2 {
		t.Errorf("attempts running at once: got at most %d, want several", maxRunning)
	}
	t.Logf("8 attempts in %v, at most %d running at once", time.Since(start).Round(time.Millisecond), maxRunning)
}

// TestForensics: the event stream ends with the verdict, regrade agrees,
// and an exported archive passes benchctl verify until one byte changes.
func TestForensics(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentReference})
	if err != nil {
		t.Fatal(err)
	}
	id := run.Attempts[0]
	final := wait(t, d.client, id)
	if final.State != apitype.StateDone || !final.Pass || final.JournalHead == "" {
		t.Fatalf("reference attempt: got state %s pass %v head %q, want done, pass, a journal head", final.State, final.Pass, final.JournalHead)
	}
	stored, err := d.client.Attempt(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if stored.JournalHead != final.JournalHead || stored.Pass != final.Pass {
		t.Fatalf("stored attempt differs from the stream's last event: %+v vs %+v", stored, final)
	}

	rg, err := d.client.Regrade(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !rg.Same || !rg.After.Pass {
		t.Errorf("regrade: got same=%v after=%+v, want the same passing verdict", rg.Same, rg.After)
	}

	body, err := d.client.Export(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		t.Fatal(err)
	}
	names, offsets := tarIndex(t, archive)
	for _, want := range []string{"attempt.json", "task.json", "journal.jsonl", "transcript/stdout", "transcript/stderr"} {
		if !slices.Contains(names, want) {
			t.Fatalf("archive entries %v: %s is missing", names, want)
		}
	}
	blob := ""
	for _, n := range names {
		if strings.HasPrefix(n, "journal.jsonl.blobs/") && offsets[n][1] > 0 {
			blob = n
			break
		}
	}
	if blob == "" {
		t.Fatalf("archive entries %v: no blob", names)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tar")
	os.WriteFile(good, archive, 0o644)
	hk, err := d.client.HostKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := runBenchctl(t, nil, "verify", "--key", hk.PublicKey, good); code != 0 {
		t.Fatalf("benchctl verify of the untouched archive: exit %d, want 0\n%s", code, out)
	}
	// One byte changed: in the journal (a digit of the second record's
	// hash) and in a blob (its first byte).
	journalOff := offsets["journal.jsonl"]
	lines := archive[journalOff[0] : journalOff[0]+journalOff[1]]
	second := bytes.IndexByte(lines, '\n') + 1
	hashAt := bytes.Index(lines[second:], []byte(`"hash":"`))
	if hashAt < 0 {
		t.Fatal("no second record in the journal")
	}
	cases := []struct {
		name string
		at   int64
	}{
		{"journal byte", journalOff[0] + int64(second+hashAt+len(`"hash":"`))},
		{"blob byte", offsets[blob][0]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := bytes.Clone(archive)
			if bad[c.at] == '0' {
				bad[c.at] = '1'
			} else {
				bad[c.at] = '0'
			}
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".tar")
			os.WriteFile(p, bad, 0o644)
			out, code := runBenchctl(t, nil, "verify", p)
			if code != 1 {
				t.Fatalf("benchctl verify with one %s changed: exit %d, want 1 (fails)\n%s", c.name, code, out)
			}
		})
	}
}

// tarIndex returns the names in a tar and each entry's data offset and
// size.
func tarIndex(t *testing.T, archive []byte) ([]string, map[string][2]int64) {
	t.Helper()
	cr := &countReader{r: bytes.NewReader(archive)}
	tr := tar.NewReader(cr)
	var names []string
	offsets := map[string][2]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("export is not a tar: %v", err)
		}
		names = append(names, h.Name)
		offsets[h.Name] = [2]int64{cr.n, h.Size}
	}
	return names, offsets
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// runBenchctl runs benchctl against the shared socket, with cred when
// set, and returns its combined output and exit status.
func runBenchctl(t *testing.T, cred *syscall.Credential, args ...string) (string, int) {
	t.Helper()
	if sharedD != nil {
		args = append([]string{"--socket", sharedD.socket}, args...)
	}
	cmd := exec.Command(benchctl, args...)
	cmd.Dir = "/"
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// TestCancel: a running command agent is canceled promptly, and a second
// cancel is a conflict.
func TestCancel(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: "sleep 3600"})
	if err != nil {
		t.Fatal(err)
	}
	id := run.Attempts[0]
	waitPhase(t, d, id, apitype.PhaseRun)
	start := time.Now()
	a, err := d.client.Cancel(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != apitype.StateCanceled || a.Pass {
		t.Fatalf("canceled attempt: got state %s pass %v, want canceled, not passed", a.State, a.Pass)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("cancel took %v, want under 10 s", took)
	}
	if _, err := d.client.Cancel(ctx, id); !errors.Is(err, client.ErrConflict) {
		t.Errorf("second cancel: got %v, want a conflict", err)
	}
	if m := mountsUnder(t, filepath.Join(d.state, "attempts", id)); len(m) > 0 {
		t.Errorf("mounts left after cancel: %v", m)
	}
}

// waitPhase polls until attempt id is running in phase.
func waitPhase(t *testing.T, d *daemonProc, id, phase string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		a, err := d.client.Attempt(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if a.State == apitype.StateRunning && a.Phase == phase {
			return
		}
		if a.State != apitype.StateQueued && a.State != apitype.StateRunning {
			t.Fatalf("attempt %s ended (%s, %s) before phase %s", id, a.State, a.InfraError, phase)
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt %s not in phase %s after 60 s: %s %s", id, phase, a.State, a.Phase)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawDo sends one request on the socket without the client, so that the
// body can be anything.
func rawDo(t *testing.T, socket, method, path string, body io.Reader) (int, apitype.Error) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	req, err := http.NewRequest(method, "http://benchd"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e apitype.Error
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s %s: error body is not an apitype.Error: %q", method, path, b)
		}
	}
	return resp.StatusCode, e
}

// TestBadInput: each bad request gets its 4xx with a clear message, and
// nothing is queued or stored.
func TestBadInput(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	before, err := d.client.Attempts(ctx, client.AttemptFilter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	finished := ""
	for _, a := range before {
		if a.State == apitype.StateDone {
			finished = a.ID
		}
	}
	if finished == "" {
		run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentNull})
		if err != nil {
			t.Fatal(err)
		}
		finished = wait(t, d.client, run.Attempts[0]).ID
		before, _ = d.client.Attempts(ctx, client.AttemptFilter{Limit: 10000})
	}
	huge := `{"task":"rt-01","agent":"builtin:null","model":"` + strings.Repeat("m", apitype.MaxBodyBytes) + `"}`
	longAgent := `{"task":"rt-01","agent":"sleep ` + strings.Repeat("1", apitype.MaxAgentBytes-5) + `"}`
	var vars []string
	for i := range apitype.MaxEnvVars + 1 {
		vars = append(vars, fmt.Sprintf(`{"name":"V%d","value":"x"}`, i))
	}
	manyEnv := `{"task":"rt-01","agent":"builtin:null","env":[` + strings.Join(vars, ",") + `]}`
	bigEnv := `{"task":"rt-01","agent":"builtin:null","env":[{"name":"BIG","value":"` + strings.Repeat("v", apitype.MaxEnvValue+1) + `"}]}`
	run := func(body string) func() io.Reader { return func() io.Reader { return strings.NewReader(body) } }
	cases := []struct {
		name, method, path string
		body               func() io.Reader
		status             int
		code, msg          string
	}{
		{"unknown task", "POST", "/v1/runs", run(`{"task":"rt-99","agent":"builtin:null"}`), 404, apitype.CodeNotFound, "rt-99"},
		{"malformed JSON", "POST", "/v1/runs", run(`{"task":"rt-01",`), 400, apitype.CodeInvalid, "malformed JSON"},
		{"not an object", "POST", "/v1/runs", run(`["rt-01"]`), 400, apitype.CodeInvalid, "malformed JSON"},
		{"oversized JSON", "POST", "/v1/runs", run(huge), 413, apitype.CodeTooLarge, "over 1048576 bytes"},
		{"unknown field", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:null","priority":9}`), 400, apitype.CodeInvalid, `unknown field "priority"`},
		{"task id with path", "POST", "/v1/runs", run(`{"task":"../rt-01","agent":"builtin:null"}`), 400, apitype.CodeInvalid, "not valid"},
		{"task id absolute", "POST", "/v1/runs", run(`{"task":"/etc","agent":"builtin:null"}`), 400, apitype.CodeInvalid, "not valid"},
		{"no agent", "POST", "/v1/runs", run(`{"task":"rt-01"}`), 400, apitype.CodeInvalid, "no agent"},
		{"agent command missing", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"no-such-agent-cli --fast"}`), 400, apitype.CodeInvalid, "no-such-agent-cli"},
		{"unknown built-in", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:magic"}`), 400, apitype.CodeInvalid, "builtin:magic"},
		{"unknown known attempt", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:attempt:nope"}`), 400, apitype.CodeInvalid, "nope"},
		{"timeout too short", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:null","timeout":"10ms"}`), 400, apitype.CodeInvalid, "out of range"},
		{"timeout too long", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:null","timeout":"7h"}`), 400, apitype.CodeInvalid, "out of range"},
		{"timeout not a duration", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:null","timeout":"soon"}`), 400, apitype.CodeInvalid, "not a duration"},
		{"too many attempts", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:null","attempts":101}`), 400, apitype.CodeInvalid, "out of range"},
		{"negative attempts", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:null","attempts":-1}`), 400, apitype.CodeInvalid, "out of range"},
		{"agent command too long", "POST", "/v1/runs", run(longAgent), 400, apitype.CodeInvalid, "agent command of 4097 bytes: at most 4096"},
		{"too many env vars", "POST", "/v1/runs", run(manyEnv), 400, apitype.CodeInvalid, "65 environment variables: at most 64"},
		{"env value too large", "POST", "/v1/runs", run(bigEnv), 400, apitype.CodeInvalid, "BIG has a value of 65537 bytes: at most 65536"},
		{"bad env name", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:null","env":[{"name":"A=B","value":"x"}]}`), 400, apitype.CodeInvalid, "A=B"},
		{"bad gateway", "POST", "/v1/runs", run(`{"task":"rt-01","agent":"builtin:null","gateways":["model"]}`), 400, apitype.CodeInvalid, "gateway"},
		{"unknown attempt", "GET", "/v1/attempts/a-nope", nil, 404, apitype.CodeNotFound, "a-nope"},
		{"unknown run", "GET", "/v1/runs/r-nope", nil, 404, apitype.CodeNotFound, "r-nope"},
		{"bad blob hash", "GET", "/v1/attempts/" + finished + "/blobs/xyz", nil, 400, apitype.CodeInvalid, "sha256"},
		{"bad limit", "GET", "/v1/attempts?limit=-3", nil, 400, apitype.CodeInvalid, "limit"},
		{"check task with path", "POST", "/v1/tasks/check?task=..%2Fx", nil, 400, apitype.CodeInvalid, "not valid"},
		{"check unknown task", "POST", "/v1/tasks/check?task=rt-99", nil, 404, apitype.CodeNotFound, "rt-99"},
		{"cancel finished", "POST", "/v1/attempts/" + finished + "/cancel", nil, 409, apitype.CodeConflict, "already ended"},
		{"no such endpoint", "GET", "/v1/bogus", nil, 404, apitype.CodeNotFound, "no endpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != nil {
				body = c.body()
			}
			status, e := rawDo(t, d.socket, c.method, c.path, body)
			if status != c.status || e.Code != c.code || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %d %s %q, want %d %s with a message containing %q", status, e.Code, e.Message, c.status, c.code, c.msg)
			}
		})
	}
	after, err := d.client.Attempts(ctx, client.AttemptFilter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("attempts after the bad requests: got %d, want %d (nothing changed)", len(after), len(before))
	}
}

// TestQueueBound: with one worker busy, at most --max-queued attempts
// wait; a run beyond that is refused as busy with the numbers, one larger
// than the queue is invalid, and the queue takes runs again once it
// drains.
func TestQueueBound(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d := startDaemon(t, dir, "--concurrency", "1", "--max-queued", "2")
	defer d.stop(t)
	busy, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: "sleep 3600"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.client.Cancel(ctx, busy.Attempts[0])
	waitPhase(t, d, busy.Attempts[0], apitype.PhaseRun)

	status, e := rawDo(t, d.socket, "POST", "/v1/runs", strings.NewReader(`{"task":"rt-01","agent":"builtin:null","attempts":3}`))
	if want := "attempts 3 out of range [1, 2]"; status != 400 || e.Code != apitype.CodeInvalid || !strings.Contains(e.Message, want) {
		t.Errorf("3 attempts with --max-queued 2: got %d %s %q, want 400 invalid with %q", status, e.Code, e.Message, want)
	}
	waiting, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentNull, Attempts: 2})
	if err != nil {
		t.Fatalf("2 attempts into an empty queue of 2: %v", err)
	}
	status, e = rawDo(t, d.socket, "POST", "/v1/runs", strings.NewReader(`{"task":"rt-01","agent":"builtin:null"}`))
	if want := "2 attempts queued and 1 asked for, beyond the limit of 2 (benchd --max-queued)"; status != 503 || e.Code != apitype.CodeBusy || !strings.Contains(e.Message, want) {
		t.Errorf("a third attempt: got %d %s %q, want 503 busy with %q", status, e.Code, e.Message, want)
	}
	if _, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentNull}); !errors.Is(err, client.ErrBusy) {
		t.Errorf("a third attempt through the client: got %v, want client.ErrBusy", err)
	}
	if _, err := d.client.Cancel(ctx, busy.Attempts[0]); err != nil {
		t.Fatal(err)
	}
	for _, id := range waiting.Attempts {
		if a := wait(t, d.client, id); a.State != apitype.StateDone {
			t.Errorf("queued attempt %s: got state %s, want done", id, a.State)
		}
	}
	again, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentNull, Attempts: 2})
	if err != nil {
		t.Fatalf("2 attempts once the queue drained: %v", err)
	}
	for _, id := range again.Attempts {
		wait(t, d.client, id)
	}
	list, err := d.client.Attempts(ctx, client.AttemptFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 5 {
		t.Errorf("got %d attempts stored, want 5: the refused runs must store nothing", len(list))
	}
}

// TestCallers: peer credentials decide, whatever the socket's mode: root
// and members of the group (primary or supplementary) are served, anyone
// else gets 403 forbidden.
func TestCallers(t *testing.T) {
	d := shared(t)
	fi, err := os.Stat(d.socket)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o660 || st.Gid != callerGID {
		t.Errorf("socket: got mode %v gid %d, want 0660 and group %s (%d)", fi.Mode().Perm(), st.Gid, callerGroup, callerGID)
	}
	outsider := &syscall.Credential{Uid: 65534, Gid: 1, Groups: []uint32{}}
	// The socket's mode alone keeps the outsider out.
	if out, code := runBenchctl(t, outsider, "status"); code == 0 {
		t.Fatalf("outsider through a 0660 socket: exit 0, want a refusal\n%s", out)
	}
	// Open the socket to all, so that only the credential check stands.
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(d.socket, 0o660)
	cases := []struct {
		name  string
		cred  *syscall.Credential
		allow bool
	}{
		{"root", nil, true},
		{"primary group", &syscall.Credential{Uid: 65534, Gid: callerGID, Groups: []uint32{}}, true},
		{"supplementary group", &syscall.Credential{Uid: 65534, Gid: 1, Groups: []uint32{callerGID}}, true},
		{"outsider", outsider, false},
		{"outsider with other groups", &syscall.Credential{Uid: 65534, Gid: 1, Groups: []uint32{2, 3}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := runBenchctl(t, c.cred, "status", "--json")
			switch {
			case c.allow && code != 0:
				t.Fatalf("got exit %d, want 0\n%s", code, out)
			case c.allow && !strings.Contains(out, `"concurrency"`):
				t.Fatalf("got %q, want the status", out)
			case !c.allow && (code == 0 || !strings.Contains(out, "not in group")):
				t.Fatalf("got exit %d %q, want a refusal from benchd naming the group", code, out)
			}
		})
	}
}

// mountsUnder lists the mount points below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4]+" "+strings.Join(f[slices.Index(f, "-")+1:][:1], ""))
		}
	}
	return out
}

// cgroupsNamed lists cgroup directories, below this process's cgroups,
// whose name contains s.
func cgroupsNamed(t *testing.T, s string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var bases []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			bases = append(bases, filepath.Join("/sys/fs/cgroup/unified", parts[2]), filepath.Join("/sys/fs/cgroup", parts[2]))
			continue
		}
		ctrl := strings.TrimPrefix(parts[1], "name=")
		bases = append(bases, filepath.Join("/sys/fs/cgroup", ctrl, parts[2]))
	}
	var found []string
	for _, base := range bases {
		filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			if strings.Contains(e.Name(), s) && !slices.Contains(found, p) {
				found = append(found, p)
			}
			return nil
		})
	}
	return found
}

// processesWith lists pids whose command line is args, the program
// named by any path.
func processesWith(args ...string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		got := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(got) == len(args) && filepath.Base(got[0]) == args[0] && slices.Equal(got[1:], args[1:]) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCrashAndStop: kill -9 of benchd during an attempt, then a restart:
// the attempt is infra_error and nothing of it is left (mount, cgroup,
// namespace, process); the database opens and lists. Then SIGTERM during
// an attempt: benchd stops within its bound, the attempt is infra_error,
// nothing is left mounted.
func TestCrashAndStop(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d := startDaemon(t, dir, "--concurrency", "2")
	// A unique command line, to find its processes.
	sleeper := []string{"sleep", "3517"}
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: strings.Join(sleeper, " ")})
	if err != nil {
		d.kill()
		t.Fatal(err)
	}
	id := run.Attempts[0]
	waitPhase(t, d, id, apitype.PhaseRun)
	// Make sure the checks below can see what an attempt leaves.
	if m := mountsUnder(t, d.state); !slices.ContainsFunc(m, func(s string) bool { return strings.HasPrefix(strings.Fields(s)[1], "fuse") }) {
		t.Errorf("a running attempt has no FUSE view under the state dir: %v", m)
	}
	if cg := cgroupsNamed(t, id); len(cg) == 0 {
		t.Errorf("a running attempt has no cgroup named after it")
	}
	if p := processesWith(sleeper...); len(p) == 0 {
		t.Errorf("the agent process is not running")
	}

	d.kill() // kill -9
	d = startDaemon(t, dir, "--concurrency", "2")
	a, err := d.client.Attempt(ctx, id)
	if err != nil {
		d.kill()
		t.Fatal(err)
	}
	if a.State != apitype.StateInfraError || a.Pass || a.InfraError == "" {
		t.Errorf("attempt in flight at the crash: got state %s pass %v %q, want infra_error", a.State, a.Pass, a.InfraError)
	}
	if m := mountsUnder(t, d.state); len(m) > 0 {
		t.Errorf("mounts left under the state dir after restart: %v", m)
	}
	if cg := cgroupsNamed(t, id); len(cg) > 0 {
		t.Errorf("cgroups left after restart: %v", cg)
	}
	if p := processesWith(sleeper...); len(p) > 0 {
		t.Errorf("agent processes left after restart: %v", p)
	}
	if ns, _ := filepath.Glob(filepath.Join(d.state, "netns", "*"+id+"*")); len(ns) > 0 {
		t.Errorf("network namespaces left after restart: %v", ns)
	}
	list, err := d.client.Attempts(ctx, client.AttemptFilter{})
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Errorf("attempts after restart: got %d (%v), want the one attempt", len(list), err)
	}

	// SIGTERM during an attempt.
	run, err = d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: strings.Join(sleeper, " ")})
	if err != nil {
		d.kill()
		t.Fatal(err)
	}
	id2 := run.Attempts[0]
	waitPhase(t, d, id2, apitype.PhaseRun)
	took := d.stop(t)
	if took > 15*time.Second {
		t.Errorf("stop after SIGTERM took %v, want under 15 s", took)
	}
	t.Logf("SIGTERM with an attempt running: benchd stopped in %v", took.Round(time.Millisecond))
	if m := mountsUnder(t, d.state); len(m) > 0 {
		t.Errorf("mounts left under the state dir after SIGTERM: %v", m)
	}
	if p := processesWith(sleeper...); len(p) > 0 {
		t.Errorf("agent processes left after SIGTERM: %v", p)
	}
	if cg := cgroupsNamed(t, id2); len(cg) > 0 {
		t.Errorf("cgroups left after SIGTERM: %v", cg)
	}
	d = startDaemon(t, dir, "--concurrency", "2")
	defer d.stop(t)
	a, err = d.client.Attempt(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != apitype.StateInfraError || !strings.Contains(a.InfraError, "shut down") {
		t.Errorf("attempt running at SIGTERM: got state %s %q, want infra_error saying benchd shut down", a.State, a.InfraError)
	}
}

// TestUnitFile checks systemd/benchd.service with systemd-analyze verify,
// with the binary paths pointed at the benchd just built.
func TestUnitFile(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		if testenv.InCI() {
			t.Fatalf("systemd-analyze missing in CI: %v", err)
		}
		t.Skipf("skipping: needs systemd-analyze: %v", err)
	}
	if buildError != nil || benchdBin == "" {
		testenv.Require(t, testenv.Root)
		t.Fatalf("building the binaries: %v", buildError)
	}
	unit, err := os.ReadFile(filepath.Join(tasksDir, "..", "systemd", "benchd.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Type=notify", "Delegate=yes", "StateDirectory=benchd", "RuntimeDirectory=benchd",
		"ExecStart=/usr/local/bin/benchd", "ExecStopPost=/usr/local/bin/benchd cleanup", "KillMode=mixed", "TimeoutStopSec="} {
		if !bytes.Contains(unit, []byte("\n"+want)) {
			t.Errorf("benchd.service has no line %q", want)
		}
	}
	cases := []struct {
		name string
		edit func(string) string
		ok   bool
	}{
		{"as shipped", func(s string) string { return s }, true},
		{"binary missing", func(s string) string { return strings.ReplaceAll(s, benchdBin, "/nonexistent/benchd") }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "benchd.service")
			text := c.edit(strings.ReplaceAll(string(unit), "/usr/local/bin/benchd", benchdBin))
			os.WriteFile(p, []byte(text), 0o644)
			out, err := exec.Command("systemd-analyze", "verify", p).CombinedOutput()
			if got := err == nil && !bytes.Contains(out, []byte("benchd.service:")); got != c.ok {
				t.Fatalf("systemd-analyze verify: got ok=%v (%v), want %v\n%s", got, err, c.ok, out)
			}
		})
	}
}

// TestSysusers checks systemd/benchd.sysusers with a dry run of
// systemd-sysusers: it parses, and it creates the group benchd and the
// user benchd-agent where they are missing, and only then.
func TestSysusers(t *testing.T) {
	if _, err := exec.LookPath("systemd-sysusers"); err != nil {
		if testenv.InCI() {
			t.Fatalf("systemd-sysusers missing in CI: %v", err)
		}
		t.Skipf("skipping: needs systemd-sysusers: %v", err)
	}
	testenv.Require(t, testenv.Root)
	if buildError != nil {
		t.Fatalf("building the binaries: %v", buildError)
	}
	p, err := filepath.Abs(filepath.Join(tasksDir, "..", "systemd", "benchd.sysusers"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-sysusers", "--dry-run", p).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("ignoring")) || bytes.Contains(out, []byte("Failed")) {
		t.Fatalf("systemd-sysusers --dry-run: %v\n%s", err, out)
	}
	cases := []struct{ db, name, line string }{
		{"group", "benchd", "Creating group 'benchd'"},
		{"passwd", "benchd-agent", "Creating user 'benchd-agent'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exists := exec.Command("getent", c.db, c.name).Run() == nil
			// An existing account is left alone; a missing one is made.
			if got := bytes.Contains(out, []byte(c.line)); got == exists {
				t.Fatalf("dry run with %s %s existing=%v: got %q, want %q only when missing", c.db, c.name, exists, out, c.line)
			}
		})
	}
}

// benchctlOn runs benchctl against socket and returns its combined
// output and exit status, failing the test if it does not end within
// two minutes.
func benchctlOn(t *testing.T, socket string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, benchctl, append([]string{"--socket", socket}, args...)...)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("benchctl %v did not end within 2 minutes\n%s", args, out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// killBounded is kill -9 of benchd with a bounded wait: a benchd whose
// FUSE view is stuck must fail the test, not hang it.
func (d *daemonProc) killBounded(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-d.waited:
		d.waited <- err
	case <-time.After(time.Minute):
		t.Fatalf("benchd did not exit within a minute of SIGKILL\n%s", d.log.String())
	}
	d.notify.Close()
}

// stopBounded is SIGTERM of benchd with a bounded wait.
func (d *daemonProc) stopBounded(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.waited:
		d.waited <- err
		d.notify.Close()
	case <-time.After(2 * time.Minute):
		d.killBounded(t)
		t.Fatalf("benchd did not stop within 2 minutes of SIGTERM\n%s", d.log.String())
	}
}

// editThenSleep is an agent that edits RT-01's one writable file and
// then waits to be stopped; the sleep's argument makes its processes
// unique.
const editThenSleep = `sh -c 'echo "# edited before the end" >> src/counter.py; exec sleep 3527'`

// holdOpenThenSleep edits src/counter.py through a descriptor it keeps
// open while it sleeps: the edit goes through passthrough and no
// release records it before benchd dies.
const holdOpenThenSleep = `sh -c 'exec 3>>src/counter.py; echo "# edited before the end" >&3; exec sleep 3529'`

// startEditing starts an editThenSleep attempt and waits until its edit
// is in the journal file on disk (the writer syncs in batches).
func startEditing(t *testing.T, d *daemonProc) string {
	t.Helper()
	return startAgent(t, d, editThenSleep, journal.OpRelease)
}

// startAgent starts an attempt of agent on RT-01 and waits until the
// journal file on disk has an ok record of op on src/counter.py and the
// backing file holds the edit.
func startAgent(t *testing.T, d *daemonProc, agent string, op journal.Op) string {
	t.Helper()
	run, err := d.client.CreateRun(context.Background(), apitype.RunRequest{Task: "rt-01", Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	id := run.Attempts[0]
	waitPhase(t, d, id, apitype.PhaseRun)
	jpath := filepath.Join(d.state, "attempts", id, "journal.jsonl")
	backing := filepath.Join(d.state, "attempts", id, "backing", "src", "counter.py")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		recs, _ := journal.Read(jpath) // complete lines only
		b, _ := os.ReadFile(backing)
		for _, r := range recs {
			if r.Op == op && r.Path == "src/counter.py" && r.Result == "ok" && strings.Contains(string(b), "# edited before the end") {
				return id
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edit of attempt %s is not in %s after 2 minutes (%d records)", id, jpath, len(recs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkKeptJournal checks what benchctl shows of an attempt cut short:
// log lists the edit and the interrupted record naming cause and says
// the chain verifies, diff shows the edit, and an export verifies.
func checkKeptJournal(t *testing.T, socket, id, cause string) {
	t.Helper()
	out, code := benchctlOn(t, socket, "log", id)
	if code != 0 {
		t.Fatalf("benchctl log %s: exit %d, want 0\n%s", id, code, out)
	}
	for _, want := range []string{"release", "src/counter.py", "interrupted", "unmount"} {
		if !strings.Contains(out, want) {
			t.Errorf("benchctl log %s does not show %q:\n%s", id, want, out)
		}
	}
	out, code = benchctlOn(t, socket, "--json", "log", id)
	var lr struct {
		Verified bool             `json:"verified"`
		Records  []journal.Record `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &lr); err != nil || code != 0 {
		t.Fatalf("benchctl --json log %s: exit %d, %v\n%s", id, code, err, out)
	}
	if !lr.Verified {
		t.Errorf("benchctl log %s: the journal is not verified", id)
	}
	interrupted := slices.IndexFunc(lr.Records, func(r journal.Record) bool { return r.Op == journal.OpInterrupted })
	if interrupted < 0 || !strings.Contains(lr.Records[interrupted].Name, cause) || lr.Records[len(lr.Records)-1].Op != journal.OpUnmount {
		t.Errorf("benchctl log %s: want an interrupted record mentioning %q, then the unmount, got %+v", id, cause, lr.Records)
	}
	out, code = benchctlOn(t, socket, "diff", id)
	if code != 0 || !strings.Contains(out, "# edited before the end") {
		t.Errorf("benchctl diff %s: exit %d, want 0 and the edit\n%s", id, code, out)
	}
	archive := filepath.Join(t.TempDir(), id+".tar")
	if out, code := benchctlOn(t, socket, "export", id, "-o", archive); code != 0 {
		t.Fatalf("benchctl export %s: exit %d, want 0\n%s", id, code, out)
	}
	key, code := benchctlOn(t, socket, "key")
	if code != 0 {
		t.Fatalf("benchctl key: exit %d\n%s", code, key)
	}
	// With the key: without one verify exits 3, the signer unchecked.
	if out, code := benchctlOn(t, socket, "verify", "--key", strings.TrimSpace(key), archive); code != 0 {
		t.Errorf("benchctl verify of the export of %s: exit %d, want 0\n%s", id, code, out)
	}
}

// TestJournalSurvives: the journal of an attempt whose benchd is killed
// with SIGKILL while the agent runs is sealed at the next start (also
// when the edited file is still open, its content then observed at
// recovery), and that of a canceled attempt and of one running at
// SIGTERM when benchd stops; each shows the edit made before the end in
// benchctl log and diff, and exports an archive that verifies.
func TestJournalSurvives(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	d := startDaemon(t, dir, "--concurrency", "1")

	killed := startEditing(t, d)
	d.killBounded(t)
	d = startDaemon(t, dir, "--concurrency", "1")
	a, err := d.client.Attempt(context.Background(), killed)
	if err != nil {
		d.killBounded(t)
		t.Fatal(err)
	}
	if a.State != apitype.StateInfraError || a.JournalHead == "" || len(a.Changeset) != 1 {
		t.Errorf("attempt killed with benchd: got state %s head %q changeset %+v, want infra_error with a journal head and the edit", a.State, a.JournalHead, a.Changeset)
	}
	t.Run("kill -9", func(t *testing.T) { checkKeptJournal(t, d.socket, killed, "sealed at the next start") })

	// The same with the edited file still open at the kill: recovery
	// records what the backing file holds.
	open := startAgent(t, d, holdOpenThenSleep, journal.OpOpen)
	d.killBounded(t)
	d = startDaemon(t, dir, "--concurrency", "1")
	t.Run("kill -9, file open", func(t *testing.T) {
		checkKeptJournal(t, d.socket, open, "sealed at the next start")
		out, _ := benchctlOn(t, d.socket, "--json", "log", open)
		var lr struct {
			Records []journal.Record `json:"records"`
		}
		json.Unmarshal([]byte(out), &lr)
		found := false
		for _, r := range lr.Records {
			found = found || r.Op == journal.OpRelease && r.Path == "src/counter.py" && r.Flags == journal.ReleaseAtRecovery
		}
		if !found {
			t.Errorf("no release of src/counter.py observed at recovery in %+v", lr.Records)
		}
	})

	canceled := startEditing(t, d)
	if out, code := benchctlOn(t, d.socket, "cancel", canceled); code != 0 {
		t.Errorf("benchctl cancel %s: exit %d, want 0\n%s", canceled, code, out)
	}
	t.Run("cancel", func(t *testing.T) { checkKeptJournal(t, d.socket, canceled, "canceled") })

	stopped := startEditing(t, d)
	d.stopBounded(t)
	d = startDaemon(t, dir, "--concurrency", "1")
	defer d.stopBounded(t)
	t.Run("SIGTERM", func(t *testing.T) { checkKeptJournal(t, d.socket, stopped, "shut down") })
}

// TestSecretScrubbed: an agent echoes its --env secret to stdout and
// stderr and asks DNS for a name made of it; the stored transcript (and
// its capture files), benchctl show, the export archive and benchd's log
// hold the marker, never the value.
func TestSecretScrubbed(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	secret := fmt.Sprintf("tok-%d-e2e-secret", time.Now().UnixNano())
	const marker = "[env BENCH_TOKEN]"
	agent := `sh -c 'echo "out $BENCH_TOKEN"; echo "err $BENCH_TOKEN" >&2; getent hosts "$BENCH_TOKEN.example"; exit 0'`
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: agent,
		Env: []apitype.EnvVar{{Name: "BENCH_TOKEN", Value: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	id := run.Attempts[0]
	if a := wait(t, d.client, id); a.State != apitype.StateDone {
		t.Fatalf("attempt: got state %s (%s), want done", a.State, a.InfraError)
	}

	tr, err := d.client.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Stdout != "out "+marker+"\n" || !strings.Contains(tr.Stderr, "err "+marker+"\n") {
		t.Errorf("transcript: got stdout %q, stderr %q, want the marker where the agent printed its secret", tr.Stdout, tr.Stderr)
	}
	for _, f := range []string{"stdout", "stderr"} {
		b, err := os.ReadFile(filepath.Join(d.state, "attempts", id, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the capture file %s in the state directory holds the secret: %q", f, b)
		}
	}
	show, code := runBenchctl(t, nil, "show", id)
	if code != 1 && code != 0 {
		t.Fatalf("benchctl show: exit %d\n%s", code, show)
	}
	showJSON, _ := runBenchctl(t, nil, "--json", "show", id)
	if !strings.Contains(show, marker+".example") {
		t.Errorf("benchctl show: want the DNS query as %s.example:\n%s", marker, show)
	}
	body, err := d.client.Export(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(archive, []byte("out "+marker)) {
		t.Errorf("the export's transcript lacks the marker")
	}
	for what, text := range map[string]string{"benchctl show": show, "benchctl show --json": showJSON, "the export": string(archive), "benchd's log": d.log.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the secret value", what)
		}
	}
}
