package runs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"benchd.dev/confine"
	"benchd.dev/graders"
	"benchd.dev/internal/testenv"
)

// spinners is a hostile neighbour: one busy loop per CPU and one more,
// each counting its turns into /workspace/spin<i> now and then.
const spinners = `
import os, sys, time
n = int(sys.argv[1])
for i in range(n):
    if os.fork() == 0:
        c = 0
        while True:
            c += 1
            if c % 100000 == 0:
                with open(f"/workspace/.spin{i}", "w") as f:
                    f.write(str(c))
                os.replace(f"/workspace/.spin{i}", f"/workspace/spin{i}")
while True:
    time.sleep(1)
`

// TestConfinedWorkloadBesideBusyLoops grades RT-04's reference, whose
// map workload has a wall cap, while a confined agent beside it (an
// agent's CPU weight, no quota) keeps every CPU busy and one more: the
// reference still passes. The loops' counters show they ran through the
// whole grading, so the grading did meet them. (Measured on 2 CPUs: the
// grading takes about 3 s beside loops at the agent's weight, about 15 s
// beside loops given weight 10000; the workload's calibration run keeps
// both a PASS.)
func TestConfinedWorkloadBesideBusyLoops(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Netns, testenv.Userns, testenv.Python, testenv.Pytest)
	task := findTask(t, "rt-04")
	n := runtime.NumCPU() + 1
	busyWS := filepath.Join(t.TempDir(), "busy")
	if err := os.Mkdir(busyWS, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(busyWS, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	j, err := confine.Start(ctx, confine.Spec{
		Args:        []string{"/usr/bin/python3", "-c", spinners, strconv.Itoa(n)},
		Workspace:   busyWS,
		UID:         65534,
		GID:         65534,
		Timeout:     10 * time.Minute,
		NetnsRunDir: filepath.Join(t.TempDir(), "netns"),
		CPUWeight:   AgentCPUWeight,
	})
	if err != nil {
		t.Fatalf("start the busy neighbour: %v", err)
	}
	waitCtx, stop := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { _, err := j.Wait(waitCtx); waited <- err }()
	defer func() {
		stop()
		<-waited
	}()
	counts := func() []int {
		out := make([]int, n)
		for i := range out {
			b, _ := os.ReadFile(filepath.Join(busyWS, fmt.Sprintf("spin%d", i)))
			out[i], _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return out
	}
	deadline := time.Now().Add(2 * time.Minute)
	for c := counts(); slices.Contains(c, 0); c = counts() {
		if time.Now().After(deadline) {
			t.Fatalf("the busy loops never all counted: %v", c)
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := counts()

	ws := attemptTree(t, task, task.Reference())
	scratch := t.TempDir()
	os.Chmod(scratch, 0o711)
	runner := ConfinedGraderRunner(GraderRunnerConfig{Mask: []string{tasksDir(t)}, NetnsRunDir: filepath.Join(t.TempDir(), "netns"),
		MemoryMax: int64(task.MemoryMB) << 20, ScratchRoot: scratch})
	v, err := graders.Grade(ctx, graders.Input{Task: task, Workspace: ws, ScratchRoot: scratch}, runner)
	if err != nil {
		t.Fatal(err)
	}
	after := counts()
	if !v.Pass {
		t.Errorf("RT-04's reference beside %d busy loops: got %v\n%s", n, v.Reasons, v.Detail)
	}
	for i := range after {
		if after[i] <= before[i] {
			t.Errorf("busy loop %d did not run during the grading (count %d, then %d)", i, before[i], after[i])
		}
	}
	t.Logf("busy loops' turns during the grading: %v", diff(after, before))
}

// diff is a-b, element by element.
func diff(a, b []int) []int {
	out := make([]int, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}
