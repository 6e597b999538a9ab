package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"benchd.dev/internal/buildinfo"
)

// version is benchd's version; the scripts set it with
// -ldflags "-X main.version=...". Empty, the build information says.
var version string

// versionText is what --version prints.
func versionText(prog string) string { return buildinfo.Line(prog, version) }

// flagLine is the usage line of fl's flags, made from the set itself so
// that it names every flag: "[--name VALUE]..." ("[--name]" for a bool).
func flagLine(fl *flag.FlagSet) string {
	var parts []string
	fl.VisitAll(func(f *flag.Flag) {
		name, _ := flag.UnquoteUsage(f)
		if name == "" {
			parts = append(parts, "[--"+f.Name+"]")
			return
		}
		parts = append(parts, fmt.Sprintf("[--%s %s]", f.Name, strings.ToUpper(name)))
	})
	return strings.Join(parts, " ")
}

// commandName is how a flag set's command is typed: "benchd" for the
// daemon, "benchd watch" for a subcommand.
func commandName(fl *flag.FlagSet) string {
	if fl.Name() == "benchd" {
		return "benchd"
	}
	return "benchd " + fl.Name()
}

// printFlagsUsage prints a command's usage: its line, its flags and
// their defaults, and its examples.
func printFlagsUsage(w io.Writer, fl *flag.FlagSet, tail string, examples []string) {
	line := strings.TrimSpace(commandName(fl) + " " + flagLine(fl) + " " + tail)
	fmt.Fprintf(w, "usage: %s\n\nflags:\n", line)
	fl.SetOutput(w)
	fl.PrintDefaults()
	fl.SetOutput(io.Discard)
	if len(examples) > 0 {
		fmt.Fprintf(w, "\nexamples:\n")
		for _, e := range examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// parseFlags parses args into fl. It returns false when the command
// should stop, with its exit status: 0 after --help printed the usage,
// 2 after a usage error.
func parseFlags(fl *flag.FlagSet, args []string, stdout, stderr io.Writer, tail string, examples []string) (int, bool) {
	err := fl.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		printFlagsUsage(stdout, fl, tail, examples)
		return 0, false
	case fl.Name() == "benchd":
		return fail(stderr, 2, "%v", err), false
	}
	return fail(stderr, 2, "%s: %v", fl.Name(), err), false
}

// usageText is benchd's help: the daemon's usage in full, then one line
// for each subcommand, whose own --help describes it.
func usageText() string {
	var b strings.Builder
	fl, _ := serveFlags()
	printFlagsUsage(&b, fl, "", serveExamples)
	b.WriteString(`
subcommands ("benchd COMMAND --help" describes one):
  benchd watch [flags] -- CMD [ARGS...]   journal a command's changes to a directory
  benchd journal verify [flags] FILE      check a journal's hash chain and blobs
  benchd grade --task ID [flags] DIR      grade a finished workspace
  benchd cleanup [flags]                  remove what a crashed benchd left behind
  benchd key [flags]                      print the host key's public half (made if missing)
  benchd --version                        print the version
`)
	return b.String()
}
