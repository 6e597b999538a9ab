package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"benchd.dev/confine"
	"benchd.dev/fsmon"
)

// Cleanup removes what a crashed benchd left under stateDir: the fsmon
// views still mounted below stateDir/attempts, the cgroups and network
// namespaces of its jobs (confine.Cleanup, namespaces in stateDir/netns,
// cgroups below benchd's own cgroup), the attempt disks still mounted on
// stateDir/attempts/ID/backing (their loop devices detach themselves;
// the images stay), grading copies in attempt
// directories, and the grader scratch roots that a benchd which no longer
// runs left in DefaultScratchDir(stateDir) (or, from older versions, the
// temporary directory). The attempts' records (disk
// image, journal, transcript) are kept. Call it only when no benchd runs
// on stateDir; cgroups, namespaces and scratch of other live processes
// are left alone. cgroupParent is the daemon's CgroupParent ("" for its
// own group).
func Cleanup(ctx context.Context, stateDir, cgroupParent string) error {
	var errs []error
	if _, err := fsmon.Cleanup(AttemptsDir(stateDir)); err != nil {
		errs = append(errs, fmt.Errorf("unable to unmount leftover views: %w", err))
	}
	if err := confine.Cleanup(ctx, confine.CleanupConfig{NetnsRunDir: filepath.Join(stateDir, "netns"), CgroupParent: cgroupParent}); err != nil {
		errs = append(errs, err)
	}
	// Last: the agents that had files open on them are gone now.
	if err := cleanupDisks(AttemptsDir(stateDir)); err != nil {
		errs = append(errs, err)
	}
	grades, _ := filepath.Glob(filepath.Join(AttemptsDir(stateDir), "*", gradePrefix+"*"))
	regrades, _ := filepath.Glob(filepath.Join(stateDir, gradePrefix+"*"))
	grades = append(grades, regrades...)
	grades = append(grades, deadScratch(DefaultScratchDir(stateDir))...)
	grades = append(grades, deadScratch(os.TempDir())...) // where older versions made them
	for _, p := range grades {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deadScratch lists the grader scratch roots in dir whose benchd no
// longer runs.
func deadScratch(dir string) []string {
	ms, _ := filepath.Glob(filepath.Join(dir, scratchPrefix+"*"))
	var out []string
	for _, m := range ms {
		digits, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(m), scratchPrefix), "-")
		pid, err := strconv.Atoi(digits)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			out = append(out, m)
		}
	}
	return out
}
