package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"benchd.dev/sandbox"
	"golang.org/x/sys/unix"
)

// TestIdentity checks the agent's credentials: nobody, no groups, no
// capability in any set, no_new_privs; and that it runs in its own pid
// namespace under an init.
func TestIdentity(t *testing.T) {
	r := newRig(t, testenv.Python)
	res, out, errOut := r.run(r.py(`
import os, json, ctypes, resource, errno
libc = ctypes.CDLL(None, use_errno=True)
def keyring():
    # keyctl(KEYCTL_GET_KEYRING_ID, @s, 0): the filter refuses keyctl.
    if libc.syscall(250, 0, -3, 0) >= 0:
        return "reachable"
    return errno.errorcode[ctypes.get_errno()]
st = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    st[k] = v.strip()
print(json.dumps({"uid": list(os.getresuid()), "gid": list(os.getresgid()),
    "groups": os.getgroups(), "status": st, "pid1": open("/proc/1/cmdline").read(),
    "ppid": os.getppid(), "cwd": os.getcwd(), "home": os.environ.get("HOME"),
    "hostname": os.uname().nodename, "run": os.listdir("/run"),
    "keyring": keyring(), "core": list(resource.getrlimit(resource.RLIMIT_CORE))}))
`))
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got struct {
		UID, GID []int
		Groups   []int
		Status   map[string]string
		Pid1     string
		Ppid     int
		Cwd      string
		Home     string
		Hostname string
		Run      []string
		Keyring  string
		Core     []int
	}
	decode(t, out, errOut, &got)
	// No keyring at all: keyctl is refused (the init also gives the
	// agent a session keyring of its own, which cannot be looked at).
	if got.Keyring != "EPERM" {
		t.Errorf("got keyctl of the session keyring %q, want EPERM", got.Keyring)
	}
	if len(got.Core) != 2 || got.Core[0] != 0 || got.Core[1] != 0 {
		t.Errorf("got RLIMIT_CORE %v, want [0 0]", got.Core)
	}
	if len(got.Run) != 0 {
		t.Errorf("got /run entries %v, want none of the host's", got.Run)
	}
	for _, id := range append(got.UID, got.GID...) {
		if id != nobody {
			t.Errorf("got uids %v gids %v, want all %d", got.UID, got.GID, nobody)
			break
		}
	}
	if len(got.Groups) != 0 {
		t.Errorf("got supplementary groups %v, want none", got.Groups)
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if got.Status[k] != "0000000000000000" {
			t.Errorf("got %s %s, want 0000000000000000", k, got.Status[k])
		}
	}
	if got.Status["NoNewPrivs"] != "1" {
		t.Errorf("got NoNewPrivs %q, want 1", got.Status["NoNewPrivs"])
	}
	if !strings.HasPrefix(got.Pid1, "benchd-sandbox-init") || got.Ppid != 1 {
		t.Errorf("got pid 1 %q and parent %d, want the sandbox init as parent 1", got.Pid1, got.Ppid)
	}
	if got.Cwd != sandbox.WorkspacePath || got.Home != sandbox.DefaultHome || got.Hostname != "sandbox" {
		t.Errorf("got cwd %q home %q hostname %q, want %q %q %q", got.Cwd, got.Home, got.Hostname,
			sandbox.WorkspacePath, sandbox.DefaultHome, "sandbox")
	}
}

// TestWrites checks that the agent can write its workspace, /tmp and
// $HOME, and nothing else.
func TestWrites(t *testing.T) {
	r := newRig(t, testenv.Python)
	extra := filepath.Join(r.dir, "extra")
	if err := os.Mkdir(extra, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(extra, 0o777)
	cfg := r.py(`
import os, json, errno
res = {}
for p in ["/workspace/new.txt", "/tmp/new.txt", os.environ["HOME"] + "/new.txt",
          "/new.txt", "/etc/new.txt", "/usr/new.txt", "/var/tmp/new.txt", "/root/new.txt",
          "/dev/new.txt", "/extra/new.txt", "/dev/shm/new.txt", "/proc/new.txt", "/sys/new.txt"]:
    try:
        with open(p, "w") as f:
            f.write("x")
        res[p] = "ok"
    except OSError as e:
        res[p] = errno.errorcode[e.errno]
print(json.dumps(res))
`)
	cfg.Binds = []sandbox.Bind{{Source: extra, Target: "/extra"}}
	res, out, errOut := r.run(cfg)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got map[string]string
	decode(t, out, errOut, &got)
	want := map[string]string{
		"/workspace/new.txt":  "ok",
		"/tmp/new.txt":        "ok",
		"/home/agent/new.txt": "ok",
		"/dev/shm/new.txt":    "ok",
		"/new.txt":            "EROFS",
		"/etc/new.txt":        "EROFS",
		"/usr/new.txt":        "EROFS",
		"/var/tmp/new.txt":    "ENOENT",
		"/root/new.txt":       "ENOENT",
		"/dev/new.txt":        "EROFS|EACCES",
		"/extra/new.txt":      "EROFS",
		"/proc/new.txt":       "EACCES|ENOENT",
		"/sys/new.txt":        "ENOENT",
	}
	for p, w := range want {
		if !strings.Contains("|"+w+"|", "|"+got[p]+"|") {
			t.Errorf("write %s: got %q, want %s", p, got[p], w)
		}
	}
	if b, err := os.ReadFile(filepath.Join(r.ws, "new.txt")); err != nil || string(b) != "x" {
		t.Errorf("workspace file on the host: got %q, %v; want \"x\"", b, err)
	}
	if _, err := os.Stat(filepath.Join(extra, "new.txt")); err == nil {
		t.Errorf("a read-only bind was written through")
	}
}

// TestMasks hides a state directory, a task store and a hidden test file
// that are otherwise world-readable on the host, and looks for them by
// every path at hand: directly, through a symlink, through a bind of a
// parent, through a second mount of the state directory on the host,
// through /proc/*/root and /proc/*/cwd, and by walking the tree. The
// host paths are not in the allow-listed root at all; the bind of their
// parent shows them, masked.
func TestMasks(t *testing.T) {
	r := newRig(t, testenv.Python)
	top, err := os.MkdirTemp("/var/tmp", "benchd-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	secret := "SECRET" + r.marker
	files := map[string]string{
		"state/benchd.db":                  secret + "-state",
		"state/views/attempt-2/notes":      secret + "-view",
		"tasks/rt-01/tests/test_hidden.py": secret + "-store",
		"tasks/rt-01/tests/golden/out.txt": secret + "-golden",
		"hidden_test.py":                   secret + "-hidden",
		"visible.txt":                      "VISIBLE" + r.marker,
	}
	for name, content := range files {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(top, "state"), filepath.Join(top, "state-link")); err != nil {
		t.Fatal(err)
	}
	// A second mount of the state directory on the host.
	alias := filepath.Join(top, "alias")
	if err := os.Mkdir(alias, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Join(top, "state"), alias, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(alias, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the alias: %v", err)
		}
		if ms := hostMountsUnder(t, top); len(ms) > 0 {
			t.Errorf("mounts left after the test: %v", ms)
		}
	})

	cfg := r.py(`
import os, sys, json, stat
top, mark = sys.argv[2], sys.argv[1]
rels = ["state/benchd.db", "state/views/attempt-2/notes", "tasks/rt-01/tests/test_hidden.py",
        "tasks/rt-01/tests/golden/out.txt", "hidden_test.py", "visible.txt"]
prefixes = [top, "/data", top + "/state-link/..", "/workspace/../" + top, "/proc/self/root" + top,
            "/proc/1/root" + top, "/proc/1/cwd/.." + top, "/proc/self/cwd/.." + top, "/proc/thread-self/root" + top,
            "/proc/self/root/data", "/proc/thread-self/root/data", "/workspace/../data", "/proc/self/cwd/../data"]
for pid in os.listdir("/proc"):
    if pid.isdigit():
        prefixes.append("/proc/%s/root%s" % (pid, top))
found, errors = {}, {}
def look(p):
    try:
        if not stat.S_ISREG(os.stat(p).st_mode):
            return
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        data = os.read(fd, 4096)
        os.close(fd)
    except OSError as e:
        errors[p] = e.strerror
        return
    if b"SECRET" + mark.encode() in data or b"VISIBLE" + mark.encode() in data:
        found[p] = data.decode(errors="replace")
for pre in prefixes:
    for rel in rels:
        look(pre + "/" + rel)
for p in [top + "/state-link/benchd.db", top + "/alias/benchd.db", "/data/alias/benchd.db",
          "/data/state-link/benchd.db", top + "/alias/views/attempt-2/notes"]:
    look(p)
for root in [top, "/data", "/tmp", "/home", "/workspace", "/dev/shm"]:
    for d, _, names in os.walk(root):
        for n in names:
            look(os.path.join(d, n))
listing = {}
for d in [top, top + "/state", top + "/tasks", "/data/state", "/data/tasks", top + "/alias", "/data/alias"]:
    try:
        listing[d] = sorted(os.listdir(d))
    except OSError as e:
        listing[d] = e.strerror
print(json.dumps({"found": found, "listing": listing}))
`)
	cfg.Args = append(cfg.Args, top)
	cfg.Mask = []string{filepath.Join(top, "state"), filepath.Join(top, "tasks"), filepath.Join(top, "hidden_test.py")}
	cfg.Binds = []sandbox.Bind{{Source: top, Target: "/data"}}
	res, out, errOut := r.run(cfg)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got struct {
		Found   map[string]string
		Listing map[string]any
	}
	decode(t, out, errOut, &got)
	visible := 0
	for p, content := range got.Found {
		if strings.HasPrefix(content, "VISIBLE") {
			visible++
			continue
		}
		t.Errorf("masked content %q readable at %s", content, p)
	}
	// The control: the unmasked file beside them is seen, so the paths
	// tried do reach the host's tree.
	t.Logf("the unmasked control file was read at %d paths", visible)
	if visible < 4 {
		t.Errorf("the unmasked control file was found at %d paths, want at least 4: %v", visible, got.Found)
	}
	// Through the bind, masked directories are empty; by their host
	// paths they are not there at all (the root is an allow-list).
	for _, d := range []string{"/data/state", "/data/tasks", "/data/alias"} {
		if l, ok := got.Listing[d].([]any); !ok || len(l) != 0 {
			t.Errorf("listing of masked %s: got %v, want empty", d, got.Listing[d])
		}
	}
	for _, d := range []string{top, filepath.Join(top, "state"), filepath.Join(top, "tasks"), filepath.Join(top, "alias")} {
		if got.Listing[d] != "No such file or directory" {
			t.Errorf("listing of the host's %s: got %v, want No such file or directory", d, got.Listing[d])
		}
	}
	if res.Signal != 0 {
		t.Errorf("got signal %v", res.Signal)
	}
}

// TestProcessIsolation checks that the agent cannot see, signal or trace
// a process outside the sandbox (this test process), nor trace or read
// its own init.
func TestProcessIsolation(t *testing.T) {
	r := newRig(t, testenv.Python)
	cfg := r.py(`
import os, sys, json, ctypes, errno, signal
target = int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
def ptrace(pid):
    if libc.ptrace(16, pid, None, None) == 0:   # PTRACE_ATTACH
        return "attached"
    return errno.errorcode[ctypes.get_errno()]
def kill(pid, sig):
    try:
        os.kill(pid, sig)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
def read(p):
    try:
        open(p, "rb").read()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
try:
    tids = [int(t) for t in os.listdir("/proc/1/task")]
except OSError as e:
    tids = []
print(json.dumps({
    "ptrace_init_threads": sorted(set(ptrace(t) for t in tids)) or ["no threads listed"],
    "kill_outside": kill(target, 0),
    "proc_outside": os.path.exists("/proc/%d" % target),
    "ptrace_outside": ptrace(target),
    "ptrace_init": ptrace(1),
    "kill_init": kill(1, 0),
    "init_environ": read("/proc/1/environ"),
    "init_root": read("/proc/1/root/etc/hostname"),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
}))
`)
	cfg.Args = append(cfg.Args, strconv.Itoa(os.Getpid()))
	res, out, errOut := r.run(cfg)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got struct {
		KillOutside   string `json:"kill_outside"`
		ProcOutside   bool   `json:"proc_outside"`
		PtraceOutside string `json:"ptrace_outside"`
		PtraceInit    string `json:"ptrace_init"`
		KillInit      string `json:"kill_init"`
		InitEnviron   string `json:"init_environ"`
		InitRoot      string `json:"init_root"`
		Pids          []int
		InitThreads   []string `json:"ptrace_init_threads"`
	}
	decode(t, out, errOut, &got)
	checks := []struct{ what, got, want string }{
		{"kill -0 of the test process", got.KillOutside, "ESRCH"},
		{"ptrace of the test process", got.PtraceOutside, "ESRCH"},
		{"ptrace of the init", got.PtraceInit, "EPERM"},
		{"kill -0 of the init", got.KillInit, "EPERM"},
		{"read /proc/1/environ", got.InitEnviron, "EACCES"},
		{"read /proc/1/root/...", got.InitRoot, "EACCES"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", c.what, c.got, c.want)
		}
	}
	// The init's threads include the one that dropped to the agent's
	// uid to start it: none can be traced.
	if len(got.InitThreads) != 1 || got.InitThreads[0] != "EPERM" {
		t.Errorf("ptrace of the init's threads: got %v, want [EPERM]", got.InitThreads)
	}
	if got.ProcOutside {
		t.Errorf("/proc/%d (the test process) is visible in the sandbox", os.Getpid())
	}
	if len(got.Pids) != 2 || got.Pids[0] != 1 {
		t.Errorf("got pids %v in the sandbox's /proc, want [1 agent]", got.Pids)
	}
}

// TestSetuid checks that a setuid-root binary in the workspace gives no
// privilege (the workspace is nosuid and the agent has no_new_privs), and
// what chmod u+s by the agent does.
func TestSetuid(t *testing.T) {
	r := newRig(t, testenv.Python)
	id, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(r.ws, "suid-id")
	if err := os.WriteFile(suid, id, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(suid, 0o4755); err != nil {
		t.Fatal(err)
	}
	// On the host, as nobody, the bit works: the test can fail.
	cmd := exec.Command("setpriv", "--reuid", strconv.Itoa(nobody), "--regid", strconv.Itoa(nobody), "--clear-groups", suid, "-u")
	if b, err := cmd.Output(); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("control: setuid id on the host as nobody printed %q, %v; want 0", b, err)
	}
	res, out, errOut := r.run(r.py(`
import os, json, subprocess, shutil, stat
euid = subprocess.run(["/workspace/suid-id", "-u"], capture_output=True, text=True).stdout.strip()
shutil.copy("/usr/bin/id", "/workspace/own-id")
try:
    os.chmod("/workspace/own-id", 0o4755)
    chmod = "ok"
except OSError as e:
    chmod = e.strerror
own = bool(os.stat("/workspace/own-id").st_mode & stat.S_ISUID)
opts = ""
for line in open("/proc/self/mountinfo"):
    f = line.split()
    if f[4] == "/workspace":
        opts = f[5]
print(json.dumps({"euid": euid, "chmod": chmod, "own_suid_bit": own, "opts": opts}))
`))
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got struct {
		Euid       string
		Chmod      string
		OwnSuidBit bool `json:"own_suid_bit"`
		Opts       string
	}
	decode(t, out, errOut, &got)
	if got.Euid != strconv.Itoa(nobody) {
		t.Errorf("setuid-root binary in the workspace ran with euid %q, want %d", got.Euid, nobody)
	}
	if !strings.Contains(","+got.Opts+",", ",nosuid,") {
		t.Errorf("workspace mount options %q, want nosuid", got.Opts)
	}
	t.Logf("chmod u+s by the agent on its own file: %s (bit set: %v); without effect either way", got.Chmod, got.OwnSuidBit)
}

// TestSignalForwarded checks that SIGTERM to the sandbox reaches the
// agent, whose exit status becomes the result.
func TestSignalForwarded(t *testing.T) {
	r := newRig(t, testenv.Python)
	// Short sleeps, not one long one: CPython runs a Python handler
	// only between bytecodes, so a signal that lands after its last
	// check and before clock_nanosleep starts waits for the whole sleep
	// (seen under emulation, where that window is wide).
	s, err := sandbox.Start(context.Background(), r.py(`
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(42))
open("/workspace/ready", "w").close()
for _ in range(600):
    time.sleep(0.1)
`))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(r.ws, "ready")); err == nil {
			break
		}
		if i > 500 {
			s.Signal(unix.SIGKILL)
			s.Wait(context.Background())
			t.Fatal("the agent never got ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	type waited struct {
		res sandbox.Result
		err error
	}
	done := make(chan waited, 1)
	go func() {
		res, err := s.Wait(context.Background())
		done <- waited{res, err}
	}()
	var w waited
	select {
	case w = <-done:
	case <-time.After(15 * time.Second):
		// Still running long after the signal: say where it stopped
		// (the signal masks and pending sets of the init's threads and
		// of its children) before the deadline ends it.
		t.Logf("15 s after SIGTERM the sandbox still runs:\n%s", signalState(s.Pid()))
		w = <-done
	}
	if w.err != nil {
		t.Fatal(w.err)
	}
	if res := w.res; res.ExitCode != 42 || res.Signal != 0 || res.DeadlineHit {
		t.Errorf("got %+v, want exit 42 by the agent's handler", res)
	}
}

// signalState describes the signal fields of /proc/PID/task/*/status for
// pid and each of its children.
func signalState(pid int) string {
	var b strings.Builder
	var walk func(pid, depth int)
	walk = func(pid, depth int) {
		tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*"))
		for _, task := range tasks {
			status, _ := os.ReadFile(filepath.Join(task, "status"))
			var fields []string
			for _, line := range strings.Split(string(status), "\n") {
				for _, k := range []string{"Name:", "State:", "Uid:", "SigQ:", "SigPnd:", "ShdPnd:", "SigBlk:", "SigIgn:", "SigCgt:"} {
					if strings.HasPrefix(line, k) {
						fields = append(fields, strings.Join(strings.Fields(line), " "))
					}
				}
			}
			wchan, _ := os.ReadFile(filepath.Join(task, "wchan"))
			fmt.Fprintf(&b, "%s%s: %s; wchan %s\n", strings.Repeat("  ", depth), task, strings.Join(fields, "; "), wchan)
		}
		for _, task := range tasks {
			children, _ := os.ReadFile(filepath.Join(task, "children"))
			for _, c := range strings.Fields(string(children)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n, depth+1)
				}
			}
		}
	}
	walk(pid, 0)
	return b.String()
}

// TestStartErrors checks the errors of Start and that a failed Start
// leaves nothing behind.
func TestStartErrors(t *testing.T) {
	r := newRig(t)
	masked := filepath.Join(r.dir, "masked")
	if err := os.MkdirAll(filepath.Join(masked, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(r.dir, "linked")
	os.WriteFile(linked, []byte("x"), 0o644)
	os.Link(linked, linked+"2")
	joinErr := errors.New("join refused")
	var joined int
	tests := []struct {
		name   string
		modify func(*sandbox.Config)
		want   error
	}{
		{"no command", func(c *sandbox.Config) { c.Args = nil }, sandbox.ErrInvalid},
		{"uid 0", func(c *sandbox.Config) { c.UID = 0 }, sandbox.ErrInvalid},
		{"missing mask", func(c *sandbox.Config) { c.Mask = []string{filepath.Join(r.dir, "nope")} }, sandbox.ErrInvalid},
		{"hard-linked mask", func(c *sandbox.Config) { c.Mask = []string{linked} }, sandbox.ErrInvalid},
		{"bind inside a mask", func(c *sandbox.Config) {
			c.Mask = []string{masked}
			c.Binds = []sandbox.Bind{{Source: filepath.Join(masked, "sub"), Target: "/sub"}}
		}, sandbox.ErrInvalid},
		{"workspace inside a mask", func(c *sandbox.Config) { c.Mask = []string{r.dir} }, sandbox.ErrInvalid},
		{"home hiding /usr", func(c *sandbox.Config) { c.Home = "/usr/agent" }, sandbox.ErrInvalid},
		{"home in the workspace", func(c *sandbox.Config) { c.Home = "/workspace/home" }, sandbox.ErrInvalid},
		{"relative bind target", func(c *sandbox.Config) {
			c.Binds = []sandbox.Bind{{Source: r.ws, Target: "data"}}
		}, sandbox.ErrInvalid},
		{"command not found", func(c *sandbox.Config) { c.Args = []string{"no-such-command"} }, sandbox.ErrSetup},
		{"not executable", func(c *sandbox.Config) { c.Args = []string{"/etc/passwd"} }, sandbox.ErrSetup},
		{"file under read-only host dir", func(c *sandbox.Config) {
			c.Files = []sandbox.File{{Path: "/usr/no-such-dir/f", Data: []byte("x")}}
		}, sandbox.ErrSetup},
		{"join fails", func(c *sandbox.Config) {
			c.Join = func(pid int) error { joined = pid; return joinErr }
		}, sandbox.ErrSetup},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := r.config("/bin/true")
			tt.modify(&cfg)
			s, err := sandbox.Start(context.Background(), cfg)
			if err == nil {
				s.Wait(context.Background())
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("got error %v, want %v", err, tt.want)
			}
		})
	}
	if joined == 0 {
		t.Fatal("Join was never called")
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(joined)); err == nil {
		t.Errorf("the init (pid %d) outlived the failed Start", joined)
	}
}

// TestNewNetns checks the sandbox's own network namespace when none is
// given: lo is up, the host's loopback is out of reach.
func TestNewNetns(t *testing.T) {
	r := newRig(t, testenv.Python)
	ln, err := listenLoopback(t)
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.py(`
import socket, sys, json, errno
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname(), timeout=2)
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=2)
    host = "connected"
except OSError as e:
    host = errno.errorcode.get(e.errno, str(e))
print(json.dumps({"lo": "ok", "host": host}))
`)
	cfg.Args = append(cfg.Args, strconv.Itoa(ln))
	res, out, errOut := r.run(cfg)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got struct{ Lo, Host string }
	decode(t, out, errOut, &got)
	if got.Lo != "ok" || got.Host != "ECONNREFUSED" {
		t.Errorf("got lo %q, host listener %q; want ok, ECONNREFUSED", got.Lo, got.Host)
	}
}

// listenLoopback starts a TCP listener on the host's 127.0.0.1 that
// accepts and closes connections, and returns its port.
func listenLoopback(t *testing.T) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, err
	}
	if err := unix.Listen(fd, 8); err != nil {
		return 0, err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, err
	}
	return sa.(*unix.SockaddrInet4).Port, nil
}

// TestFilesAndBinds checks that files and binds land where they are
// asked to, with the access they are given, and a custom $HOME.
func TestFilesAndBinds(t *testing.T) {
	r := newRig(t)
	rw := filepath.Join(r.dir, "rw")
	ro := filepath.Join(r.dir, "ro.txt")
	if err := os.Mkdir(rw, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(rw, nobody, nobody)
	if err := os.WriteFile(ro, []byte("read-only\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := r.config("/bin/sh", "-c", `set -e
cat /etc/hosts /tmp/made/for/you.txt /home/tester/ro.txt
echo ok > /home/tester/rw/out.txt
if echo x 2>/dev/null > /etc/hosts; then echo "hosts writable"; fi
if echo x 2>/dev/null > /home/tester/ro.txt; then echo "ro bind writable"; fi
echo "$HOME $(pwd) $(stat -c %u:%a "$HOME") $(stat -c %u:%a /tmp/made/for/you.txt)"`)
	cfg.Home = "/home/tester"
	cfg.Dir = "/tmp"
	cfg.Files = []sandbox.File{
		{Path: "/etc/hosts", Data: []byte("127.0.0.1 sandbox-test\n")},
		{Path: "/tmp/made/for/you.txt", Data: []byte("made\n")},
	}
	cfg.Binds = []sandbox.Bind{
		{Source: rw, Target: "/home/tester/rw", Writable: true},
		{Source: ro, Target: "/home/tester/ro.txt"},
	}
	res, out, errOut := r.run(cfg)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.ExitCode, out, errOut)
	}
	want := "127.0.0.1 sandbox-test\nmade\nread-only\n/home/tester /tmp 65534:700 0:444\n"
	if out != want {
		t.Errorf("got output %q, want %q", out, want)
	}
	if b, err := os.ReadFile(filepath.Join(rw, "out.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("writable bind on the host: got %q, %v; want \"ok\\n\"", b, err)
	}
}
