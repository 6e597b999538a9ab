package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"benchd.dev/sandbox"
	"golang.org/x/sys/unix"
)

// syscallProbes tries, each in a forked child, what the filter refuses,
// and prints the result of each: "ok" or the errno's name.
const syscallProbes = `
import ctypes, errno, json, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
buf = ctypes.create_string_buffer(256)
def sc(*a):
    r = libc.syscall(*[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
def clone_user():
    # clone(CLONE_NEWUSER|SIGCHLD) by number, as no libc wrapper would.
    r = libc.syscall(ctypes.c_long(56), ctypes.c_long(0x10000000 | 17), *[ctypes.c_long(0)] * 4)
    if r == 0:
        os._exit(0)
    if r < 0:
        return errno.errorcode[ctypes.get_errno()]
    os.waitpid(r, 0)
    return "ok"
probes = {
    "unshare_user": lambda: sc(272, 0x10000000),
    "unshare_net": lambda: sc(272, 0x40000000),
    "clone_user": clone_user,
    "clone3": lambda: sc(435, 0, 0),
    "mount": lambda: sc(165, b"none", b"/nonexistent-benchd-probe", b"tmpfs", 0, 0),
    "keyctl": lambda: sc(250, 0, -3, 0),
    "bpf": lambda: sc(321, 0, buf, 72),
    "io_uring_setup": lambda: sc(425, 1, buf),
    "userfaultfd": lambda: sc(323, 1),
    "perf_event_open": lambda: sc(298, buf, 0, -1, -1, 0),
    "personality": lambda: sc(135, 0x0040000),
    "personality_query": lambda: sc(135, 0xffffffff),
    "x32_getpid": lambda: sc(0x40000000 | 39),
    "open_tree_attr": lambda: sc(467, -100, b"/", 0, 0, 0),
    "statmount": lambda: sc(457, 0, buf, 256, 0),
    "listmount": lambda: sc(458, 0, buf, 32, 0),
    "nr_1000": lambda: sc(1000),
    "vsock": lambda: sc(41, 40, 1, 0),
    "packet": lambda: sc(41, 17, 3, 0),
    "netlink_uevent": lambda: sc(41, 16, 2, 15),
    "netlink_route": lambda: sc(41, 16, 2, 0),
    "inet6": lambda: sc(41, 10, 1, 0),
    "unshare_cmd": lambda: "exit %d" % subprocess.run(["unshare", "-Ur", "true"], capture_output=True).returncode,
    "fork_exec": lambda: "exit %d" % subprocess.run(["true"]).returncode,
    "threads": lambda: (__import__("threading").Thread(target=lambda: None).start(), "ok")[1],
}
res = {}
for name, probe in probes.items():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, probe().encode())
        os._exit(0)
    os.close(w)
    res[name] = os.read(r, 100).decode()
    os.close(r)
    os.waitpid(pid, 0)
print(json.dumps(res))
`

// asNobody runs the python program prog on the host, outside any
// sandbox, as the uid the sandboxed programs use: the control that
// shows what a probe does without the sandbox.
func asNobody(t *testing.T, dir, prog string, args ...string) string {
	t.Helper()
	cmd := exec.Command("setpriv", append([]string{"--reuid", strconv.Itoa(nobody), "--regid", strconv.Itoa(nobody),
		"--clear-groups", "--inh-caps=-all", python, "-c", prog}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("control run on the host: %v\n%s", err, out)
	}
	return string(out)
}

// TestSyscallFilter: each call the filter refuses, tried by a hostile
// program, answers EPERM (clone3 and calls off the allow list ENOSYS, a
// socket family or netlink protocol off its list EAFNOSUPPORT or
// EPROTONOSUPPORT) in the sandbox, where on the
// host the same program, as the same uid, reaches the kernel and gets
// another answer (a user namespace, a keyring id, an io_uring, a
// different error). Forks and threads still work.
func TestSyscallFilter(t *testing.T) {
	r := newRig(t, testenv.Python)
	res, out, errOut := r.run(r.py(syscallProbes))
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got, host map[string]string
	decode(t, out, errOut, &got)
	hostOut := asNobody(t, r.dir, syscallProbes, r.marker)
	decode(t, hostOut, "", &host)
	tests := []struct {
		probe string
		want  string
		// differs: the host's answer must differ, so that the probe is
		// known to reach what the filter refuses.
		differs bool
		// since: the kernel that added the call; on an older host
		// kernel the host answers ENOSYS as well (nothing to reach),
		// and the sandbox's answer alone is checked.
		since string
	}{
		{"unshare_user", "EPERM", true, ""},
		{"unshare_net", "EPERM", false, ""}, // the host refuses it too: no CAP_SYS_ADMIN
		{"clone_user", "EPERM", true, ""},
		{"clone3", "ENOSYS", true, ""},
		{"mount", "EPERM", true, ""}, // the host looks the target up first: ENOENT
		{"keyctl", "EPERM", true, ""},
		// Kernels before 6.5 refuse bpf to the unprivileged before
		// looking at its arguments (unprivileged_bpf_disabled): the
		// host's answer is only logged.
		{"bpf", "EPERM", false, ""},
		{"io_uring_setup", "EPERM", true, ""},
		{"userfaultfd", "EPERM", true, ""},
		{"perf_event_open", "EPERM", true, ""},
		{"personality", "EPERM", true, ""},
		{"personality_query", "ok", false, ""},
		{"x32_getpid", "EPERM", true, ""},
		{"open_tree_attr", "EPERM", false, ""}, // kernels before 6.15 answer ENOSYS on the host
		{"statmount", "ENOSYS", true, "6.8"},
		{"listmount", "ENOSYS", true, "6.8"},
		{"nr_1000", "ENOSYS", false, ""},
		{"vsock", "EAFNOSUPPORT", false, ""}, // the host has it only with the vsock module
		{"packet", "EAFNOSUPPORT", true, ""}, // the host: EPERM, no CAP_NET_RAW
		{"netlink_uevent", "EPROTONOSUPPORT", true, ""},
		{"netlink_route", "ok", false, ""},
		{"inet6", "ok", false, ""},
		{"unshare_cmd", "exit 1", true, ""},
		{"fork_exec", "exit 0", false, ""},
		{"threads", "ok", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.probe, func(t *testing.T) {
			if got[tt.probe] != tt.want {
				t.Errorf("in the sandbox: got %q, want %q", got[tt.probe], tt.want)
			}
			absent := tt.since != "" && host[tt.probe] == "ENOSYS"
			if absent {
				t.Logf("the host's kernel has no %s (added in %s): only the sandbox's answer is checked", tt.probe, tt.since)
			}
			if tt.differs && !absent && host[tt.probe] == tt.want {
				t.Errorf("on the host, as uid %d: got %q too; the probe does not show the filter at work", nobody, host[tt.probe])
			}
			t.Logf("host %q, sandbox %q", host[tt.probe], got[tt.probe])
		})
	}
}

// rootSearch walks the sandbox's tree (not /usr, the host's own, nor
// /proc) for names and contents that carry the marker, .git directories,
// shadow files, /sys, and lists the top of the tree.
const rootSearch = `
import os, sys, json
mark = sys.argv[1].encode()
found, gits = [], []
for d, dirs, names in os.walk("/"):
    if d == "/":
        dirs[:] = [x for x in dirs if x not in ("usr", "proc")]
    for n in dirs:
        if n == ".git":
            gits.append(os.path.join(d, n))
    for n in dirs + names:
        p = os.path.join(d, n)
        if mark in n.encode():
            found.append(p)
    for n in names:
        p = os.path.join(d, n)
        if d.startswith("/dev") or not os.path.isfile(p) or os.path.islink(p):
            continue
        try:
            with open(p, "rb") as f:
                if mark in f.read(1 << 20):
                    found.append(p)
        except OSError:
            pass
def ls(p):
    try:
        return sorted(os.listdir(p))
    except OSError as e:
        return e.strerror
print(json.dumps({"found": found, "gits": gits, "root": ls("/"), "etc": ls("/etc"), "home": ls("/home"),
    "local": ls("/usr/local"), "sys": ls("/sys"), "var": ls("/var"),
    "shadow": [p for p in ("/etc/shadow", "/etc/gshadow", "/etc/shadow-") if os.path.lexists(p)],
    "passwd": open("/etc/passwd").read()}))
`

// TestRootAllowList plants what a hostile agent hunts for on a host: a
// task bundle copy under /var/tmp, a checkout with its .git under /home,
// a world-readable file in /etc, and checks, on the host as the agent's
// uid, that each is readable (the sandbox's old root, the host's /,
// showed them), then that the sandbox shows none of them: its root holds
// only the allow-list.
func TestRootAllowList(t *testing.T) {
	r := newRig(t, testenv.Python)
	secret := "leak" + r.marker
	planted := map[string]string{
		"/var/tmp/" + secret + "/rt-01/tests/test_hidden.py": "SOLUTION = '" + secret + "'\n",
		"/var/tmp/" + secret + "/rt-01/task.toml":            "[task]\nid = '" + secret + "'\n",
		"/home/" + secret + "/benchd/.git/HEAD":              "ref: refs/heads/" + secret + "\n",
		"/home/" + secret + "/benchd/.git/config":            "[core]\n# " + secret + "\n",
		"/etc/" + secret + ".conf":                           "password = " + secret + "\n",
	}
	for _, top := range []string{"/var/tmp/" + secret, "/home/" + secret, "/etc/" + secret + ".conf"} {
		t.Cleanup(func() {
			if err := os.RemoveAll(top); err != nil {
				t.Errorf("remove planted %s: %v", top, err)
			}
		})
	}
	for p, content := range planted {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The control: each planted file is readable on the host by the uid
	// the agent has.
	readAll := `
import sys, json
res = {}
for p in sys.argv[2:]:
    try:
        res[p] = open(p).read()
    except OSError as e:
        res[p] = e.strerror
print(json.dumps(res))
`
	var names []string
	for p := range planted {
		names = append(names, p)
	}
	var host map[string]string
	decode(t, asNobody(t, r.dir, readAll, append([]string{r.marker}, names...)...), "", &host)
	for p, content := range planted {
		if host[p] != content {
			t.Fatalf("control: %s read on the host as uid %d: got %q, want its content", p, nobody, host[p])
		}
	}

	cfg := r.py(rootSearch)
	cfg.Timeout = 5 * time.Minute // the walk reads every file outside /usr and /proc
	res, out, errOut := r.run(cfg)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got struct {
		Found, Gits []string
		Root, Etc   any
		Home, Local any
		Sys, Var    any
		Shadow      []string
		Passwd      string
	}
	decode(t, out, errOut, &got)
	// The marker is in the agent's own argv, which /proc (not walked)
	// shows; anywhere else it is a leak.
	if len(got.Found) > 0 {
		t.Errorf("planted names or contents visible in the sandbox: %v", got.Found)
	}
	if len(got.Gits) > 0 {
		t.Errorf(".git directories visible in the sandbox: %v", got.Gits)
	}
	if len(got.Shadow) > 0 {
		t.Errorf("shadow files in the sandbox's /etc: %v", got.Shadow)
	}
	allowed := []string{"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "proc", "run", "sbin", "tmp", "usr", "workspace"}
	root, _ := got.Root.([]any)
	if len(root) == 0 {
		t.Errorf("got / %v, want a listing", got.Root)
	}
	for _, n := range root {
		if !slices.Contains(allowed, n.(string)) {
			t.Errorf("/%s is in the sandbox's root; the allow-list is %v", n, allowed)
		}
	}
	etc, _ := got.Etc.([]any)
	for _, n := range etc {
		if name := n.(string); !etcAllowed(name) {
			t.Errorf("/etc/%s is in the sandbox's /etc, which is not on its list", name)
		}
	}
	if h, ok := got.Home.([]any); !ok || len(h) != 1 || h[0] != "agent" {
		t.Errorf("got /home %v, want only the agent's [agent]", got.Home)
	}
	if l, ok := got.Local.([]any); !ok || len(l) != 0 {
		t.Errorf("got /usr/local %v, want it empty", got.Local)
	}
	for what, v := range map[string]any{"/sys": got.Sys, "/var": got.Var} {
		if v != "No such file or directory" {
			t.Errorf("got %s %v, want it absent", what, v)
		}
	}
	if want := "agent:x:" + strconv.Itoa(nobody) + ":" + strconv.Itoa(nobody) + ":agent:" + sandbox.DefaultHome + ":/bin/sh\n"; !strings.Contains(got.Passwd, want) {
		t.Errorf("got /etc/passwd %q, want the agent's line %q", got.Passwd, want)
	}
	if strings.Contains(got.Passwd, "benchd") {
		t.Errorf("got /etc/passwd %q: the host's accounts leak", got.Passwd)
	}
}

// etcAllowed reports whether name may be in the sandbox's /etc.
func etcAllowed(name string) bool {
	switch name {
	case "passwd", "group", "hostname", "hosts", "resolv.conf", "nsswitch.conf",
		"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "host.conf", "gai.conf", "protocols",
		"services", "networks", "mime.types", "ssl", "localtime", "timezone", "alternatives",
		"os-release", "debian_version", "mtab":
		return true
	}
	return name == "python3" || strings.HasPrefix(name, "python3.")
}

// TestMountinfo: the sandbox's mount table names nothing of the caller's
// paths. The workspace is, as benchd's view is, the root of a file
// system mounted in a state directory, and the state directory is
// masked, as the daemon masks it; the program reads every mount table
// procfs offers.
func TestMountinfo(t *testing.T) {
	r := newRig(t, testenv.Python)
	state := filepath.Join(r.dir, "state-"+r.marker)
	view := filepath.Join(state, "attempts", "a-1", "mnt")
	if err := os.MkdirAll(view, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("benchd", view, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,uid=65534,gid=65534"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(view, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the view: %v", err)
		}
	})
	// The control: the host's table names the state directory.
	if b, _ := os.ReadFile("/proc/self/mountinfo"); !strings.Contains(string(b), state) {
		t.Fatalf("control: the host's mountinfo does not name %s", state)
	}
	cfg := r.py(`
import json
res = {}
for p in ["/proc/self/mountinfo", "/proc/self/mounts", "/proc/mounts", "/proc/self/mountstats", "/proc/1/mountinfo"]:
    try:
        res[p] = open(p).read()
    except OSError as e:
        res[p] = "error: " + e.strerror
print(json.dumps(res))
`)
	cfg.Workspace = view
	cfg.Mask = []string{state}
	res, out, errOut := r.run(cfg)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	var got map[string]string
	decode(t, out, errOut, &got)
	if !strings.Contains(got["/proc/self/mountinfo"], " /workspace ") {
		t.Fatalf("the sandbox's mountinfo has no /workspace: %q", got["/proc/self/mountinfo"])
	}
	for p, text := range got {
		for _, leak := range []string{r.marker, r.dir, state} {
			if strings.Contains(text, leak) {
				t.Errorf("%s names %q:\n%s", p, leak, text)
			}
		}
	}
	t.Logf("the sandbox's mountinfo:\n%s", got["/proc/self/mountinfo"])
}
