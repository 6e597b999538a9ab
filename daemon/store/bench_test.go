package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

// benchRecords is the size of the benchmark's journal.
const benchRecords = 200_000

// BenchmarkIngestJournal ingests a journal of 200,000 records written by
// journal.Writer and reports records/s. As a baseline it first reads the
// same journal with journal.NewReader alone (what ingestion cannot go
// below) and reports that rate and the ratio. It runs on each backend;
// on PostgreSQL records/cpu-s counts only benchd's side (the server is
// another process), and the test cluster runs with fsync off.
//
//	go test -run '^$' -bench IngestJournal -benchtime 3x ./daemon/store/
func BenchmarkIngestJournal(b *testing.B) {
	ctx := context.Background()
	path, recs := testJournal(b, b.TempDir(), (benchRecords-3)/2)
	n := len(recs)
	if n < benchRecords-1 {
		b.Fatalf("journal has %d records, want about %d", n, benchRecords)
	}
	readStart := time.Now()
	f, err := os.Open(path)
	must(b, err)
	rd := journal.NewReader(f)
	for {
		if _, err := rd.Next(); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	readRate := float64(n) / time.Since(readStart).Seconds()

	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("a%d", i)
				b.StopTimer()
				mustCreate(b, s, apitype.Attempt{ID: id, Task: "rt-01"})
				b.StartTimer()
				_, got, err := s.IngestJournal(ctx, id, path)
				if err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("ingested %d records, want %d", got, n)
				}
			}
			b.StopTimer()
			rate := float64(n) * float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "records/s")
			// The machine may be shared: the rate per second of this process's
			// CPU time is what the code costs, whatever else runs.
			b.ReportMetric(float64(n)*float64(b.N)/(cpuTime()-cpu0).Seconds(), "records/cpu-s")
			b.ReportMetric(readRate, "read-only-records/s")
			b.ReportMetric(rate/readRate, "ingest/read")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpuTime returns the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
