// Command benchctl is the client of benchd: it starts attempts of an agent
// on a benchmark task, shows their verdicts, and examines the forensic
// record of an attempt (its journal, its changes, its transcript), and it
// checks an exported attempt offline.
//
//	benchctl [--socket PATH] [--json] COMMAND [flags] [ARGS]
//
//	run --task ID --agent A [--attempts N] [--timeout D] [--env NAME]...
//	    [--gateway NAME=https://HOST | NAME=HOST:PORT]... [--model M] [--detach]
//	run --task ID --task ID... | --tasks ID,ID,... | --list LIST --agent A [...]   (one run of every task)
//	wait RUN                    (exit status as run's)
//	list [--run ID] [--task ID] [--limit N]   (says how many more match when the limit cuts it)
//	show ATTEMPT
//	cancel ATTEMPT|RUN...
//	log ATTEMPT [--denied]
//	diff ATTEMPT [--at SEQ] [--all] [--tree]
//	transcript ATTEMPT [--stdout | --stderr]
//	export ATTEMPT -o FILE
//	verify FILE [--key K] [--regrade --tasks DIR [--benchd PATH]]   (offline: needs no benchd running)
//	regrade ATTEMPT
//	key
//	retry RUN                   (exit 1: nothing to retry)
//	review ATTEMPT --pass|--fail --why TEXT
//	tasks list
//	tasks check [ID] [--every D]
//	status
//	draw --library L [--tasks DIR] --seed YYYYMMDD [--cap N] [-o LIST]   (offline)
//	draw --verify LIST --library L [--tasks DIR] [--seed YYYYMMDD]       (offline)
//	library index [--tasks DIR] [--every D] -o FILE
//	library show --library L [--tasks DIR]                               (offline)
//	view [--listen 127.0.0.1:PORT] [--list FILE]...   (a local web page, read-only; runs until interrupted)
//	board, scorecard, model-replay: see benchctl help
//	--version                   (the build: git describe, set by the scripts, or Go's stamp)
//
// Every command answers --help with its usage (every flag), its flags'
// defaults and examples.
//
// ATTEMPT is an attempt's id, a unique prefix of it (at least 4
// characters after "a-", which may be left out) or latest, the newest;
// benchd resolves it.
//
// The socket is --socket, else $BENCHD_SOCKET, else /run/benchd/benchd.sock.
// Every command takes --json (before or after the command), which prints
// one JSON object on stdout (run --tasks/--list, wait, tasks check and
// library index: JSON lines, their progress, the last the result;
// model-replay: JSON lines, its address first, then one per request).
// Errors are one line on stderr; with --json, one JSON object on stdout
// instead, {"error": MESSAGE, "command": NAME, "code": EXIT}, where code
// is the exit status.
//
// Exit status: 0 when the answer is yes (every attempt passed, the archive
// verifies, every task check matched, a regrade gave the same verdict);
// 1 when it is no (an attempt failed, is left to review or was canceled,
// the archive or journal does not verify, a check or a regrade differs, a
// run has nothing to retry); 2 when there is no answer (bad
// usage, benchd unreachable or refusing the request, an infra error of an
// attempt, an attempt still queued or running, an interrupted run); 3 from
// verify when every check passed but no --key was given, so the signer was
// not checked. show and run (without --detach) answer with the verdict
// this way, run with the worst of its attempts'.
//
// The whole CLI lives in this package: main only wires the process
// (arguments, environment, signals, whether stdout is a terminal) into
// CLI.Run, which tests call directly.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"benchd.dev/internal/buildinfo"
)

// version is benchctl's version; the scripts set it with
// -ldflags "-X main.version=...". Empty, the build information says.
var version string

// versionText is what --version prints.
func versionText(prog string) string { return buildinfo.Line(prog, version) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cli := &CLI{
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		LookupEnv: os.LookupEnv,
		Terminal:  isTerminal(os.Stdout),
	}
	code := cli.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// isTerminal reports whether f is a character device (a terminal), which
// is when the live lines of run are drawn.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}
