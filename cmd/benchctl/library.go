package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/draw"
	"benchd.dev/tasks"
)

// libraryIndexed is one bundle's entry as library index found it.
type libraryIndexed struct {
	Task      string   `json:"task"`
	Attempt   string   `json:"attempt"`
	Changeset []string `json:"changeset"`
}

// libraryIndexResult is what library index --json prints.
type libraryIndexResult struct {
	Output      string           `json:"output"`
	Tasks       []libraryIndexed `json:"tasks"`
	LibraryHash string           `json:"library_hash"` // of the bundles with their changesets
}

// libraryEvent is one line of library index --json. Type is "start"
// (Bundles, the task ids in the order they are run), "attempt" (a
// bundle's reference run ended: Attempt, Changeset, View), "progress"
// (View, every --every) or "end", last (View, and the fields of
// libraryIndexResult: the manifest written).
type libraryEvent struct {
	Type      string           `json:"type"`
	Time      time.Time        `json:"time"`
	View      *runView         `json:"view,omitempty"`
	Bundles   []string         `json:"bundles,omitempty"`
	Attempt   *apitype.Attempt `json:"attempt,omitempty"`
	Changeset []string         `json:"changeset,omitempty"`
	*libraryIndexResult
}

// libraryShowResult is what library show --json prints.
type libraryShowResult struct {
	Hash   string       `json:"hash"`
	Tasks  int          `json:"tasks"`
	Worlds []string     `json:"worlds"`
	Groups []draw.Group `json:"groups"`
}

func (c *CLI) cmdLibrary(ctx context.Context, args []string) int {
	if len(args) == 0 {
		return c.usageError("library", "want \"library index\" or \"library show\"")
	}
	switch args[0] {
	case "index":
		return c.cmdLibraryIndex(ctx, args[1:])
	case "show":
		return c.cmdLibraryShow(args[1:])
	case "-h", "--help", "-help":
		c.printCommandUsage(c.newFlags("library"))
		return exitOK
	}
	return c.usageError("library", "unknown subcommand %q: want index or show", args[0])
}

// cmdLibraryIndex runs each bundle's reference solution through benchd
// and writes a manifest with the changeset each one made.
func (c *CLI) cmdLibraryIndex(ctx context.Context, args []string) int {
	f := c.newFlags("library index")
	dir := f.String("tasks", "", "the `DIR` of task bundles (default benchd's own, as benchctl status shows it)")
	out := f.String("o", "", "write the manifest to `FILE` (- for stdout)")
	every := f.Duration("every", defaultEvery, "off a terminal, print the progress every `D` (and as each reference run ends)")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	if *out == "" {
		return c.usageError("library index", "missing -o FILE")
	}
	if *every <= 0 {
		return c.usageError("library index", "--every %v: want a positive duration", *every)
	}
	// Every reference run takes a while: a manifest that could not be
	// written is found out before the first.
	if err := checkOutputFile(*out); err != nil {
		return c.usageError("library index", "-o %s: %v", *out, err)
	}
	if *dir == "" {
		d, err := c.daemonTasksDir(ctx)
		if err != nil {
			return c.fail("library index", exitError, err)
		}
		*dir = d
	}
	bundles, err := tasks.LoadAll(*dir)
	if err != nil {
		return c.fail("library index", exitError, err)
	}
	if len(bundles) == 0 {
		return c.fail("library index", exitError, fmt.Errorf("no task bundle in %s", *dir))
	}
	// The progress goes to stdout, or to stderr as plain lines when the
	// manifest goes to stdout.
	form, pw := formPlain, c.Stdout
	switch {
	case *out == "-":
		pw = c.Stderr
	case f.json:
		form = formJSON
	case c.Terminal:
		form = formTable
	}
	slots := make([]apitype.Attempt, len(bundles))
	ids := make([]string, len(bundles))
	for i, b := range bundles {
		slots[i] = apitype.Attempt{Task: b.ID, State: apitype.StateQueued}
		ids[i] = b.ID
	}
	// One reference run at a time: the estimate is of one at once.
	p := newSetProgress(pw, form, "library index", *every, slots, 1)
	p.begin(fmt.Sprintf("library index: the reference of %s, one at a time", plural(len(bundles), "bundle")),
		libraryEvent{Type: "start", Time: p.now().UTC(), Bundles: ids})
	var entries []draw.Task
	res := libraryIndexResult{Output: *out}
	for i, b := range bundles {
		a, err := c.referenceAttempt(ctx, b.ID, func(id string) {
			p.set(i, apitype.Attempt{ID: id, Task: b.ID, State: apitype.StateQueued})
		})
		if err != nil {
			p.abort()
			return c.fail("library index", exitError, err)
		}
		e := draw.FromBundle(b)
		e.Changeset = draw.ChangeLines(a.Changeset)
		entries = append(entries, e)
		res.Tasks = append(res.Tasks, libraryIndexed{Task: b.ID, Attempt: a.ID, Changeset: e.Changeset})
		text := fmt.Sprintf("%-8s %-14s %s%s", b.ID, a.ID, plural(len(e.Changeset), "change"), attemptTime(a))
		for _, l := range e.Changeset {
			text += "\n         " + l
		}
		a = normalize(a)
		p.ended(i, a, text, func(v runView) any {
			return libraryEvent{Type: "attempt", Time: p.now().UTC(), View: &v, Attempt: &a, Changeset: e.Changeset}
		})
	}
	lib, err := draw.New(entries, bundles)
	if err != nil {
		p.abort()
		return c.fail("library index", exitError, err)
	}
	res.LibraryHash = lib.Hash()
	var comment strings.Builder
	fmt.Fprintf(&comment, "The changesets of the reference solutions of the bundles in %s,\n", *dir)
	comment.WriteString("recorded by benchctl library index from these attempts:\n")
	for _, t := range res.Tasks {
		fmt.Fprintf(&comment, "  %s: attempt %s\n", t.Task, t.Attempt)
	}
	var buf bytes.Buffer
	if err := draw.WriteManifest(&buf, entries, comment.String()); err != nil {
		p.abort()
		return c.fail("library index", exitError, err)
	}
	if *out == "-" {
		p.end(nil)
		c.Stdout.Write(buf.Bytes())
		return exitOK
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		p.abort()
		return c.fail("library index", exitError, fmt.Errorf("unable to write the manifest: %w", err))
	}
	p.end(func(v runView) any {
		return libraryEvent{Type: "end", Time: p.now().UTC(), View: &v, libraryIndexResult: &res}
	})
	if f.json {
		return exitOK
	}
	fmt.Fprintf(c.Stdout, "%d bundle(s) indexed into %s (library %s)\n", len(entries), *out, res.LibraryHash)
	return exitOK
}

// daemonTasksDir is the directory of the bundles benchd runs, which is
// where library index reads them by default: the references it records
// are benchd's runs of those bundles. A benchd that does not say falls
// back to tasks.DefaultDir.
func (c *CLI) daemonTasksDir(ctx context.Context) (string, error) {
	st, err := c.api().Status(ctx)
	if err != nil {
		return "", fmt.Errorf("unable to ask benchd where its tasks are (or give --tasks DIR): %w", err)
	}
	if st.Tasks == "" {
		return tasks.DefaultDir(), nil
	}
	return st.Tasks, nil
}

// referenceAttempt runs builtin:reference on task once and returns the
// finished attempt, which must have passed: a changeset is only taken
// from a reference solution the grader accepts. created is told the
// attempt's id once benchd made it.
func (c *CLI) referenceAttempt(ctx context.Context, task string, created func(id string)) (apitype.Attempt, error) {
	run, err := c.api().CreateRun(ctx, apitype.RunRequest{Task: task, Agent: apitype.AgentReference, Attempts: 1, Purpose: apitype.PurposeIndex})
	if err != nil {
		return apitype.Attempt{}, fmt.Errorf("task %s: %w", task, err)
	}
	if len(run.Attempts) != 1 {
		return apitype.Attempt{}, fmt.Errorf("task %s: run %s has %d attempts, want 1", task, run.ID, len(run.Attempts))
	}
	created(run.Attempts[0])
	as, err := c.watch(ctx, run, false)
	if err != nil {
		return apitype.Attempt{}, fmt.Errorf("task %s: %w", task, err)
	}
	a := as[0]
	switch {
	case a.State == apitype.StateInfraError:
		return a, fmt.Errorf("task %s: attempt %s: infra error: %s", task, a.ID, oneLine(a.InfraError, 200))
	case a.State != apitype.StateDone:
		return a, fmt.Errorf("task %s: attempt %s ended %s", task, a.ID, a.State)
	case !a.Pass:
		return a, fmt.Errorf("task %s: attempt %s: the reference solution failed (%s), so its changeset is not recorded", task, a.ID, reasonCodes(a))
	}
	return a, nil
}

// cmdLibraryShow prints a library's hash and its groups.
func (c *CLI) cmdLibraryShow(args []string) int {
	f := c.newFlags("library show")
	var lf libraryFlags
	lf.add(f)
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	lib, err := lf.load()
	if err != nil {
		return c.fail("library show", exitError, err)
	}
	var eligible []draw.Task
	for _, t := range lib.Tasks {
		if _, ex := draw.ExcludedBefore(t); !ex {
			eligible = append(eligible, t)
		}
	}
	groups := draw.Groups(eligible)
	if f.json {
		c.printJSON(libraryShowResult{Hash: lib.Hash(), Tasks: len(lib.Tasks), Worlds: draw.Worlds(lib.Tasks), Groups: groups})
		return exitOK
	}
	fmt.Fprintf(c.Stdout, "library %s: %d tasks, %d eligible, %d groups, %d worlds\n\n",
		lib.Hash(), len(lib.Tasks), len(eligible), len(groups), len(draw.Worlds(lib.Tasks)))
	byID := map[string]draw.Task{}
	for _, t := range eligible {
		byID[t.ID] = t
	}
	tw := newTable(c.Stdout)
	fmt.Fprintln(tw, "GROUP\tTASKS\tCHANGES\tIDS")
	for _, g := range groups {
		changes := "-"
		if cs := byID[g.Tasks[0]].Changeset; len(cs) > 0 {
			changes = oneLine(strings.Join(cs, "; "), 60)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", g.Key, len(g.Tasks), changes, oneLine(strings.Join(g.Tasks, ","), 60))
	}
	tw.Flush()
	return exitOK
}

// checkOutputFile says whether a file could be written at path ("-" is
// stdout) before a command does the work whose result goes there: its
// directory must exist and be one, and path must not be a directory.
func checkOutputFile(path string) error {
	if path == "-" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("is a directory")
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}
