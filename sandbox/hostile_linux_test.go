package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"benchd.dev/limits"
	"benchd.dev/netns"
	"benchd.dev/sandbox"
	"golang.org/x/sys/unix"
)

// TestForkBomb: the pids limit stops the bomb, the deadline ends it, and
// this process can still fork.
func TestForkBomb(t *testing.T) {
	r := newRig(t, testenv.Cgroups)
	// The agent forks once, before the bomb goes off, then execs sleep
	// (no fork needed) and runs to the deadline while the bomb fills the
	// pids limit.
	cfg := r.config("/bin/sh", "-c", "m="+r.marker+"; b() { b | b & }; (b) & exec sleep 1000")
	cfg.Timeout = 2 * time.Second
	g := group(t, &cfg, limits.Config{PidsMax: 48, MemoryMax: 256 << 20})
	res, _, errOut := r.run(cfg)
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if !res.DeadlineHit || res.OOM {
		if len(errOut) > 300 {
			errOut = errOut[len(errOut)-300:]
		}
		t.Errorf("got %+v, want the deadline hit and no OOM; stderr ends:\n%s", res, errOut)
	}
	if u.PidsLimitHits == 0 {
		t.Errorf("got %d refused forks, want some: the bomb never met the limit", u.PidsLimitHits)
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Errorf("this process cannot fork after the bomb: %v", err)
	}
}

// TestMemoryHog: the OOM killer ends the hog and the result says OOM,
// not a timeout.
func TestMemoryHog(t *testing.T) {
	r := newRig(t, testenv.Cgroups, testenv.Python)
	cfg := r.py(`
chunks = []
while True:
    chunks.append(bytearray(16 << 20))
`)
	cfg.Timeout = 30 * time.Second
	g := group(t, &cfg, limits.Config{MemoryMax: 64 << 20, PidsMax: 64})
	res, _, _ := r.run(cfg)
	u, _ := g.Usage()
	if !res.OOM || res.DeadlineHit || res.Signal != unix.SIGKILL {
		t.Errorf("got %+v (usage %+v), want OOM, SIGKILL, no deadline", res, u)
	}
}

// hideForever is a tree that lives forever: three setsid'd, double-forked
// grandchildren and the agent itself, all carrying the marker in argv[0].
const hideForever = `
import os, sys, time
mark = sys.argv[1]
for i in range(3):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep-" + mark, "1000"])
        os._exit(0)
    os.waitpid(pid, 0)
os.execv("/bin/sleep", ["sleep-" + mark, "1000"])
`

// TestDeadlineKillsTree: at the deadline nothing of the tree survives,
// whether the cgroup's kill or the init's SIGKILL ends it.
func TestDeadlineKillsTree(t *testing.T) {
	for _, withGroup := range []bool{true, false} {
		name := "init"
		if withGroup {
			name = "cgroup"
		}
		t.Run(name, func(t *testing.T) {
			features := []testenv.Feature{testenv.Python}
			if withGroup {
				features = append(features, testenv.Cgroups)
			}
			r := newRig(t, features...)
			cfg := r.py(hideForever)
			cfg.Timeout = 3 * time.Second
			if withGroup {
				group(t, &cfg, limits.Config{PidsMax: 64, MemoryMax: 256 << 20})
			}
			s, err := sandbox.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The check below can fail: the tree is there before the deadline.
			var n int
			for i := 0; i < 250 && n < 4; i++ {
				time.Sleep(10 * time.Millisecond)
				n = len(procsWith(r.marker))
			}
			if n < 4 {
				t.Errorf("got %d marked processes before the deadline, want 4", n)
			}
			res, err := s.Wait(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !res.DeadlineHit || res.Signal != unix.SIGKILL {
				t.Errorf("got %+v, want the deadline hit and SIGKILL", res)
			}
			if left := procsWith(r.marker); len(left) > 0 {
				t.Errorf("processes survived the deadline: %v", left)
			}
			if res.Wall < cfg.Timeout || res.Wall > cfg.Timeout+3*time.Second {
				t.Errorf("got wall %v, want about %v", res.Wall, cfg.Timeout)
			}
		})
	}
}

// TestStdoutFlood: 1 GiB on stdout is capped and marked, and this
// process's memory does not grow with it.
func TestStdoutFlood(t *testing.T) {
	r := newRig(t)
	const limit = 1 << 20
	cfg := r.config("/bin/sh", "-c", "head -c 1073741824 /dev/zero; echo "+r.marker+" >&2")
	cfg.OutputCap = limit
	// Moving a GiB through a pipe takes 1-2 s here and 30 s or more under
	// software emulation (the VM lane): the test is about the cap, not
	// the speed.
	cfg.Timeout = 5 * time.Minute
	before := rss(t)
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if v := rss(t); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	res, out, errOut := r.run(cfg)
	close(stop)
	wg.Wait()
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	if res.Stdout.Bytes != 1<<30 || !res.Stdout.Truncated {
		t.Errorf("got stdout %+v, want 1 GiB counted and truncated", res.Stdout)
	}
	if want := limit + len(sandbox.Trailer(limit)); len(out) != want || !strings.HasSuffix(out, sandbox.Trailer(limit)) {
		t.Errorf("got a %d-byte capture file, want %d bytes ending in the trailer", len(out), want)
	}
	if res.Stderr.Truncated || !strings.Contains(errOut, r.marker) {
		t.Errorf("got stderr %+v %q, want the marker, untruncated", res.Stderr, errOut)
	}
	if grew := peak.Load() - before; grew > 16<<20 {
		t.Errorf("this process's RSS grew by %d MiB while capturing, want under 16", grew>>20)
	}
	t.Logf("RSS before %d MiB, peak %d MiB", before>>20, peak.Load()>>20)
}

// TestClosedStdout: a tree that closes its output and keeps running is
// still killed at the deadline.
func TestClosedStdout(t *testing.T) {
	r := newRig(t)
	cfg := r.config("/bin/sh", "-c", "exec >&- 2>&- </dev/null; m="+r.marker+"; sleep 1000")
	cfg.Timeout = time.Second
	start := time.Now()
	res, _, _ := r.run(cfg)
	if !res.DeadlineHit || res.Signal != unix.SIGKILL {
		t.Errorf("got %+v, want the deadline hit and SIGKILL", res)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v after a 1s deadline", took)
	}
}

// TestClosedNetns: from a closed namespace, a connection to a test
// address and a DNS lookup fail at once, and the namespace records both.
func TestClosedNetns(t *testing.T) {
	r := newRig(t, testenv.Netns, testenv.Python)
	port, err := listenLoopback(t)
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.py(`
import socket, sys, json, time, errno
def attempt(f):
    t = time.monotonic()
    try:
        f()
        res = "ok"
    except OSError as e:
        res = errno.errorcode.get(e.errno, type(e).__name__) if e.errno and e.errno > 0 else type(e).__name__
    return {"result": res, "seconds": time.monotonic() - t}
print(json.dumps({
    "tcp": attempt(lambda: socket.create_connection(("192.0.2.10", 80), timeout=10)),
    "host_lo": attempt(lambda: socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=10)),
    "dns": attempt(lambda: socket.getaddrinfo("example.com", 80)),
    "resolv": open("/etc/resolv.conf").read(),
}))
`)
	cfg.Args = append(cfg.Args, strconv.Itoa(port))
	n := namespace(t, &cfg, netns.Config{Mode: netns.Closed})
	res, out, errOut := r.run(cfg)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, errOut)
	}
	type attempt struct {
		Result  string
		Seconds float64
	}
	var got struct {
		TCP, HostLo, DNS attempt
		Resolv           string
	}
	decode(t, out, errOut, &got)
	for name, a := range map[string]attempt{"tcp": got.TCP, "host loopback": got.HostLo, "dns": got.DNS} {
		if a.Result == "ok" || a.Seconds > 2 {
			t.Errorf("%s: got %q after %.2fs, want a failure at once", name, a.Result, a.Seconds)
		}
	}
	if !bytes.Equal([]byte(got.Resolv), n.ResolvConf()) {
		t.Errorf("got /etc/resolv.conf %q, want the namespace's %q", got.Resolv, n.ResolvConf())
	}
	rep := n.Report()
	sawTCP := false
	for _, a := range rep.Attempts {
		if a.Dst.String() == "192.0.2.10" && a.Port == 80 {
			sawTCP = true
		}
	}
	sawDNS := false
	for _, q := range rep.DNS {
		if q.Name == "example.com" {
			sawDNS = true
		}
	}
	if !sawTCP || !sawDNS {
		t.Errorf("netns report %+v: want the connection to 192.0.2.10:80 and the lookup of example.com", rep)
	}
}

// TestNoStrayInit: an agent that exits at once leaves no init behind and
// the pidfd of the init is released (the rig checks descriptors).
func TestNoStrayInit(t *testing.T) {
	r := newRig(t)
	s, err := sandbox.Start(context.Background(), r.config("/bin/sh", "-c", "exit 7"))
	if err != nil {
		t.Fatal(err)
	}
	pid := s.Pid()
	res, err := s.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 || res.Signal != 0 || res.DeadlineHit {
		t.Errorf("got %+v, want exit 7", res)
	}
	if res.MaxRSS <= 0 || res.MaxRSS > 64<<20 {
		t.Errorf("got MaxRSS %d, want the few hundred KiB to MiB of a shell", res.MaxRSS)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("init pid %d still exists", pid)
	}
}

// TestConcurrent runs sandboxes side by side, as the daemon does: each
// sees its own workspace and captures its own output.
func TestConcurrent(t *testing.T) {
	const n = 6
	rigs := make([]*rig, n)
	for i := range rigs {
		rigs[i] = newRig(t)
	}
	var wg sync.WaitGroup
	results := make([]sandbox.Result, n)
	errs := make([]error, n)
	for i, r := range rigs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := r.config("/bin/sh", "-c", "echo $MARK > /workspace/id; sleep 0.2; cat /workspace/id; ls /workspace")
			results[i], errs[i] = sandbox.Run(context.Background(), cfg)
		}()
	}
	wg.Wait()
	for i, r := range rigs {
		if errs[i] != nil || results[i].ExitCode != 0 {
			t.Errorf("sandbox %d: %+v, %v", i, results[i], errs[i])
			continue
		}
		if got, want := r.stdout(), r.marker+"\nid\n"; got != want {
			t.Errorf("sandbox %d: got output %q, want %q", i, got, want)
		}
	}
}

// TestCancel: cancelling Wait's context kills the tree; it is not a
// deadline.
func TestCancel(t *testing.T) {
	r := newRig(t)
	s, err := sandbox.Start(context.Background(), r.config("/bin/sh", "-c", "m="+r.marker+"; sleep 1000"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := s.Wait(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got error %v, want one wrapping context.DeadlineExceeded", err)
	}
	if res.DeadlineHit || res.Signal != unix.SIGKILL {
		t.Errorf("got %+v, want SIGKILL and no DeadlineHit", res)
	}
	if _, err := s.Wait(context.Background()); err == nil {
		t.Error("a second Wait returned no error")
	}
}

// TestSharedOutputFile: stdout and stderr may go to one file.
func TestSharedOutputFile(t *testing.T) {
	r := newRig(t)
	cfg := r.config("/bin/sh", "-c", "echo out; echo err >&2; echo out2")
	cfg.StderrPath = cfg.StdoutPath
	res, out, _ := r.run(cfg)
	if res.ExitCode != 0 || res.Stdout.Bytes != 9 || res.Stderr.Bytes != 4 {
		t.Fatalf("got %+v, want exit 0, 9 bytes out, 4 bytes err", res)
	}
	// The two pipes are read apart: lines may interleave in any order.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(lines)
	if got, want := strings.Join(lines, " "), "err out out2"; got != want {
		t.Errorf("got lines %q, want %q", got, want)
	}
}

// fillTmpfs writes 1 MiB blocks into each path of argv[2:] until the
// file reaches argv[1] bytes or a write fails, keeps the files, and prints
// what it wrote and the errno it stopped on (0: it wrote it all).
const fillTmpfs = `
import errno, json, os, sys
want = int(sys.argv[2])
block = b"x" * (1 << 20)
out = {}
for p in sys.argv[3:]:
    n, code = 0, 0
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while n < want:
            n += os.write(fd, block)
    except OSError as e:
        code = e.errno
    os.close(fd)
    out[p] = {"written": n, "errno": code}
print(json.dumps(out))
`

// TestTmpfsCaps: writes into the private /tmp, $HOME and /dev/shm stop at
// TmpfsMax with ENOSPC, and the memory they held is gone with the
// sandbox.
func TestTmpfsCaps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   int64 // Config.TmpfsMax; 0 is the default
		cap   int64 // what each write must stop at
		write int64 // what the program tries to write into each
		paths []string
	}{
		{"default /tmp", 0, sandbox.DefaultTmpfsMax, 2 << 30, []string{"/tmp/fill"}},
		{"every mount", 64 << 20, 64 << 20, 256 << 20, []string{"/tmp/fill", "/home/agent/fill", "/dev/shm/fill"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, testenv.Cgroups, testenv.Python)
			cfg := r.config(append([]string{python, "-c", fillTmpfs, r.marker, strconv.FormatInt(tc.write, 10)}, tc.paths...)...)
			cfg.TmpfsMax = tc.max
			cfg.Timeout = 5 * time.Minute
			// Room for every write in full, so that only the caps can stop
			// them (tmpfs pages are charged to the writer's group).
			g := group(t, &cfg, limits.Config{MemoryMax: int64(len(tc.paths))*tc.write + 512<<20, PidsMax: 64})
			res, stdout, stderr := r.run(cfg)
			if res.ExitCode != 0 || res.OOM {
				t.Fatalf("got %+v, want exit 0 and no OOM; stderr:\n%s", res, stderr)
			}
			var got map[string]struct{ Written, Errno int64 }
			decode(t, stdout, stderr, &got)
			for _, p := range tc.paths {
				w := got[p]
				if w.Errno != int64(unix.ENOSPC) {
					t.Errorf("%s: got errno %d after %d bytes, want ENOSPC (%d)", p, w.Errno, w.Written, unix.ENOSPC)
				}
				if w.Written > tc.cap || w.Written < tc.cap-(4<<20) {
					t.Errorf("%s: got %d bytes written, want the cap %d (less a few pages)", p, w.Written, tc.cap)
				}
			}
			// The files lived in the sandbox's mount namespace only: with
			// it gone, the group holds none of their pages.
			u, err := g.Usage()
			if err != nil {
				t.Fatal(err)
			}
			if u.CurrentBytes > 64<<20 {
				t.Errorf("got %d bytes still charged to the group after the sandbox ended, want the files' pages freed", u.CurrentBytes)
			}
			if u.PeakBytes < int64(len(tc.paths))*(tc.cap-(4<<20)) {
				t.Errorf("got a peak of %d bytes, want the files' pages charged while they lived (%d)", u.PeakBytes, int64(len(tc.paths))*tc.cap)
			}
		})
	}
}
