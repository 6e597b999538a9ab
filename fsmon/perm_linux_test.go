package fsmon_test

import (
	"fmt"
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

// TestModeZero: a file of mode 0000 is shown as 0000, so the kernel's
// checks refuse it to a caller that is not root (the bridge used to show
// it as 0644, readable by all).
func TestModeZero(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	for _, d := range []string{filepath.Dir(filepath.Dir(v.mnt)), filepath.Dir(v.mnt)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(v.p("src/secret.py"), []byte("key = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(v.p("src/secret.py"), 0); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(v.p("src/secret.py"))
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0 {
		t.Errorf("mode of a 0000 file in the view: got %v, want ----------", st.Mode())
	}
	if got := asAgent(t, trespass, v.mnt)["read-0600"]; got != "EACCES" {
		t.Errorf("read of a 0000 file as uid %d: got %q, want EACCES", agentUID, got)
	}
	v.finish()
}

// makeModes creates, with umask 0, a directory 0777, a sticky directory
// 01777, a file 0666 (open with O_CREAT), a file 0000 and a fifo 0666,
// and prints each one's mode as stat shows it afterwards.
const makeModes = `
import os, stat, sys
d = sys.argv[1]
os.umask(0)
os.mkdir(os.path.join(d, "dir"), 0o777)
os.mkdir(os.path.join(d, "sticky"), 0o1777)
os.close(os.open(os.path.join(d, "file"), os.O_CREAT | os.O_WRONLY, 0o666))
os.close(os.open(os.path.join(d, "zero"), os.O_CREAT | os.O_RDWR, 0))
os.mkfifo(os.path.join(d, "fifo"), 0o666)
for n in ("dir", "sticky", "file", "zero", "fifo"):
    print(n, oct(stat.S_IMODE(os.lstat(os.path.join(d, n)).st_mode)))
`

// TestCreateModes: a new entry gets the mode its creator asked for,
// whatever the serving process's own umask (the backing file system
// applied it on top of the caller's) and with the sticky bit (which
// os.Mkdir dropped).
func TestCreateModes(t *testing.T) {
	testenv.Require(t, testenv.Python)
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	want := map[string]string{"dir": "0o777", "sticky": "0o1777", "file": "0o666", "zero": "0o0", "fifo": "0o666"}
	for _, mode := range []fsmon.Mode{fsmon.ModeContent, fsmon.ModeWrites} {
		t.Run(string(mode), func(t *testing.T) {
			v := mount(t, mode)
			cmd := exec.Command("/usr/bin/python3", "-c", makeModes, v.p("src"))
			cmd.Dir = "/"
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				name, m, _ := strings.Cut(line, " ")
				got[name] = m
			}
			v.finish()
			for name, w := range want {
				if got[name] != w {
					t.Errorf("mode of %s in the view: got %s, want %s", name, got[name], w)
				}
				st, err := os.Lstat(filepath.Join(v.backing, "src", name))
				if err != nil {
					t.Fatal(err)
				}
				if b := fmt.Sprintf("%#o", uint32(st.Sys().(*syscall.Stat_t).Mode)&0o7777); b != strings.Replace(w, "0o", "0", 1) && !(w == "0o0" && b == "0") {
					t.Errorf("mode of %s in the backing tree: got %s, want %s", name, b, w)
				}
			}
		})
	}
}
