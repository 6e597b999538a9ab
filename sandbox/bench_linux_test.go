package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"benchd.dev/limits"
	"benchd.dev/netns"
	"benchd.dev/sandbox"
	"golang.org/x/sys/unix"
)

// BenchmarkStartup measures set-up + /bin/true + tear-down, as a daemon
// does it: in one long-running process, with a workspace and a masked
// state directory. Each variant's median is reported
// as the metric <variant>-ms; bench/sandbox.sh turns them into ratios to
// bubblewrap's, measured in the same run.
func BenchmarkStartup(b *testing.B) {
	testenv.Require(b, testenv.Root, testenv.Userns, testenv.Bubblewrap)
	dir := b.TempDir()
	os.Chmod(dir, 0o755)
	ws := dir + "/ws"
	os.Mkdir(ws, 0o755)
	os.Chown(ws, nobody, nobody)
	// A state directory to mask, as the daemon always has.
	state, err := os.MkdirTemp("/var/tmp", "benchd-sandbox-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(state) })
	base := sandbox.Config{
		Args:      []string{"/bin/true"},
		UID:       nobody,
		GID:       nobody,
		Workspace: ws,
		Mask:      []string{state},
		Timeout:   time.Minute,
	}
	runDir := b.TempDir()
	ctx := context.Background()

	runs := []struct {
		name  string
		needs []testenv.Feature
		once  func(b *testing.B)
	}{
		{"bwrap", nil, func(b *testing.B) {
			cmd := exec.Command("bwrap", "--unshare-all", "--ro-bind", "/", "/", "true")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("bwrap: %v: %s", err, out)
			}
		}},
		{"sandbox", nil, func(b *testing.B) {
			res, err := sandbox.Run(ctx, base)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("sandbox: %+v, %v", res, err)
			}
		}},
		{"sandbox+limits+netns-closed", []testenv.Feature{testenv.Cgroups, testenv.Netns}, func(b *testing.B) {
			withFacilities(ctx, b, base, runDir, true, netns.Closed)
		}},
		{"sandbox+limits+netns-open", []testenv.Feature{testenv.Cgroups, testenv.Netns}, func(b *testing.B) {
			withFacilities(ctx, b, base, runDir, true, netns.Open)
		}},
		// The breakdown: each facility with the sandbox, and alone.
		{"sandbox+limits", []testenv.Feature{testenv.Cgroups}, func(b *testing.B) {
			withFacilities(ctx, b, base, runDir, true, "")
		}},
		{"sandbox+netns-closed", []testenv.Feature{testenv.Netns}, func(b *testing.B) {
			withFacilities(ctx, b, base, runDir, false, netns.Closed)
		}},
		{"limits-alone", []testenv.Feature{testenv.Cgroups}, func(b *testing.B) {
			g, err := limits.New(ctx, limits.Config{MemoryMax: 512 << 20, PidsMax: 256, SampleInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}},
		{"netns-closed-alone", []testenv.Feature{testenv.Netns}, func(b *testing.B) {
			n, err := netns.New(ctx, netns.Config{Mode: netns.Closed, RunDir: runDir})
			if err != nil {
				b.Fatal(err)
			}
			if err := n.Close(); err != nil {
				b.Fatal(err)
			}
		}},
	}
	// The variants take turns within each iteration, so that a change of
	// load on the machine weighs on all of them alike.
	var active []int
	for i, r := range runs {
		ok := true
		for _, f := range r.needs {
			if err := testenv.Check(f); err != nil {
				b.Logf("skipping %s: needs %s: %v", r.name, f, err)
				ok = false
			}
		}
		if ok {
			active = append(active, i)
		}
	}
	// Wall time, and CPU time (this process and its reaped children):
	// the CPU figure does not depend on how loaded the machine is.
	wall := make([][]time.Duration, len(runs))
	cpu := make([][]time.Duration, len(runs))
	for b.Loop() {
		for _, i := range active {
			c0 := cpuTime(b)
			start := time.Now()
			runs[i].once(b)
			wall[i] = append(wall[i], time.Since(start))
			cpu[i] = append(cpu[i], cpuTime(b)-c0)
		}
	}
	for _, i := range active {
		b.ReportMetric(median(wall[i]), runs[i].name+"-ms")
		b.ReportMetric(median(cpu[i]), runs[i].name+"-cpums")
	}
}

func median(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / float64(time.Millisecond)
}

// cpuTime is the user and system time of this process and of its
// children that have been waited for.
func cpuTime(b *testing.B) time.Duration {
	var total time.Duration
	for _, who := range []int{unix.RUSAGE_SELF, unix.RUSAGE_CHILDREN} {
		var ru unix.Rusage
		if err := unix.Getrusage(who, &ru); err != nil {
			b.Fatal(err)
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

// withFacilities is one attempt's confinement: a cgroup (withGroup), a
// network namespace (mode, unless empty) and the sandbox, made, used and
// removed.
func withFacilities(ctx context.Context, b *testing.B, base sandbox.Config, runDir string, withGroup bool, mode netns.Mode) {
	cfg := base
	var g *limits.Group
	if withGroup {
		var err error
		g, err = limits.New(ctx, limits.Config{MemoryMax: 512 << 20, PidsMax: 256, SampleInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := g.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}()
		cfg.Join, cfg.Kill = g.Add, g.Kill
		if fd, ok := g.FD(); ok {
			cfg.UseCgroupFD, cfg.CgroupFD = true, fd
		}
	}
	if mode != "" {
		n, err := netns.New(ctx, netns.Config{Mode: mode, RunDir: runDir})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := n.Close(); err != nil {
				b.Fatal(err)
			}
		}()
		cfg.NetnsPath = n.Path()
		cfg.Files = []sandbox.File{{Path: "/etc/hosts", Data: n.Hosts()}, {Path: "/etc/resolv.conf", Data: n.ResolvConf()}}
	}
	res, err := sandbox.Run(ctx, cfg)
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("sandbox: %+v, %v", res, err)
	}
}
