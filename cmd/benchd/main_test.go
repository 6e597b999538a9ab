package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
	"benchd.dev/sandbox"
)

// benchdBin builds the real benchd binary once per test run.
var benchdBin string

func TestMain(m *testing.M) {
	// runGrade runs graders confined: the sandbox re-executes this test
	// binary as its init.
	sandbox.Init()
	dir, err := os.MkdirTemp("", "benchd-bin-")
	if err != nil {
		panic(err)
	}
	benchdBin = filepath.Join(dir, "benchd")
	out, err := exec.Command("go", "build", "-o", benchdBin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// benchd runs the binary and returns stdout, stderr and the exit status.
func benchd(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(benchdBin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func workspace(t *testing.T) (ws, tmp string) {
	t.Helper()
	tmp = t.TempDir()
	ws = filepath.Join(tmp, "ws")
	for p, c := range map[string]string{"src/counter.py": "x = 1\n", "tests/test_public.py": "def test(): pass\n"} {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644)
	}
	return ws, tmp
}

func TestWatchJournalsAndVerifies(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE)
	ws, tmp := workspace(t)
	j := filepath.Join(tmp, "j.jsonl")
	script := `echo "x = 2" > src/counter.py; echo hacked > tests/test_public.py; mkdir -p __pycache__; echo c > __pycache__/a.pyc; exit 3`
	out, errOut, code := benchd(t, ws, "watch", "--allow", "src/*.py", "--ignore", "__pycache__/", "--journal", j, "--json", "--", "sh", "-c", script)
	if code != 3 {
		t.Fatalf("watch exit: got %d, want the command's 3; stderr %s", code, errOut)
	}
	var res watchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("watch --json: %v: %s", err, out)
	}
	if res.Denied != 1 || len(res.Changeset) != 1 || res.Changeset[0].Path != "src/counter.py" || res.Changeset[0].Kind != journal.Modified {
		t.Fatalf("watch result: got %+v, want one denied op and only src/counter.py modified", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "tests/test_public.py")); string(b) != "def test(): pass\n" {
		t.Fatalf("protected file changed: %q", b)
	}
	recs, err := journal.Read(j)
	if err != nil {
		t.Fatal(err)
	}
	var sawDenied bool
	for _, r := range recs {
		if r.Decision == journal.Denied && r.Path == "tests/test_public.py" && r.Comm == "sh" {
			sawDenied = true
		}
	}
	if !sawDenied {
		t.Errorf("no denied record by sh for tests/test_public.py")
	}
	if out, errOut, code := benchd(t, tmp, "journal", "verify", j); code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Fatalf("verify of an intact journal: exit %d, %s%s", code, out, errOut)
	}

	// One byte changed in a record: verify fails and names it.
	b, _ := os.ReadFile(j)
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = strings.Replace(lines[2], `"ok"`, `"ko"`, 1)
	bad := filepath.Join(tmp, "bad.jsonl")
	os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o644)
	os.Symlink(journal.BlobsDir(j), journal.BlobsDir(bad))
	_, errOut, code = benchd(t, tmp, "journal", "verify", bad)
	if code != 1 || !strings.Contains(errOut, "record 3") {
		t.Fatalf("verify of an edited journal: exit %d, stderr %q; want 1 naming record 3", code, errOut)
	}
}

func TestWatchBadInput(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE)
	ws, tmp := workspace(t)
	busy := filepath.Join(tmp, "busy")
	os.Mkdir(busy, 0o755)
	os.WriteFile(filepath.Join(busy, "x"), nil, 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no such dir", []string{"watch", "--dir", filepath.Join(tmp, "nope"), "--journal", filepath.Join(tmp, "j1"), "--", "true"}, "no such directory"},
		{"bad glob", []string{"watch", "--allow", "[x", "--journal", filepath.Join(tmp, "j2"), "--", "true"}, "bad glob"},
		{"mountpoint busy", []string{"watch", "--mountpoint", busy, "--journal", filepath.Join(tmp, "j3"), "--", "true"}, "not empty"},
		{"no command", []string{"watch", "--journal", filepath.Join(tmp, "j4")}, "no command"},
		{"unknown command", []string{"watch", "--journal", filepath.Join(tmp, "j5"), "--", "no-such-command-x"}, "command not found"},
		{"journal inside dir", []string{"watch", "--journal", filepath.Join(ws, "j6"), "--", "true"}, "outside"},
		{"bad mode", []string{"watch", "--mode", "fast", "--journal", filepath.Join(tmp, "j7"), "--", "true"}, "mode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := benchd(t, ws, c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("got exit %d stderr %q, want exit 2 and one line containing %q", code, errOut, c.want)
			}
			if m, _ := fsmon.IsMountpoint(busy); m {
				t.Fatal("a mount was left behind")
			}
		})
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), tmp) {
		t.Fatalf("a mount below %s was left behind", tmp)
	}
}

// startWatch starts `benchd watch -- sleep 60` on a fresh workspace, in a
// process group of its own, and waits for its view. done is closed when
// benchd has exited; at the test's end the group is killed (and
// continued, should it be stopped), and that exit waited for, bounded.
func startWatch(t *testing.T) (cmd *exec.Cmd, done <-chan struct{}, mnt, tmp string) {
	t.Helper()
	ws, tmp := workspace(t)
	mnt = filepath.Join(tmp, "mnt")
	os.Mkdir(mnt, 0o755)
	cmd = exec.Command(benchdBin, "watch", "--mountpoint", mnt, "--journal", filepath.Join(tmp, "j"), "--", "sleep", "60")
	cmd.Dir = ws
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Error("benchd watch did not exit")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m, _ := fsmon.IsMountpoint(mnt); m {
			return cmd, exited, mnt, tmp
		}
		if time.Now().After(deadline) {
			t.Fatal("the view never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCrashThenCleanup(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE)
	cmd, waited, mnt, tmp := startWatch(t)
	// kill -9 benchd and the command it started (its own process group).
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	// A killed FUSE server can stay a zombie holding /dev/fuse when one of
	// its own threads waits on its view; then only cleanup's abort ends
	// it. So the wait is bounded, and a server still there must be ended
	// by cleanup.
	exited := false
	select {
	case <-waited:
		exited = true
	case <-time.After(15 * time.Second):
		t.Log("the killed benchd has not exited after 15 s; cleanup must abort its view")
	}
	if m, _ := fsmon.IsMountpoint(mnt); !m {
		t.Fatal("expected the crashed view to be left mounted")
	}
	out, errOut, code := benchd(t, tmp, "cleanup", "--under", tmp)
	if code != 0 || !strings.Contains(out, "unmounted "+mnt) {
		t.Fatalf("cleanup: exit %d, %s%s", code, out, errOut)
	}
	if m, _ := fsmon.IsMountpoint(mnt); m {
		t.Fatal("cleanup left the view mounted")
	}
	if !exited {
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			t.Fatal("the killed benchd is still there 30 s after cleanup aborted its view")
		}
	}
}

// TestCleanupAbortsStuckView leaves a view whose server is stopped
// (SIGSTOP: it holds /dev/fuse but answers nothing, as a stuck zombie
// does) with a process blocked on it. Cleanup must abort the connection
// so the blocked process returns, not just detach the mount.
func TestCleanupAbortsStuckView(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE)
	cmd, _, mnt, tmp := startWatch(t)
	// Stop only benchd (not the command): its view stops answering.
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A reader blocked on the stopped view, in a process of its own so
	// that this test never waits on the view itself.
	reader := exec.Command("cat", filepath.Join(mnt, "src", "counter.py"))
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { read <- reader.Wait() }()
	select {
	case err := <-read:
		t.Fatalf("the reader finished on a stopped view (%v): the test cannot show the abort", err)
	case <-time.After(time.Second):
	}
	out, errOut, code := benchd(t, tmp, "cleanup", "--under", tmp)
	if code != 0 || !strings.Contains(out, "unmounted "+mnt) {
		t.Fatalf("cleanup: exit %d, %s%s", code, out, errOut)
	}
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the reader read through an aborted view")
		}
	case <-time.After(30 * time.Second):
		reader.Process.Kill()
		t.Fatal("the reader is still blocked 30 s after cleanup: the connection was not aborted")
	}
}

// TestHelpNamesEveryFlag: every command's --help exits 0 and names each
// flag its set defines, both in its usage line and in its flag list; the
// daemon's names the flags an earlier hand-written line left out.
func TestHelpNamesEveryFlag(t *testing.T) {
	flagRow := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"watch", "--help"}, {"journal", "verify", "--help"},
		{"grade", "--help"}, {"cleanup", "--help"}, {"key", "--help"}, {"--socket", "/x", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("got exit %d, stderr %q; want 0", code, stderr.String())
			}
			out := stdout.String()
			usage, _, _ := strings.Cut(out, "\n")
			rows := flagRow.FindAllStringSubmatch(out, -1)
			if !strings.HasPrefix(usage, "usage: benchd") || len(rows) == 0 {
				t.Fatalf("got\n%s\nwant a usage line and a flag list", out)
			}
			for _, r := range rows {
				if !strings.Contains(usage, "[--"+r[1]) {
					t.Errorf("flag --%s is listed but not in the usage line %q", r[1], usage)
				}
			}
			if !strings.Contains(out, "examples:\n  benchd") {
				t.Errorf("got\n%s\nwant examples", out)
			}
		})
	}
	fl, _ := serveFlags()
	var stdout strings.Builder
	run(context.Background(), []string{"--help"}, &stdout, io.Discard)
	fl.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(stdout.String(), "[--"+f.Name+" ") {
			t.Errorf("benchd --help does not name --%s", f.Name)
		}
	})
	for _, name := range []string{"database", "host", "prices", "rescue-after", "group", "cgroup-parent"} {
		if !strings.Contains(stdout.String(), "\n  -"+name+" ") {
			t.Errorf("benchd --help does not describe --%s", name)
		}
	}
}

func TestVersion(t *testing.T) {
	var stdout strings.Builder
	if code := run(context.Background(), []string{"--version"}, &stdout, io.Discard); code != 0 {
		t.Fatalf("got exit %d", code)
	}
	if !regexp.MustCompile(`^benchd \S.* go1\.\d+`).MatchString(stdout.String()) {
		t.Errorf("got %q, want \"benchd VERSION goVERSION\"", stdout.String())
	}
	version = "v1.2.3-test"
	defer func() { version = "" }()
	stdout.Reset()
	run(context.Background(), []string{"--version"}, &stdout, io.Discard)
	if !strings.HasPrefix(stdout.String(), "benchd v1.2.3-test ") {
		t.Errorf("with version set: got %q", stdout.String())
	}
}
