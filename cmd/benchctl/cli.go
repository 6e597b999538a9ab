package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"benchd.dev/client"
)

// Exit statuses.
const (
	exitOK    = 0 // the answer is yes
	exitNo    = 1 // the answer is no
	exitError = 2 // no answer: bad usage, benchd unreachable, infra error
)

// CLI is benchctl with its process around it made explicit.
type CLI struct {
	Stdout, Stderr io.Writer
	// LookupEnv reads benchctl's own environment: run --env NAME sends
	// the value of NAME found here.
	LookupEnv func(name string) (string, bool)
	// Terminal says whether Stdout is a terminal; run draws its live
	// lines only then.
	Terminal bool

	socket   string
	jsonFlag bool // --json given before the command
	// jsonErrors says whether errors are printed as JSON (errorJSON):
	// --json anywhere in the arguments until the command's flags are
	// parsed, then the value the command's --json flag got.
	jsonErrors bool
	client     *client.Client
}

// command is one subcommand.
type command struct {
	name  string
	args  string // usage after the name; flags it leaves out are added from the flag set
	short string
	run   func(c *CLI, ctx context.Context, args []string) int
}

// examples are a few command lines of each command, printed by its --help.
var examples = map[string][]string{
	"run": {
		"benchctl run --task rt-01 --agent builtin:reference",
		"benchctl run --task rt-01 --task rt-02 --agent builtin:reference --attempts 3   # one run of both tasks",
		"OPENAI_API_KEY=... benchctl run --task rt-01 --agent codex --env OPENAI_API_KEY --gateway model=https://api.openai.com --model gpt-5-codex",
		"ANTHROPIC_API_KEY=... benchctl run --task rt-01 --agent claude --env ANTHROPIC_API_KEY --gateway model=https://api.anthropic.com",
		"benchctl run --list batch.list --agent qwen --env OPENAI_API_KEY --gateway model=http://127.0.0.1:8080 --detach",
	},
	"wait":         {"benchctl wait r-3f2a9c01d4e5b6a7"},
	"list":         {"benchctl list", "benchctl list --task rt-01 --state done --limit 50", "benchctl list --run r-3f2a9c01d4e5b6a7 --json"},
	"show":         {"benchctl show latest", "benchctl show a-bf78 --json"},
	"cancel":       {"benchctl cancel latest", "benchctl cancel r-3f2a9c01d4e5b6a7"},
	"log":          {"benchctl log latest", "benchctl log a-bf78 --denied"},
	"diff":         {"benchctl diff latest", "benchctl diff a-bf78 --at 12 --tree"},
	"transcript":   {"benchctl transcript latest", "benchctl transcript a-bf78 --stderr"},
	"model":        {"benchctl model latest", "benchctl model a-bf78 --request 3"},
	"export":       {"benchctl export latest -o attempt.tar", "benchctl export a-bf78 -o - | benchctl verify -"},
	"verify":       {"benchctl verify attempt.tar --key $(benchctl key)"},
	"key":          {"benchctl key"},
	"regrade":      {"benchctl regrade latest"},
	"retry":        {"benchctl retry r-3f2a9c01d4e5b6a7"},
	"review":       {"benchctl review a-bf78 --pass --why \"the reply answers the question\""},
	"tasks":        {"benchctl tasks list", "benchctl tasks check rt-01"},
	"status":       {"benchctl status", "benchctl status --json"},
	"draw":         {"benchctl draw --library lib.toml --seed 20261204 -o batch.list", "benchctl draw --verify batch.list --library lib.toml"},
	"library":      {"benchctl library index -o lib.toml", "benchctl library show --library lib.toml"},
	"board":        {"benchctl board --agent builtin:reference"},
	"scorecard":    {"benchctl scorecard", "benchctl scorecard --since 2026-12-01 --html card.html"},
	"prune":        {"benchctl prune --before 2026-11-01 --dry-run"},
	"view":         {"benchctl view", "benchctl view --listen 127.0.0.1:8088 --list batch.list"},
	"model-replay": {"benchctl model-replay --script fix.json --listen 127.0.0.1:8080"},
}

var commands []command

func init() {
	commands = []command{
		{"run", "(--task ID [--task ID]... | --tasks ID,ID,... | --list LIST) --agent A [--attempts N] [--timeout D] [--env NAME]... [--gateway NAME=https://HOST[:PORT][/PATH] | NAME=HOST:PORT]... [--model M] [--detach] [--every D]", "run attempts of one task, or of several as one run, and wait for their verdicts", (*CLI).cmdRun},
		{"wait", "RUN [--every D]", "follow a run's progress until every attempt has ended; exit status as run's", (*CLI).cmdWait},
		{"list", "[--agent A] [--model M] [--run ID] [--task ID]... [--series S] [--state S]... [--purpose P]... [--since WHEN] [--until WHEN] [--limit N]", "list attempts, newest first", (*CLI).cmdList},
		{"show", "ATTEMPT", "show an attempt: verdict, every reason, metrics, agent identity", (*CLI).cmdShow},
		{"cancel", "ATTEMPT|RUN...", "cancel queued or running attempts; a run (r-...): every queued and running attempt of it", (*CLI).cmdCancel},
		{"log", "ATTEMPT [--denied]", "the journal as a timeline", (*CLI).cmdLog},
		{"diff", "ATTEMPT [--at SEQ] [--all] [--tree]", "the changeset and unified diffs, or the tree at record SEQ", (*CLI).cmdDiff},
		{"transcript", "ATTEMPT [--stdout | --stderr] [--raw]", "the agent's captured output", (*CLI).cmdTranscript},
		{"model", "ATTEMPT [--request SEQ | --response SEQ] [--raw]", "the model calls through the attempt's HTTP gateways: a table, or one call's stored request or response", (*CLI).cmdModel},
		{"export", "ATTEMPT -o FILE", "write the attempt's archive to FILE (- for stdout)", (*CLI).cmdExport},
		{"verify", "FILE [--key FILE|HEX]", "check an exported archive offline: its signature, journal, blobs and what the verdict claims about the journal (exit 0 verified, 1 a check failed, 2 unreadable or bad usage, 3 verified but the signer not checked: no --key)", (*CLI).cmdVerify},
		{"key", "", "print the public half of benchd's host key (hex), which signs every ended attempt", (*CLI).cmdKey},
		{"regrade", "ATTEMPT", "grade the stored final tree again", (*CLI).cmdRegrade},
		{"retry", "RUN", "retry each attempt of the run that ended in an infra error and is not retried yet (exit 1: nothing to retry)", (*CLI).cmdRetry},
		{"review", "ATTEMPT --pass|--fail --why TEXT", "decide a verdict the grader left to review (recorded with your uid, signed, exported)", (*CLI).cmdReview},
		{"tasks", "list | check [ID] [--every D]", "list tasks, or check that their known attempts get their verdicts, showing the progress", (*CLI).cmdTasks},
		{"status", "", "describe the daemon", (*CLI).cmdStatus},
		{"draw", "--library L [--tasks DIR] --seed YYYYMMDD [--cap N] [-o LIST] | --verify LIST --library L [--tasks DIR] [--seed YYYYMMDD]", "draw a batch of tasks by seed 000's rule, or check a drawn list", (*CLI).cmdDraw},
		{"library", "index [--tasks DIR] [--every D] -o FILE | show --library L [--tasks DIR]", "record the bundles' changesets, or show a library's groups", (*CLI).cmdLibrary},
		{"board", "--agent A [--streak N] [--attempts N] [--model M]... [--since WHEN] [--until WHEN] [--purpose P | --all-purposes]", "run the six-task suite (gate first) and show its streaks (counting runs only, unless asked)", (*CLI).cmdBoard},
		{"scorecard", "[--series S] [--list FILE]... [--html FILE] [--agent A] [--model M] [--run ID] [--task ID]... [--state S]... [--since WHEN] [--until WHEN] [--purpose P... | --all-purposes]", "completion rates with intervals, per series (runs only, unless asked)", (*CLI).cmdScorecard},
		{"prune", "--before WHEN [--purpose P]... [--dry-run]", "delete ended attempts created before WHEN, their records, unused blobs and work directories; say what it freed", (*CLI).cmdPrune},
	}
}

func usageText() string {
	var b strings.Builder
	b.WriteString("usage: benchctl [--socket PATH] [--json] COMMAND [flags] [ARGS]\n\ncommands:\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", cmd.name, cmd.short)
	}
	b.WriteString("\nevery command takes --json; \"benchctl COMMAND --help\" describes one; benchctl --version prints the version.\n")
	return b.String()
}

// Run runs benchctl with args (without the program name) and returns the
// exit status.
func (c *CLI) Run(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("benchctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.socket, "socket", "", "benchd's socket")
	fs.BoolVar(&c.jsonFlag, "json", false, "print JSON")
	showVersion := fs.Bool("version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.Stdout, usageText())
			return exitOK
		}
		c.jsonErrors = c.jsonFlag || jsonArg(args)
		return c.usageError("", "%v", err)
	}
	args = fs.Args()
	c.jsonErrors = c.jsonFlag || jsonArg(args)
	if *showVersion {
		fmt.Fprint(c.Stdout, versionText("benchctl"))
		return exitOK
	}
	if len(args) == 0 {
		if c.jsonErrors {
			return c.usageError("", "no command given (benchctl help lists them)")
		}
		fmt.Fprint(c.Stderr, usageText())
		return exitError
	}
	name := args[0]
	if name == "help" {
		fmt.Fprint(c.Stdout, usageText())
		return exitOK
	}
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd.run(c, ctx, args[1:])
		}
	}
	return c.usageError("", "unknown command %q (benchctl help lists them)", name)
}

// api returns the client, made on first use, for the socket chosen.
func (c *CLI) api() *client.Client {
	if c.client == nil {
		c.client = &client.Client{Socket: c.socket}
	}
	return c.client
}

// flags starts a subcommand's flag set with the flags every command has.
type flags struct {
	*flag.FlagSet
	cmd  string
	json bool
}

func (c *CLI) newFlags(cmd string) *flags {
	f := &flags{FlagSet: flag.NewFlagSet(cmd, flag.ContinueOnError), cmd: cmd}
	f.SetOutput(io.Discard)
	f.BoolVar(&f.json, "json", c.jsonFlag, "print JSON")
	f.StringVar(&c.socket, "socket", c.socket, "benchd's socket (default $BENCHD_SOCKET, else /run/benchd/benchd.sock)")
	return f
}

// parse parses flags and positional arguments in any order ("--" ends
// the flags). It returns the positional arguments, or an exit status when
// the command should stop: usage printed for --help, or a usage error.
func (c *CLI) parse(f *flags, args []string) ([]string, int, bool) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printCommandUsage(f)
				return nil, exitOK, false
			}
			// The flags after the bad one were not parsed: a --json among
			// them still asks for the error as JSON.
			c.jsonErrors = f.json || jsonArg(args)
			return nil, c.usageError(f.cmd, "%v", err), false
		}
		rest := f.Args()
		if len(rest) == 0 {
			c.jsonErrors = f.json
			return pos, 0, true
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			c.jsonErrors = f.json
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func (c *CLI) printCommandUsage(f *flags) {
	name := strings.Fields(f.cmd)[0]
	for _, cmd := range commands {
		if cmd.name == name {
			fmt.Fprintf(c.Stdout, "usage: benchctl %s\n\n%s\n\nflags:\n", commandUsageLine(cmd, f), cmd.short)
		}
	}
	f.SetOutput(c.Stdout)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
	if ex := examples[name]; len(ex) > 0 {
		fmt.Fprintf(c.Stdout, "\nexamples:\n")
		for _, e := range ex {
			fmt.Fprintf(c.Stdout, "  %s\n", e)
		}
	}
}

// commandUsageLine is cmd's usage: its written form, then every flag of f that
// form does not name, made from the flag set, so that none goes unsaid.
// --json and --socket, which every command takes, end it.
func commandUsageLine(cmd command, f *flags) string {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(cmd.args, func(r rune) bool { return strings.ContainsRune(" []()|=.", r) }) {
		words[w] = true
	}
	line := strings.TrimSpace(cmd.name + " " + cmd.args)
	f.VisitAll(func(fl *flag.Flag) {
		if fl.Name == "json" || fl.Name == "socket" || words["--"+fl.Name] || words["-"+fl.Name] {
			return
		}
		if v, _ := flag.UnquoteUsage(fl); v != "" {
			line += fmt.Sprintf(" [--%s %s]", fl.Name, strings.ToUpper(v))
		} else {
			line += " [--" + fl.Name + "]"
		}
	})
	return line + " [--json] [--socket PATH]"
}

// wantArgs checks the number of positional arguments.
func (c *CLI) wantArgs(f *flags, pos []string, min, max int, what string) (int, bool) {
	if len(pos) < min {
		return c.usageError(f.cmd, "missing %s", what), false
	}
	if max >= 0 && len(pos) > max {
		return c.usageError(f.cmd, "unexpected argument %q", pos[max]), false
	}
	return 0, true
}

// jsonArg reports whether args, up to a "--", hold a --json flag that
// is true ("--json", "-json", "--json=true"); it is how an error found
// before (or instead of) parsing a command's flags knows to be JSON.
func jsonArg(args []string) bool {
	on := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			name, ok = strings.CutPrefix(a, "-")
		}
		if !ok {
			continue
		}
		if name == "json" {
			on = true
		} else if v, ok := strings.CutPrefix(name, "json="); ok {
			on, _ = strconv.ParseBool(v)
		}
	}
	return on
}

// errorJSON is an error as a command given --json prints it, on stdout
// in place of its result.
type errorJSON struct {
	Error   string `json:"error"`   // the message, one line
	Command string `json:"command"` // e.g. "show", "tasks check"; "" for benchctl itself
	Code    int    `json:"code"`    // the exit status
}

// usageError prints a one-line usage error and returns exitError.
func (c *CLI) usageError(cmd, format string, a ...any) int {
	return c.report(cmd, exitError, fmt.Sprintf(format, a...))
}

// fail prints err and returns code.
func (c *CLI) fail(cmd string, code int, err error) int {
	return c.report(cmd, code, err.Error())
}

// report prints an error of cmd that ends it with code: one line on
// stderr, or, when --json was given, one JSON object (errorJSON) on
// stdout. Every command's errors go through it.
func (c *CLI) report(cmd string, code int, msg string) int {
	if c.jsonErrors {
		c.printJSON(errorJSON{Error: oneLineMessage(msg), Command: cmd, Code: code})
		return code
	}
	c.errorLine(cmd, msg)
	return code
}

// oneLineMessage joins a message's lines with "; " and its spaces.
func oneLineMessage(msg string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
}

// errorLine prints msg as one line on stderr, for text output.
func (c *CLI) errorLine(cmd, msg string) {
	msg = oneLineMessage(msg)
	if cmd != "" {
		fmt.Fprintf(c.Stderr, "benchctl %s: %s\n", cmd, msg)
	} else {
		fmt.Fprintf(c.Stderr, "benchctl: %s\n", msg)
	}
}

// printJSON prints v as one indented JSON object.
func (c *CLI) printJSON(v any) {
	enc := json.NewEncoder(c.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
