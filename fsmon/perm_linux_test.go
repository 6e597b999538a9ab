package fsmon_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
)

// agentUID is the unprivileged uid the hostile programs run as (nobody).
const agentUID = 65534

// asAgent runs a Python program as agentUID and returns what it printed:
// one line "NAME RESULT" per attempt, RESULT ok or an errno name.
func asAgent(t *testing.T, program string, args ...string) map[string]string {
	t.Helper()
	testenv.Require(t, testenv.Root, testenv.Python)
	cmd := exec.Command("/usr/bin/python3", append([]string{"-c", program}, args...)...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: agentUID, Gid: agentUID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("program as uid %d: %v\n%s", agentUID, err, out)
	}
	res := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, result, _ := strings.Cut(line, " ")
		res[name] = result
	}
	return res
}

// trespass tries, on files it does not own, what only their owner (or
// root) may do, and reads a file it may read.
const trespass = `
import errno, os, sys
def attempt(name, fn):
    try:
        fn()
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, str(e.errno)))
d = sys.argv[1]
attempt("chmod", lambda: os.chmod(os.path.join(d, "src/counter.py"), 0o666))
attempt("chown", lambda: os.chown(os.path.join(d, "src/counter.py"), os.getuid(), os.getgid()))
attempt("utime-times", lambda: os.utime(os.path.join(d, "src/counter.py"), (0, 0)))
attempt("utime-now", lambda: os.utime(os.path.join(d, "src/counter.py")))
attempt("read-0600", lambda: open(os.path.join(d, "src/secret.py"), "rb").read())
attempt("write-0644", lambda: open(os.path.join(d, "src/counter.py"), "ab").close())
attempt("read-0644", lambda: open(os.path.join(d, "src/counter.py"), "rb").read())
`

// TestModeBits: with the kernel checking permissions (default_permissions),
// an unprivileged agent can neither change the mode, owner or times of
// a file it does not own nor read a root-only file, in the view; what
// the mode bits allow it still may.
func TestModeBits(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	// The test's temporary directories are root's 0700: let the agent
	// reach the mountpoint.
	for _, d := range []string{filepath.Dir(filepath.Dir(v.mnt)), filepath.Dir(v.mnt)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(v.p("src/secret.py"), []byte("key = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := asAgent(t, trespass, v.mnt)
	for name, want := range map[string]string{
		"chmod":       "EPERM",
		"chown":       "EPERM",
		"utime-times": "EPERM",
		"utime-now":   "EACCES",
		"read-0600":   "EACCES",
		"write-0644":  "EACCES",
		"read-0644":   "ok",
	} {
		if got[name] != want {
			t.Errorf("%s as uid %d in the view: got %q, want %s", name, agentUID, got[name], want)
		}
	}
	// The kernel refused them before they reached the view: nothing of
	// the agent's is journaled.
	for _, r := range v.finish() {
		if r.UID == agentUID {
			t.Errorf("journal record of uid %d: %+v", agentUID, r)
		}
		if r.Op == journal.OpChmod || r.Op == journal.OpChown || r.Op == journal.OpUtimens {
			t.Errorf("the refused change reached the view: %+v", r)
		}
	}
}
