package limits

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"golang.org/x/sys/unix"
)

// BenchmarkLifecycle times make + add a process + read the peak + take
// the process out + remove, through this package (New, Add, Usage, Close:
// every hierarchy, the intermediate, the sampler) and as a baseline with
// the fewest raw file operations that do the same for the memory group
// alone, alternating the two in the same run. It reports both costs and
// their ratio (x-raw). The process is a sleep started once and moved back
// to its own cgroups after each round, so no fork is timed.
func BenchmarkLifecycle(b *testing.B) {
	testenv.Require(b, testenv.Root, testenv.Cgroups)
	sleeper := exec.Command("/bin/sleep", "300")
	if err := sleeper.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	pid := strconv.Itoa(sleeper.Process.Pid)

	own, err := readProcCgroup(DefaultProcCgroup)
	if err != nil {
		b.Fatal(err)
	}
	// The baseline's memory hierarchy and parent.
	mem := filepath.Join(DefaultRoot, "memory", own.v1["memory"])
	peakFile := "memory.max_usage_in_bytes"
	if Mode() == Unified {
		mem = filepath.Join(DefaultRoot, own.unified)
		peakFile = "memory.peak"
	}
	ctx := context.Background()
	var raw, ours time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		dir := filepath.Join(mem, fmt.Sprintf("%sraw-%d", testPrefix(), n))
		must(b, os.Mkdir(dir, 0o755))
		must(b, writeFile(dir+"/cgroup.procs", pid))
		if _, err := os.ReadFile(dir + "/" + peakFile); err != nil {
			b.Fatal(err)
		}
		must(b, writeFile(mem+"/cgroup.procs", pid))
		must(b, unix.Rmdir(dir))
		t1 := time.Now()
		g, err := New(ctx, Config{Name: fmt.Sprintf("%sbench-%d", testPrefix(), n), MemoryMax: 1 << 30, PidsMax: 100})
		must(b, err)
		must(b, g.Add(sleeper.Process.Pid))
		if _, err := g.Usage(); err != nil {
			b.Fatal(err)
		}
		for i := range g.hs {
			h := &g.hs[i]
			must(b, writeFile(filepath.Join(h.mount, h.parent, "cgroup.procs"), pid))
		}
		must(b, g.Close(ctx))
		t2 := time.Now()
		raw += t1.Sub(t0)
		ours += t2.Sub(t1)
		n++
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(raw.Microseconds())/float64(n), "raw-µs/op")
	b.ReportMetric(float64(ours.Microseconds())/float64(n), "limits-µs/op")
	b.ReportMetric(float64(ours)/float64(raw), "x-raw")
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
