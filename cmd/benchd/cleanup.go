package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"benchd.dev/daemon"
	"benchd.dev/daemon/runs"
	"benchd.dev/fsmon"
)

type cleanupResult struct {
	Unmounted []string `json:"unmounted"`
}

// runCleanup removes what a crashed benchd left: FUSE views that are
// still mounted and, unless --under narrows it to one directory, the
// cgroups and network namespaces of its attempts in --state (runs.Cleanup).
// Run it only when no benchd is running (systemd's ExecStopPost).
func runCleanup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("cleanup", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	asJSON := fl.Bool("json", false, "print the result as JSON")
	under := fl.String("under", "", "only remove what lies below this directory")
	state := fl.String("state", daemon.DefaultStateDir, "benchd's state directory")
	cgroupParent := fl.String("cgroup-parent", "", "the daemon's --cgroup-parent, if it had one")
	if code, ok := parseFlags(fl, args, stdout, stderr, "", []string{"benchd cleanup", "benchd cleanup --state /tmp/b/state"}); !ok {
		return code
	}
	if os.Geteuid() != 0 {
		return fail(stderr, 2, "cleanup: must run as root")
	}
	res := cleanupResult{Unmounted: []string{}}
	done, err := fsmon.Cleanup(*under)
	res.Unmounted = append(res.Unmounted, done...)
	stateSet := false
	fl.Visit(func(f *flag.Flag) { stateSet = stateSet || f.Name == "state" })
	if *under == "" || stateSet {
		if rerr := runs.Cleanup(ctx, *state, *cgroupParent); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(res)
	} else {
		for _, m := range res.Unmounted {
			fmt.Fprintf(stdout, "unmounted %s\n", m)
		}
		if len(res.Unmounted) == 0 {
			fmt.Fprintln(stdout, "nothing to clean up")
		}
	}
	if err != nil {
		return fail(stderr, 1, "cleanup: %v", err)
	}
	return 0
}
