package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// watchRunDir holds the temporary mountpoints of benchd watch.
const watchRunDir = "/run/benchd/watch"

type watchResult struct {
	Journal   string            `json:"journal"`
	Records   int64             `json:"records"`
	Denied    int64             `json:"denied"`
	ExitCode  int               `json:"exit_code"`
	WallMS    int64             `json:"wall_ms"`
	Changeset journal.Changeset `json:"changeset"`
}

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("watch", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	var allow, ignore listFlag
	fl.Var(&allow, "allow", "glob of paths the command may change (repeatable)")
	fl.Var(&ignore, "ignore", "glob of noise paths: written freely, never in the changeset (repeatable)")
	dir := fl.String("dir", ".", "the directory to journal")
	mode := fl.String("mode", "content", "content (passthrough, content at release) or writes (every write journaled)")
	jpath := fl.String("journal", "", "the journal file to write (must not exist); blobs go to FILE.blobs/")
	mnt := fl.String("mountpoint", "", "where to mount the view (default: a new directory under "+watchRunDir+")")
	asJSON := fl.Bool("json", false, "print the result as JSON")
	if code, ok := parseFlags(fl, args, stdout, stderr, "-- CMD [ARGS...]", []string{"benchd watch --journal /tmp/j.jsonl --allow 'src/**' -- make test"}); !ok {
		return code
	}
	cmdArgs := fl.Args()
	if len(cmdArgs) == 0 {
		return fail(stderr, 2, "watch: no command given (benchd watch [flags] -- CMD [ARGS...])")
	}
	if *jpath == "" {
		return fail(stderr, 2, "watch: --journal FILE is required")
	}
	if os.Geteuid() != 0 {
		return fail(stderr, 2, "watch: must run as root (it mounts a FUSE view)")
	}
	m, err := fsmon.ParseMode(*mode)
	if err != nil {
		return fail(stderr, 2, "watch: %v", err)
	}
	policy := journal.Policy{Allow: allow, Ignore: ignore}
	if err := policy.Validate(); err != nil {
		return fail(stderr, 2, "watch: %v", err)
	}
	backing, err := filepath.Abs(*dir)
	if err == nil {
		backing, err = filepath.EvalSymlinks(backing)
	}
	if err != nil {
		return fail(stderr, 2, "watch: no such directory %s", *dir)
	}
	if st, err := os.Stat(backing); err != nil || !st.IsDir() {
		return fail(stderr, 2, "watch: %s is not a directory", *dir)
	}
	jabs, err := filepath.Abs(*jpath)
	if err != nil {
		return fail(stderr, 2, "watch: %v", err)
	}
	if jabs == backing || strings.HasPrefix(jabs, backing+"/") {
		return fail(stderr, 2, "watch: the journal %s must lie outside the watched directory %s", *jpath, backing)
	}
	if _, err := exec.LookPath(cmdArgs[0]); err != nil && !strings.Contains(cmdArgs[0], "/") {
		return fail(stderr, 2, "watch: command not found: %s", cmdArgs[0])
	}

	mountpoint := *mnt
	if mountpoint == "" {
		if err := os.MkdirAll(watchRunDir, 0o755); err != nil {
			return fail(stderr, 2, "watch: %v", err)
		}
		mountpoint, err = os.MkdirTemp(watchRunDir, "view-")
		if err != nil {
			return fail(stderr, 2, "watch: %v", err)
		}
		defer os.Remove(mountpoint)
	}

	w, err := journal.Create(jabs)
	if err != nil {
		return fail(stderr, 2, "watch: unable to create the journal: %v", err)
	}
	v, err := fsmon.Mount(ctx, fsmon.Config{Backing: backing, Mountpoint: mountpoint, Journal: w, Policy: policy, Mode: m})
	if err != nil {
		w.Close()
		os.Remove(jabs)
		os.RemoveAll(journal.BlobsDir(jabs))
		return fail(stderr, 2, "watch: %v", err)
	}

	// The command runs in the view; relative paths work as in DIR.
	start := time.Now()
	code, runErr := runIn(ctx, mountpoint, cmdArgs)
	wall := time.Since(start)
	unmountErr := v.Unmount(context.Background())
	closeErr := w.Close()
	if runErr != nil {
		return fail(stderr, 2, "watch: %v", runErr)
	}
	if err := errors.Join(unmountErr, closeErr); err != nil {
		return fail(stderr, 2, "watch: %v", err)
	}
	cs, err := v.Changeset()
	if err != nil {
		return fail(stderr, 2, "watch: %v", err)
	}
	st := v.Stats()
	res := watchResult{Journal: jabs, Records: st.Records, Denied: st.Denied, ExitCode: code, WallMS: wall.Milliseconds(), Changeset: cs}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		fmt.Fprintf(stdout, "journal %s: %d records, %d denied; command exited %d after %s\n", jabs, st.Records, st.Denied, code, wall.Round(time.Millisecond))
		if len(cs) == 0 {
			fmt.Fprintln(stdout, "changeset: no changes")
		} else {
			fmt.Fprintln(stdout, "changeset:")
			for _, line := range strings.Split(strings.TrimSuffix(cs.String(), "\n"), "\n") {
				fmt.Fprintln(stdout, "  "+line)
			}
		}
	}
	return code
}

// runIn runs a command with cwd dir, passes SIGINT and SIGTERM on, and
// returns its exit status (128+signal when a signal ended it).
//
// The command is not forked with its cwd in the view: between fork and
// exec the child shares this process's memory, and a chdir into the view
// would wait for a FUSE reply that this process cannot give until the
// child execs. Instead benchd re-executes itself (runInChild), and the
// new process changes directory once it no longer shares anything.
func runIn(ctx context.Context, dir string, args []string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, append([]string{runInChildCmd, dir, "--"}, args...)...)
	cmd.Env = append(os.Environ(), "PWD="+dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("unable to start %s: %w", args[0], err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM)
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

// runInChildCmd is the hidden subcommand of runIn.
const runInChildCmd = "__run-in"

// runInChild changes to the directory args[0] and executes args[2:]
// (args[1] is "--"). It returns only on error.
func runInChild(args []string, stderr io.Writer) int {
	if len(args) < 3 || args[1] != "--" {
		return fail(stderr, 2, "%s: bad arguments", runInChildCmd)
	}
	if err := os.Chdir(args[0]); err != nil {
		return fail(stderr, 126, "watch: %v", err)
	}
	path, err := exec.LookPath(args[2])
	if err != nil {
		return fail(stderr, 127, "watch: %v", err)
	}
	err = syscall.Exec(path, args[2:], os.Environ())
	return fail(stderr, 126, "watch: unable to run %s: %v", args[2], err)
}
