// Command benchd is the benchd daemon and its local tools.
//
//	benchd [flags]                          run the daemon in the foreground (benchd --help lists its flags)
//	benchd watch [flags] -- CMD [ARGS...]   journal a command's changes to a directory
//	benchd journal verify FILE              check a journal's hash chain and blobs
//	benchd grade --task ID DIR              grade a finished workspace
//	benchd cleanup                          remove what a crashed benchd left behind
//	benchd key [--state DIR]                print the host key's public half (made if missing)
//	benchd --version                        print the version
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

// run dispatches a subcommand and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprint(stdout, versionText("benchd"))
		return 0
	}
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
		fmt.Fprint(stdout, usageText())
		return 0
	}
	fmt.Fprintf(stderr, "benchd: unknown command %q (benchd --help lists them)\n", args[0])
	return 2
}

// fail prints a one-line error and returns code.
func fail(stderr io.Writer, code int, format string, a ...any) int {
	fmt.Fprintf(stderr, "benchd: "+format+"\n", a...)
	return code
}
