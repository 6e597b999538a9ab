package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"golang.org/x/sys/unix"
)

const python = "/usr/bin/python3"

// TestGatedChildIsInGroup starts a child through the gate and has it print
// its own /proc/self/cgroup as its first act: every hierarchy must show
// the group.
func TestGatedChildIsInGroup(t *testing.T) {
	for _, layout := range hostLayouts(t) {
		t.Run(string(layout), func(t *testing.T) {
			g := newGroup(t, Config{Layout: layout, Name: testPrefix() + "gate", CPUWeight: 100})
			c := startInGroup(t, g, "/bin/cat", "/proc/self/cgroup")
			var lines []string
			for {
				s, err := c.stdout.ReadString('\n')
				lines = append(lines, s)
				if err != nil {
					break
				}
			}
			if err := c.wait(t); err != nil {
				t.Fatalf("cat: %v", err)
			}
			own, err := parseProcCgroup([]byte(strings.Join(lines, "")))
			if err != nil {
				t.Fatal(err)
			}
			for i := range g.hs {
				h := &g.hs[i]
				if got := h.ownPath(own); got != h.rel {
					t.Errorf("child's %s cgroup = %q, want %q", h.label(), got, h.rel)
				}
			}
		})
	}
}

// TestPeakAccuracy measures a python process that touches 200 MiB against
// the same interpreter touching nothing, both in fresh groups: the group
// peak, the largest VmHWM and the peak anon memory must each exceed the
// baseline's by 200 MiB within 5% (10 MiB).
func TestPeakAccuracy(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Python)
	// Warm the page cache outside any test group, so that the
	// interpreter's files are not charged to whichever group runs first.
	if out, err := exec.Command(python, "-c", "import sys").CombinedOutput(); err != nil {
		t.Fatalf("python3: %v: %s", err, out)
	}
	const mib = 1 << 20
	const touched = 200 * mib
	script := func(n int) string {
		return fmt.Sprintf("import sys\nb = b'\\x01' * %d\nsys.stdout.write('ready\\n'); sys.stdout.flush()\nsys.stdin.read()\n", n)
	}
	measure := func(t *testing.T, layout Layout, n int) Usage {
		g := newGroup(t, Config{Layout: layout, Name: testPrefix() + "acc-" + strconv.Itoa(n), SampleInterval: 20 * time.Millisecond})
		c := startInGroup(t, g, python, "-c", script(n))
		if got := c.readLine(t); got != "ready" {
			t.Fatalf("python said %q, want ready", got)
		}
		if _, err := g.Usage(); err != nil { // samples while the memory is held
			t.Fatal(err)
		}
		c.stdin.Close()
		if err := c.wait(t); err != nil {
			t.Fatalf("python: %v", err)
		}
		u, err := g.Usage()
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, layout := range hostLayouts(t) {
		t.Run(string(layout), func(t *testing.T) {
			base := measure(t, layout, 0)
			got := measure(t, layout, touched)
			t.Logf("baseline: peak %.1f MiB, max RSS %.1f MiB, peak anon %.1f MiB", float64(base.PeakBytes)/mib, float64(base.MaxRSSBytes)/mib, float64(base.PeakAnonBytes)/mib)
			t.Logf("200 MiB:  peak %.1f MiB, max RSS %.1f MiB, peak anon %.1f MiB", float64(got.PeakBytes)/mib, float64(got.MaxRSSBytes)/mib, float64(got.PeakAnonBytes)/mib)
			for _, m := range []struct {
				name      string
				base, got int64
			}{
				{"group peak", base.PeakBytes, got.PeakBytes},
				{"largest VmHWM", base.MaxRSSBytes, got.MaxRSSBytes},
				{"peak anon", base.PeakAnonBytes, got.PeakAnonBytes},
			} {
				want := m.base + touched
				errPct := 100 * math.Abs(float64(m.got-want)) / touched
				t.Logf("%s: got %.1f MiB, want %.1f MiB (200 MiB + baseline %.1f MiB): off by %.2f%% of 200 MiB",
					m.name, float64(m.got)/mib, float64(want)/mib, float64(m.base)/mib, errPct)
				if m.base <= 0 || errPct > 5 {
					t.Errorf("%s: got %d bytes, want %d ± 5%% of 200 MiB (baseline %d)", m.name, m.got, want, m.base)
				}
			}
			if got.OOMKills != 0 {
				t.Errorf("OOMKills = %d, want 0 without a limit", got.OOMKills)
			}
		})
	}
}

// TestOOMIsNotKill: a process over the memory limit is OOM-killed and
// counted; a process ended by Kill dies of the same SIGKILL but is not.
func TestOOMIsNotKill(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Python)
	tests := []struct {
		name     string
		argv     []string
		kill     bool
		wantOOMs bool
	}{
		{name: "over the limit", argv: []string{python, "-c", "b = b'\\x01' * (200 << 20)\nimport time; time.sleep(60)"}, wantOOMs: true},
		{name: "killed by Kill", argv: []string{"/bin/sleep", "300"}, kill: true},
	}
	for _, layout := range hostLayouts(t) {
		for _, tt := range tests {
			t.Run(string(layout)+"/"+tt.name, func(t *testing.T) {
				g := newGroup(t, Config{Layout: layout, Name: testPrefix() + "oom", MemoryMax: 64 << 20})
				c := startInGroup(t, g, tt.argv...)
				if tt.kill {
					waitProcs(t, g, 1)
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					defer cancel()
					if err := g.Kill(ctx); err != nil {
						t.Fatalf("Kill: %v", err)
					}
				}
				err := c.wait(t)
				if sig := signaled(err); sig != syscall.SIGKILL {
					t.Fatalf("child ended with %v, want SIGKILL", err)
				}
				u, err := g.Usage()
				if err != nil {
					t.Fatal(err)
				}
				if (u.OOMKills > 0) != tt.wantOOMs {
					t.Errorf("OOMKills = %d, want OOM kills %v", u.OOMKills, tt.wantOOMs)
				}
				if tt.wantOOMs && u.PeakBytes > 64<<20 {
					t.Errorf("PeakBytes = %d, want at most the 64 MiB limit", u.PeakBytes)
				}
			})
		}
	}
}

// waitProcs waits until the group has at least n processes.
func waitProcs(t *testing.T, g *Group, n int) Usage {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		u, err := g.Usage()
		if err != nil {
			t.Fatal(err)
		}
		if u.Procs >= n {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("group has %d processes after 20 s, want %d", u.Procs, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPidsLimitStopsForkLoop: a shell that tries to start 100 sleepers
// under a limit of 20 tasks is refused, and Kill ends what it started.
func TestPidsLimitStopsForkLoop(t *testing.T) {
	const limit = 20
	for _, layout := range hostLayouts(t) {
		t.Run(string(layout), func(t *testing.T) {
			g := newGroup(t, Config{Layout: layout, Name: testPrefix() + "pids", PidsMax: limit})
			c := startInGroup(t, g, "/bin/sh", "-c",
				`exec 2>/dev/null; i=0; while [ $i -lt 100 ]; do /bin/sleep 300 2>/dev/null & i=$((i+1)); done; wait`)
			deadline := time.Now().Add(20 * time.Second)
			var u Usage
			for {
				var err error
				if u, err = g.Usage(); err != nil {
					t.Fatal(err)
				}
				if u.PidsLimitHits > 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if u.PidsLimitHits == 0 {
				t.Fatalf("PidsLimitHits = 0 with %d processes, want the limit hit", u.Procs)
			}
			if u.Procs > limit {
				t.Errorf("Procs = %d, want at most %d", u.Procs, limit)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := g.Kill(ctx); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			c.wait(t)
			if u, err := g.Usage(); err != nil || u.Procs != 0 {
				t.Errorf("after Kill: Procs = %d (err %v), want 0", u.Procs, err)
			}
		})
	}
}

// TestKillDoubleForkedTree: sleepers that left the session (setsid) and
// were orphaned (their parent exited) are killed with the rest.
func TestKillDoubleForkedTree(t *testing.T) {
	for _, layout := range hostLayouts(t) {
		t.Run(string(layout), func(t *testing.T) {
			var logs strings.Builder
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			g := newGroup(t, Config{Layout: layout, Name: testPrefix() + "tree", Logger: logger})
			c := startInGroup(t, g, "/bin/sh", "-c",
				`/usr/bin/setsid /bin/sh -c '/bin/sleep 300 & /bin/sleep 300 & exit 0' & exec /bin/sleep 300`)
			// Wait for the two orphans and the outer sleep, and for the
			// middle shell to be gone.
			var pids []int
			deadline := time.Now().Add(20 * time.Second)
			for {
				var err error
				pids, err = readPids(g.hs[0].file("cgroup.procs"))
				if err != nil {
					t.Fatal(err)
				}
				if len(pids) == 3 && allComm(pids, "sleep") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("group holds %v, want three sleeps", pids)
				}
				time.Sleep(10 * time.Millisecond)
			}
			sessions := map[int]bool{}
			orphans := 0
			for _, pid := range pids {
				sid, ppid := sessionOf(t, pid)
				sessions[sid] = true
				if ppid != c.cmd.Process.Pid && pid != c.cmd.Process.Pid {
					orphans++
				}
			}
			if len(sessions) < 2 || orphans != 2 {
				t.Fatalf("sessions %v, orphans %d: want the sleepers in a session of their own and orphaned", sessions, orphans)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if err := g.Kill(ctx); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			t.Logf("Kill took %v", time.Since(start))
			wantMethod := map[Layout]string{Unified: "cgroup.kill", Hybrid: "cgroup.kill", Legacy: "freezer"}[layout]
			if !strings.Contains(logs.String(), "method="+wantMethod) {
				t.Errorf("Kill did not use %s; log:\n%s", wantMethod, logs.String())
			}
			if sig := signaled(c.wait(t)); sig != syscall.SIGKILL {
				t.Errorf("outer sleep ended by %v, want SIGKILL", sig)
			}
			for _, pid := range pids {
				if alive(pid) {
					t.Errorf("pid %d still alive after Kill", pid)
				}
			}
		})
	}
}

// allComm reports whether every pid runs a command named comm.
func allComm(pids []int, comm string) bool {
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(b)) != comm {
			return false
		}
	}
	return true
}

// sessionOf returns the session id and parent pid of pid.
func sessionOf(t *testing.T, pid int) (sid, ppid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid pgrp session ...
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, _ = strconv.Atoi(f[1])
	sid, _ = strconv.Atoi(f[3])
	return sid, ppid
}

// alive reports whether pid exists and is not a zombie waiting for its
// parent (an orphan's parent is pid 1, which reaps it in its own time).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0] != "Z" && f[0] != "X"
}

// TestCPULimits checks the written CPU files and that a busy loop under a
// 10% quota is throttled.
func TestCPULimits(t *testing.T) {
	for _, layout := range hostLayouts(t) {
		t.Run(string(layout), func(t *testing.T) {
			g := newGroup(t, Config{Layout: layout, Name: testPrefix() + "cpu", CPUWeight: 50, CPUQuota: 10 * time.Millisecond})
			h := g.hs[0]
			want := map[string]string{"cpu.weight": "50", "cpu.max": "10000 100000"}
			for i := range g.hs {
				if g.hs[i].ctrl == "cpu" {
					h = g.hs[i]
					want = map[string]string{"cpu.shares": "512", "cpu.cfs_quota_us": "10000", "cpu.cfs_period_us": "100000"}
				}
			}
			for file, w := range want {
				b, err := os.ReadFile(h.file(file))
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.TrimSpace(string(b)); got != w {
					t.Errorf("%s = %q, want %q", file, got, w)
				}
			}
			startInGroup(t, g, "/bin/sh", "-c", "while :; do :; done")
			// A busy loop under a 10% quota is throttled within a few
			// periods, unless the machine is so loaded that it never gets
			// 10 ms of CPU in 100 ms: allow it 10 s.
			deadline := time.Now().Add(10 * time.Second)
			for {
				st, err := readKeyed(h.file("cpu.stat"))
				if err != nil {
					t.Fatal(err)
				}
				if st["nr_throttled"] > 0 {
					t.Logf("cpu.stat: %v", st)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("cpu.stat nr_throttled = 0 after 10 s of a busy loop under a 10%% quota, want > 0 (%v)", st)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// TestAddErrors: a pid that does not exist, and a closed group.
func TestAddErrors(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups)
	g, err := New(t.Context(), Config{Name: testPrefix() + "add"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Add(4194304); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Add(no such pid) = %v, want ErrNoProcess", err)
	}
	if _, err := New(t.Context(), Config{Name: testPrefix() + "add"}); !errors.Is(err, ErrExists) {
		t.Errorf("New with a used name = %v, want ErrExists", err)
	}
	if _, ok := g.FD(); ok != (g.Layout() == Unified) {
		t.Errorf("FD ok = %v on layout %s, want %v", ok, g.Layout(), g.Layout() == Unified)
	}
	if err := g.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkGone(t, g)
	if err := g.Add(os.Getpid()); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	if err := g.Close(t.Context()); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

// TestSharedIntermediate: two groups share the intermediate group; it
// stays while one of them is open and goes with the last.
func TestSharedIntermediate(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups)
	a, err := New(t.Context(), Config{Name: testPrefix() + "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(t.Context(), Config{Name: testPrefix() + "b"})
	if err != nil {
		a.Close(t.Context())
		t.Fatal(err)
	}
	var inters []string
	for i := range a.hs {
		if a.hs[i].inter != "" {
			inters = append(inters, a.hs[i].interDir())
		}
	}
	if len(inters) == 0 {
		for _, g := range []*Group{a, b} {
			if err := g.Close(t.Context()); err != nil {
				t.Error(err)
			}
		}
		t.Skip("this process is in no hierarchy's root: no intermediate group")
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, d := range inters {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("intermediate %s gone while another group uses it: %v", d, err)
		}
	}
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, d := range inters {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("intermediate %s still there after the last Close: %v", d, err)
		}
	}
}

// TestCleanupLeftovers: a group abandoned with a process in it (as by a
// crash) is killed and removed by Cleanup with its prefix.
func TestCleanupLeftovers(t *testing.T) {
	for _, layout := range hostLayouts(t) {
		t.Run(string(layout), func(t *testing.T) {
			prefix := testPrefix() + "crash-"
			g, err := New(t.Context(), Config{Layout: layout, Name: prefix + "1"})
			if err != nil {
				t.Fatal(err)
			}
			c := startInGroup(t, g, "/usr/bin/setsid", "/bin/sleep", "300")
			waitProcs(t, g, 1)
			g.abandon()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if err := Cleanup(ctx, Config{Layout: layout}, prefix); err != nil {
				t.Fatalf("Cleanup: %v", err)
			}
			if sig := signaled(c.wait(t)); sig != syscall.SIGKILL {
				t.Errorf("leftover process ended by %v, want SIGKILL", sig)
			}
			checkGone(t, g)
		})
	}
}

// TestPeakCountsPageCache: a process that writes a 64 MiB file, 1 MiB at
// a time, charges the file's page cache to the group's peak, while its own
// RSS stays near the interpreter's.
func TestPeakCountsPageCache(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Python)
	const mib = 1 << 20
	for _, layout := range hostLayouts(t) {
		t.Run(string(layout), func(t *testing.T) {
			g := newGroup(t, Config{Layout: layout, Name: testPrefix() + "cache"})
			out := t.TempDir() + "/f"
			c := startInGroup(t, g, python, "-c", `import sys
with open(sys.argv[1], "wb") as f:
    for _ in range(64):
        f.write(b"\x01" * (1 << 20))
sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.read()`, out)
			if got := c.readLine(t); got != "ready" {
				t.Fatalf("python said %q, want ready", got)
			}
			u, err := g.Usage()
			if err != nil {
				t.Fatal(err)
			}
			c.stdin.Close()
			if err := c.wait(t); err != nil {
				t.Fatalf("python: %v", err)
			}
			t.Logf("64 MiB written: peak %.1f MiB, max RSS %.1f MiB, peak anon %.1f MiB", float64(u.PeakBytes)/mib, float64(u.MaxRSSBytes)/mib, float64(u.PeakAnonBytes)/mib)
			if u.PeakBytes < 64*mib {
				t.Errorf("PeakBytes = %d, want at least the 64 MiB of page cache", u.PeakBytes)
			}
			if u.MaxRSSBytes <= 0 || u.MaxRSSBytes > 16*mib {
				t.Errorf("MaxRSSBytes = %d, want the interpreter's few MiB (0 < RSS <= 16 MiB)", u.MaxRSSBytes)
			}
			if u.PeakAnonBytes > 16*mib {
				t.Errorf("PeakAnonBytes = %d, want under 16 MiB: page cache is not anon", u.PeakAnonBytes)
			}
		})
	}
}

// TestNewRollsBack: when New fails at its last hierarchy, nothing it made
// in the others is left, intermediates included.
func TestNewRollsBack(t *testing.T) {
	for _, layout := range hostLayouts(t) {
		t.Run(string(layout), func(t *testing.T) {
			cfg := Config{Layout: layout, Name: testPrefix() + "rollback", PidsMax: 10}
			probe, err := New(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			last := probe.hs[len(probe.hs)-1]
			if err := probe.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			// Block the last hierarchy's directory.
			if last.inter != "" {
				if err := os.Mkdir(last.interDir(), 0o755); err != nil {
					t.Fatal(err)
				}
				defer unix.Rmdir(last.interDir())
			}
			if err := os.Mkdir(last.dir(), 0o755); err != nil {
				t.Fatal(err)
			}
			defer unix.Rmdir(last.dir())

			_, err = New(t.Context(), cfg)
			if !errors.Is(err, ErrExists) {
				t.Fatalf("New with the %s directory taken = %v, want ErrExists", last.label(), err)
			}
			for _, h := range probe.hs[:len(probe.hs)-1] {
				if _, err := os.Stat(h.dir()); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s group %s left after a failed New (stat: %v)", h.label(), h.dir(), err)
				}
				if h.inter != "" && h.interDir() != last.interDir() {
					if _, err := os.Stat(h.interDir()); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s intermediate %s left after a failed New (stat: %v)", h.label(), h.interDir(), err)
					}
				}
			}
		})
	}
}
