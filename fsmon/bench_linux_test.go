package fsmon_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"benchd.dev/fsmon"
)

// memory is the serving process's resident memory and Go heap in use,
// after a garbage collection.
type memory struct{ rss, heap int64 }

func measure(b *testing.B) memory {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	var rss int64
	sc := bufio.NewScanner(bytes.NewReader(st))
	for sc.Scan() {
		var kb int64
		if n, _ := fmt.Sscanf(sc.Text(), "VmRSS: %d kB", &kb); n == 1 {
			rss = kb << 10
		}
	}
	if rss == 0 {
		b.Fatal("no VmRSS in /proc/self/status")
	}
	return memory{rss, int64(ms.HeapInuse)}
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }

// BenchmarkMemory measures the memory of the process serving a view
// (benchd's part of an attempt) after 100,000 creates and then 100,000
// renames of those files, against the same process with the view
// mounted and idle, measured first in the same run. One iteration is
// the whole workload; run it as
//
//	CI=true go test -run '^$' -bench Memory -benchtime 1x ./fsmon/
//
// It prints the resident memory and Go heap at each step and the growth
// over the baseline; the files cap (default 100,000) is what bounds the
// first, since the kernel keeps every entry it looked up and the view a
// node for each.
func BenchmarkMemory(b *testing.B) {
	const n = 100_000
	for i := 0; i < b.N; i++ {
		v := mountWith(b, fsmon.Config{MaxFiles: 2 * n})
		if err := os.Mkdir(v.p("new"), 0o755); err != nil {
			b.Fatal(err)
		}
		base := measure(b)
		for j := range n {
			if err := os.WriteFile(v.p(fmt.Sprintf("new/f%06d", j)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		created := measure(b)
		for j := range n {
			if err := os.Rename(v.p(fmt.Sprintf("new/f%06d", j)), v.p(fmt.Sprintf("new/g%06d", j))); err != nil {
				b.Fatal(err)
			}
		}
		renamed := measure(b)
		st := v.v.Stats()
		if err := v.v.Unmount(context.Background()); err != nil {
			b.Fatal(err)
		}
		v.done = true
		if err := v.w.Close(); err != nil {
			b.Fatal(err)
		}
		unmounted := measure(b)
		jst, err := os.Stat(v.jpath)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("baseline (view mounted, idle): rss %s, heap %s", mib(base.rss), mib(base.heap))
		b.Logf("after %d creates: rss %s (+%s, %.2fx), heap %s (+%s)", n, mib(created.rss), mib(created.rss-base.rss), float64(created.rss)/float64(base.rss), mib(created.heap), mib(created.heap-base.heap))
		b.Logf("after %d renames: rss %s (+%s over the creates), heap %s (+%s)", n, mib(renamed.rss), mib(renamed.rss-created.rss), mib(renamed.heap), mib(renamed.heap-created.heap))
		b.Logf("after unmount: rss %s, heap %s; journal %d records, %s", mib(unmounted.rss), mib(unmounted.heap), st.Records+1, mib(jst.Size()))
		b.ReportMetric(float64(created.rss-base.rss)/(1<<20), "MiB-rss-creates")
		b.ReportMetric(float64(renamed.rss-created.rss)/(1<<20), "MiB-rss-renames")
		b.ReportMetric(float64(created.rss-base.rss)/n, "B-rss/file")
	}
}
