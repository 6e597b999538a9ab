package confine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"benchd.dev/limits"
	"benchd.dev/netns"
	"benchd.dev/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init()
	undo := limits.DelegateForTest()
	code := m.Run()
	undo()
	os.Exit(code)
}

const nobody = 65534

// job starts spec (filled with test defaults) and returns its Result,
// checking that nothing of it is left once Wait returns.
func runJob(t *testing.T, spec Spec) (Result, error) {
	t.Helper()
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Netns, testenv.Userns)
	dir := t.TempDir()
	if spec.UID == 0 {
		spec.UID, spec.GID = nobody, nobody
	}
	if spec.NetnsRunDir == "" {
		spec.NetnsRunDir = filepath.Join(dir, "netns")
	}
	if spec.StdoutPath == "" {
		spec.StdoutPath = filepath.Join(dir, "stdout")
	}
	if spec.Timeout == 0 {
		spec.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j, err := Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	paths := j.group.Paths()
	nsPath := j.ns.Path()
	res, err := j.Wait(ctx)
	for ctrl, p := range paths {
		if _, serr := os.Stat(p); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s cgroup %s left after Wait (stat: %v)", ctrl, p, serr)
		}
	}
	if _, serr := os.Stat(nsPath); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("namespace file %s left after Wait (stat: %v)", nsPath, serr)
	}
	mi, rerr := os.ReadFile("/proc/self/mountinfo")
	if rerr != nil {
		t.Fatal(rerr)
	}
	if strings.Contains(string(mi), j.Name()) || strings.Contains(string(mi), dir) {
		t.Errorf("a mount of the job is left in /proc/self/mountinfo")
	}
	return res, err
}

func TestRun(t *testing.T) {
	tests := []struct {
		name  string
		spec  Spec
		check func(t *testing.T, res Result, err error)
	}{
		{
			name: "true",
			spec: Spec{Args: []string{"/bin/true"}},
			check: func(t *testing.T, res Result, err error) {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if res.ExitCode != 0 || res.Signal != 0 || res.TimedOut || res.OOM {
					t.Errorf("got exit %d signal %v timed out %v oom %v, want a clean exit 0", res.ExitCode, res.Signal, res.TimedOut, res.OOM)
				}
				if res.Wall <= 0 || res.Wall > 10*time.Second {
					t.Errorf("got wall %v, want between 0 and 10s", res.Wall)
				}
				if res.Network.Mode != netns.Closed {
					t.Errorf("got network mode %q, want %q", res.Network.Mode, netns.Closed)
				}
			},
		},
		{
			name: "exit status",
			spec: Spec{Args: []string{"/bin/sh", "-c", "echo hello; exit 3"}},
			check: func(t *testing.T, res Result, err error) {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if res.ExitCode != 3 {
					t.Errorf("got exit %d, want 3", res.ExitCode)
				}
				if res.Stdout.Bytes != 6 {
					t.Errorf("got %d stdout bytes, want 6", res.Stdout.Bytes)
				}
			},
		},
		{
			name: "oom",
			spec: Spec{
				Args:      []string{"/usr/bin/python3", "-c", "b = bytearray(512 << 20); b[::4096] = b'x' * (len(b) // 4096)"},
				MemoryMax: 64 << 20,
			},
			check: func(t *testing.T, res Result, err error) {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if !res.OOM || res.TimedOut {
					t.Errorf("got oom %v timed out %v, want oom and no timeout", res.OOM, res.TimedOut)
				}
				if res.Signal != syscall.SIGKILL {
					t.Errorf("got signal %v, want SIGKILL", res.Signal)
				}
				if res.PeakMemory <= 0 || res.PeakMemory > 80<<20 {
					t.Errorf("got peak %d bytes, want within the 64 MiB limit (and a little kernel memory)", res.PeakMemory)
				}
			},
		},
		{
			name: "timeout",
			spec: Spec{Args: []string{"/bin/sh", "-c", "sleep 60 & setsid sleep 60 & sleep 60"}, Timeout: time.Second},
			check: func(t *testing.T, res Result, err error) {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if !res.TimedOut || res.OOM {
					t.Errorf("got timed out %v oom %v, want a timeout only", res.TimedOut, res.OOM)
				}
				if res.Wall < time.Second || res.Wall > 10*time.Second {
					t.Errorf("got wall %v, want about 1s", res.Wall)
				}
			},
		},
		{
			name: "network closed",
			spec: Spec{Args: []string{"/usr/bin/python3", "-c", `
import socket, sys
s = socket.socket()
s.settimeout(5)
try:
    s.connect(("192.0.2.1", 80))
except OSError as e:
    print("refused", e)
    sys.exit(0)
sys.exit(1)
`}},
			check: func(t *testing.T, res Result, err error) {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if res.ExitCode != 0 {
					t.Errorf("got exit %d, want 0 (the connection refused at once)", res.ExitCode)
				}
				if !res.Network.NetworkUsed() || len(res.Network.Attempts) != 1 {
					t.Fatalf("got report %+v, want one recorded attempt", res.Network)
				}
				if a := res.Network.Attempts[0]; a.Dst.String() != "192.0.2.1" || a.Port != 80 || a.Proto != "tcp" {
					t.Errorf("got attempt %+v, want tcp 192.0.2.1:80", a)
				}
			},
		},
		{
			name: "max rss of a short process",
			spec: Spec{Args: []string{"/usr/bin/python3", "-c", "b = bytearray(100 << 20)"}},
			check: func(t *testing.T, res Result, err error) {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if res.MaxRSS < 100<<20 || res.MaxRSS > 200<<20 {
					t.Errorf("got max rss %d MiB, want 100..200 MiB", res.MaxRSS>>20)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := runJob(t, tt.spec)
			tt.check(t, res, err)
		})
	}
}

func TestStartRefusesBadSpecs(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"no command", Spec{UID: nobody, GID: nobody}},
		{"name too long", Spec{Args: []string{"/bin/true"}, Name: strings.Repeat("x", 60), UID: nobody, GID: nobody}},
		{"name with a slash", Spec{Args: []string{"/bin/true"}, Name: "a/b", UID: nobody, GID: nobody}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Start(context.Background(), tt.spec)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("got error %v, want ErrInvalid", err)
			}
		})
	}
}

func TestStartUndoesOnSandboxFailure(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Netns, testenv.Userns)
	runDir := filepath.Join(t.TempDir(), "netns")
	// uid 0 is refused by the sandbox, after the cgroup and namespace
	// were made: both must be undone.
	name := "undo-test"
	_, err := Start(context.Background(), Spec{Args: []string{"/bin/true"}, Name: name, NetnsRunDir: runDir})
	if !errors.Is(err, sandbox.ErrInvalid) {
		t.Fatalf("got error %v, want sandbox.ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(runDir, ownerPrefix(os.Getpid())+name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace file left after a failed start (stat: %v)", err)
	}
	// The same name can be used again only if the cgroup is gone.
	res, err := Run(context.Background(), Spec{Args: []string{"/bin/true"}, Name: name, NetnsRunDir: runDir, UID: nobody, GID: nobody})
	if err != nil || res.ExitCode != 0 {
		t.Errorf("got %v, exit %d after reusing the name, want success", err, res.ExitCode)
	}
}

// TestCleanup leaves groups named for a dead owner and for a live one
// (pid 1), and checks that Cleanup removes the first only.
func TestCleanup(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups)
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	ctx := context.Background()
	deadGroup, err := limits.New(ctx, limits.Config{Name: ownerPrefix(dead) + "left"})
	if err != nil {
		t.Fatal(err)
	}
	liveGroup, err := limits.New(ctx, limits.Config{Name: ownerPrefix(1) + "kept"})
	if err != nil {
		t.Fatal(err)
	}
	defer liveGroup.Close(ctx)
	// Its directories are Cleanup's to remove; Close only releases the
	// Group (its sampler, its share of the intermediate group).
	defer deadGroup.Close(ctx)
	if err := Cleanup(ctx, CleanupConfig{NetnsRunDir: filepath.Join(t.TempDir(), "netns")}); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	for ctrl, p := range deadGroup.Paths() {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s group of a dead owner left: %s (stat: %v)", ctrl, p, err)
		}
	}
	for ctrl, p := range liveGroup.Paths() {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s group of a live owner removed: %s (stat: %v)", ctrl, p, err)
		}
	}
}

// TestOwnCgroup: the job sees its own memory limit where node and other
// runtimes look for it (the cgroup directory /proc/self/cgroup names,
// under /sys/fs/cgroup), read-only, and nothing else of /sys.
func TestOwnCgroup(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	res, err := runJob(t, Spec{Args: []string{"/usr/bin/python3", "-c", `
import json, os
rel = None
for line in open("/proc/self/cgroup"):
    n, ctrl, p = line.strip().split(":", 2)
    if ctrl == "" and n == "0" and rel is None:
        rel, files = "/sys/fs/cgroup" + p, ["memory.max"]
    if "memory" in ctrl.split(","):
        rel, files = "/sys/fs/cgroup/memory" + p, ["memory.limit_in_bytes"]
limit = open(os.path.join(rel, files[0])).read().strip()
try:
    open(os.path.join(rel, files[0]), "w").write("max")
    write = "ok"
except OSError as e:
    write = e.strerror
def walk(d):
    out = []
    while True:
        names = sorted(os.listdir(d))
        out.append(names)
        if len(names) != 1 or d == rel:
            return out
        d = os.path.join(d, names[0])
print(json.dumps({"limit": limit, "write": write, "sys": walk("/sys"), "dir": rel}))
`}, MemoryMax: 96 << 20, StdoutPath: out})
	if err != nil || res.ExitCode != 0 {
		b, _ := os.ReadFile(out)
		t.Fatalf("got exit %d, %v; output %s", res.ExitCode, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Limit, Write, Dir string
		Sys               any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("output %q: %v", b, err)
	}
	if got.Limit != strconv.Itoa(96<<20) {
		t.Errorf("got the memory limit %q at %s, want %d", got.Limit, got.Dir, 96<<20)
	}
	if got.Write != "Read-only file system" {
		t.Errorf("writing the limit: got %q, want Read-only file system", got.Write)
	}
	t.Logf("/sys as the job sees it: %v", got.Sys)
	if l, ok := got.Sys.([]any); !ok || len(l) == 0 {
		t.Errorf("got /sys %v, want only the path to the job's cgroup", got.Sys)
	} else if first, _ := l[0].([]any); len(first) != 1 || first[0] != "fs" {
		t.Errorf("got /sys listing %v, want only [fs]", l[0])
	}
}

// TestCPULimits: a job's CPUWeight and CPUQuota are written to its own
// cgroup (v2 cpu.weight and cpu.max, v1 cpu.shares and cpu.cfs_quota_us),
// read from the host while the job waits on its stdin.
func TestCPULimits(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Netns, testenv.Userns)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j, err := Start(ctx, Spec{
		Args: []string{"/bin/sh", "-c", "read line"}, Stdin: pr,
		UID: nobody, GID: nobody, Timeout: time.Minute,
		NetnsRunDir: filepath.Join(t.TempDir(), "netns"),
		CPUWeight:   100, CPUQuota: 150 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	paths := j.group.Paths()
	want := map[string]string{}
	if p, ok := paths["cpu"]; ok {
		want[filepath.Join(p, "cpu.shares")] = "1024"
		want[filepath.Join(p, "cpu.cfs_quota_us")] = "150000"
	} else if p, ok := paths["unified"]; ok && j.group.Layout() == limits.Unified {
		want[filepath.Join(p, "cpu.weight")] = "100"
		want[filepath.Join(p, "cpu.max")] = "150000 100000"
	} else {
		t.Errorf("got cgroup paths %v, want a cpu group of the job's own", paths)
	}
	for file, w := range want {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("read %s: %v", file, err)
		} else if got := strings.TrimSpace(string(b)); got != w {
			t.Errorf("%s = %q, want %q", file, got, w)
		}
	}
	pw.WriteString("done\n")
	res, err := j.Wait(ctx)
	if err != nil || res.ExitCode != 0 {
		t.Errorf("got exit %d, %v, want 0", res.ExitCode, err)
	}
}
