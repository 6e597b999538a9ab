// Command benchd is the benchd daemon and its local tools.
//
//	benchd [--socket PATH] [--state DIR] [--tasks DIR] [--concurrency N] [--max-queued N] [--agent-user NAME] [--retries N] [--drain-timeout D] [--metrics ADDR]
//	                                        run the daemon in the foreground
//	benchd watch [flags] -- CMD [ARGS...]   journal a command's changes to a directory
//	benchd journal verify FILE              check a journal's hash chain and blobs
//	benchd grade --task ID DIR              grade a finished workspace
//	benchd cleanup                          remove what a crashed benchd left behind
//	benchd key [--state DIR]                print the host key's public half (made if missing)
//
// Every subcommand takes --json; errors are one line on stderr, and bad
// usage exits 2.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"benchd.dev/sandbox"
)

func main() {
	sandbox.Init()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  benchd [--socket PATH] [--state DIR] [--tasks DIR] [--concurrency N] [--max-queued N] [--agent-user NAME] [--retries N] [--drain-timeout D] [--metrics ADDR]
  benchd watch [--dir DIR] [--allow GLOB]... [--ignore GLOB]... [--mode content|writes] --journal FILE [--json] -- CMD [ARGS...]
  benchd journal verify [--json] FILE
  benchd grade --task ID [--tasks DIR] [--json] DIR
  benchd cleanup [--under DIR] [--state DIR] [--json]
  benchd key [--state DIR] [--json]
`

// run dispatches a subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		return runServe(ctx, args, stdout, stderr)
	}
	switch args[0] {
	case "watch":
		return runWatch(ctx, args[1:], stdout, stderr)
	case "journal":
		if len(args) < 2 || args[1] != "verify" {
			fmt.Fprintln(stderr, "benchd: journal: want \"journal verify FILE\"")
			return 2
		}
		return runVerify(ctx, args[2:], stdout, stderr)
	case "grade":
		return runGrade(ctx, args[1:], stdout, stderr)
	case runInChildCmd:
		return runInChild(args[1:], stderr)
	case "cleanup":
		return runCleanup(ctx, args[1:], stdout, stderr)
	case "key":
		return runKey(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "benchd: unknown command %q\n%s", args[0], usage)
	return 2
}

// fail prints a one-line error and returns code.
func fail(stderr io.Writer, code int, format string, a ...any) int {
	fmt.Fprintf(stderr, "benchd: "+format+"\n", a...)
	return code
}
