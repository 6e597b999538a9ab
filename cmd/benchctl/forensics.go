package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

// readJournal fetches and parses an attempt's journal.
func (c *CLI) readJournal(ctx context.Context, id string) ([]journal.Record, error) {
	rc, err := c.api().Journal(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var recs []journal.Record
	rd := journal.NewReader(rc)
	for {
		r, err := rd.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, fmt.Errorf("journal of %s: %w", id, err)
		}
		recs = append(recs, r)
	}
}

// checkChain verifies the hash chain of recs (not the blobs) and that its
// head is the one benchd stored for the attempt. It returns "" when both
// hold, else what is wrong. An attempt that has not finished has no head
// yet, and its journal may lack the unmount record.
func checkChain(a apitype.Attempt, recs []journal.Record) string {
	if err := journal.Verify(recs, nil); err != nil {
		var ve *journal.VerifyError
		if !finished(a) && errors.As(err, &ve) && strings.HasPrefix(ve.Reason, "missing:") {
			return ""
		}
		return "the journal's hash chain is broken: " + err.Error()
	}
	if head := recs[len(recs)-1].Hash; a.JournalHead != "" && head != a.JournalHead {
		return fmt.Sprintf("the journal's last hash %s is not the head %s stored for the attempt", head, a.JournalHead)
	} else if a.JournalHead == "" && finished(a) {
		return "benchd stored no journal head for the attempt"
	}
	return ""
}

type logResult struct {
	Attempt  string           `json:"attempt"`
	Head     string           `json:"head"`
	Verified bool             `json:"verified"` // chain intact and its head is the stored one
	Problem  string           `json:"problem,omitempty"`
	Records  []journal.Record `json:"records"`
}

func (c *CLI) cmdLog(ctx context.Context, args []string) int {
	f := c.newFlags("log")
	denied := f.Bool("denied", false, "show only the operations the edit policy refused")
	id, code, ok := c.attemptArg(f, args)
	if !ok {
		return code
	}
	a, res, all, err := c.journalLog(ctx, id, *denied)
	if err != nil {
		// A journal that does not parse is an answer: it is damaged.
		var pe *journal.ParseError
		if errors.As(err, &pe) {
			return c.fail("log", exitNo, err)
		}
		return c.fail("log", exitError, err)
	}
	problem := res.Problem
	code = exitOK
	if problem != "" {
		code = exitNo
	}
	if f.json {
		c.printJSON(res)
		return code
	}
	tw := newTable(c.Stdout)
	fmt.Fprintln(tw, "SEQ\tTIME\tPID\tCOMMAND\tOP\tPATH\tDECISION\tRESULT\tDETAIL")
	for _, r := range res.Records {
		pid := "-"
		if r.PID != 0 {
			pid = strconv.FormatUint(uint64(r.PID), 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, formatSince(r.Mono), pid, visible(orDash(r.Comm), false),
			r.Op, visible(recordPaths(r), false), orDash(string(r.Decision)), r.Result, visible(recordDetail(r), false))
	}
	tw.Flush()
	kind := "record"
	if *denied {
		kind = "denied operation"
	}
	fmt.Fprintf(c.Stdout, "\n%s of %d", plural(len(res.Records), kind), all)
	if problem != "" {
		fmt.Fprintln(c.Stdout)
		c.errorLine("log", problem)
		return code
	}
	if finished(a) {
		fmt.Fprintf(c.Stdout, "; chain intact, head %s is the one stored for %s\n", shortSHA(res.Head), id)
	} else {
		fmt.Fprintf(c.Stdout, "; chain intact so far (%s is %s)\n", id, a.State)
	}
	return code
}

// checkedJournal reads attempt id and its journal and checks the
// journal's chain against the attempt's head: problem is what checkChain
// says is wrong, "" when nothing is. An error is one reading them (the
// attempt is returned when it was read). journalLog and diff both start
// here.
func (c *CLI) checkedJournal(ctx context.Context, id string) (a apitype.Attempt, recs []journal.Record, problem string, err error) {
	a, err = c.api().Attempt(ctx, id)
	if err != nil {
		return a, nil, "", err
	}
	recs, err = c.readJournal(ctx, id)
	if err != nil {
		return a, nil, "", err
	}
	return a, recs, checkChain(a, recs), nil
}

// journalLog reads attempt id and its journal and checks the journal's
// chain against the attempt's head: the records (only the denied ones
// when deniedOnly), the journal's length, and in Problem what is wrong
// with the chain. An error is one reading them; a *journal.ParseError
// says the journal is damaged. benchctl log and benchctl view show it.
func (c *CLI) journalLog(ctx context.Context, id string, deniedOnly bool) (apitype.Attempt, logResult, int, error) {
	a, recs, problem, err := c.checkedJournal(ctx, id)
	if err != nil {
		return a, logResult{}, 0, err
	}
	res := logResult{Attempt: id, Verified: problem == "", Problem: problem, Records: []journal.Record{}}
	if len(recs) > 0 {
		res.Head = recs[len(recs)-1].Hash
	}
	for _, r := range recs {
		if !deniedOnly || r.Decision == journal.Denied {
			res.Records = append(res.Records, r)
		}
	}
	return a, res, len(recs), nil
}

// formatSince renders nanoseconds since the mount as "+12.345s".
func formatSince(ns int64) string {
	return fmt.Sprintf("+%.3fs", float64(ns)/1e9)
}

// recordPaths renders the path(s) of a record.
func recordPaths(r journal.Record) string {
	switch {
	case r.Op == journal.OpMount || r.Op == journal.OpUnmount:
		return "/"
	case r.Op == journal.OpSymlink:
		return r.Path + " -> " + r.Target
	case r.Op == journal.OpCopyFileRange && r.Path2 != "":
		return r.Path + " <- " + r.Path2
	case r.Path2 != "":
		return r.Path + " -> " + r.Path2
	case r.Path == "":
		return "."
	}
	return r.Path
}

// recordDetail renders what else a record carries.
func recordDetail(r journal.Record) string {
	var d []string
	switch r.Op {
	case journal.OpMount:
		d = append(d, "initial tree "+shortSHA(r.SHA256))
	case journal.OpUnmount:
		d = append(d, "final tree "+shortSHA(r.SHA256))
	case journal.OpWrite, journal.OpFallocate, journal.OpCopyFileRange:
		d = append(d, fmt.Sprintf("%d bytes at %d", r.Size, r.Offset))
	case journal.OpTruncate:
		d = append(d, fmt.Sprintf("to %d bytes", r.Size))
	case journal.OpRelease:
		d = append(d, fmt.Sprintf("%d bytes, %s", r.Size, shortSHA(r.SHA256)))
	case journal.OpSetxattr, journal.OpRemovexattr:
		d = append(d, r.Name)
	}
	if r.Mode != 0 {
		d = append(d, fmt.Sprintf("mode %#o", r.Mode))
	}
	if r.Flags != 0 {
		d = append(d, fmt.Sprintf("flags %#x", r.Flags))
	}
	if r.UID != 0 {
		d = append(d, fmt.Sprintf("uid %d", r.UID))
	}
	if len(d) == 0 {
		return "-"
	}
	return strings.Join(d, ", ")
}

// blobFetcher keeps the blobs fetched from benchd in a local store,
// each checked against its hash.
type blobFetcher struct {
	c     *CLI
	ctx   context.Context
	id    string
	blobs *journal.Blobs
}

func (b *blobFetcher) fetch(sha string) error {
	if sha == "" || b.blobs.Has(sha) {
		return nil
	}
	rc, err := b.c.api().Blob(b.ctx, b.id, sha)
	if err != nil {
		return fmt.Errorf("blob %s: %w", shortSHA(sha), err)
	}
	defer rc.Close()
	got, _, err := b.blobs.Put(rc)
	if err != nil {
		return err
	}
	if got != sha {
		return fmt.Errorf("blob %s from benchd hashes to %s", sha, got)
	}
	return nil
}

func (b *blobFetcher) read(sha string) ([]byte, error) {
	if sha == journal.EmptySHA256 {
		return nil, nil // replay knows empty files without their blob
	}
	if err := b.fetch(sha); err != nil {
		return nil, err
	}
	return b.blobs.ReadAll(sha)
}

// fileDiff is one changed path and its unified diff.
type fileDiff struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	From   string `json:"from,omitempty"`
	Binary bool   `json:"binary,omitempty"`
	Note   string `json:"note,omitempty"` // a mode or type change diff cannot show
	Diff   string `json:"diff"`
}

type diffResult struct {
	Attempt   string           `json:"attempt"`
	At        uint64           `json:"at"` // the record the tree is taken after
	Record    *journal.Record  `json:"record,omitempty"`
	Changeset []apitype.Change `json:"changeset"`
	Diffs     []fileDiff       `json:"diffs"`
	Tree      []journal.Entry  `json:"tree,omitempty"`
}

func (c *CLI) cmdDiff(ctx context.Context, args []string) int {
	f := c.newFlags("diff")
	at := f.Uint64("at", 0, "show the tree as it stood after record `SEQ` (benchctl log numbers them)")
	all := f.Bool("all", false, "include paths the task's policy ignores")
	tree := f.Bool("tree", false, "list the whole tree instead of the diffs")
	id, code, ok := c.attemptArg(f, args)
	if !ok {
		return code
	}
	atSet := false
	f.Visit(func(fl *flag.Flag) {
		if fl.Name == "at" {
			atSet = true
		}
	})
	if atSet && *at == 0 {
		return c.usageError("diff", "--at 0: records count from 1")
	}
	res, err := c.diff(ctx, id, diffOptions{at: *at, all: *all, tree: *tree})
	var damaged *damagedError
	switch {
	case errors.As(err, &damaged):
		return c.fail("diff", exitNo, err)
	case err != nil:
		return c.fail("diff", exitError, err)
	}
	cs := journal.Changeset(res.Changeset)
	if f.json {
		c.printJSON(res)
		return exitOK
	}
	if res.Record != nil {
		r := res.Record
		fmt.Fprintf(c.Stdout, "# %s after record %d (%s, %s %s): %s since the start\n",
			id, r.Seq, formatSince(r.Mono), r.Op, visible(recordPaths(*r), false), plural(len(cs), "change"))
	} else {
		fmt.Fprintf(c.Stdout, "# %s: %s\n", id, plural(len(cs), "change"))
	}
	for _, ch := range cs {
		fmt.Fprintf(c.Stdout, "#   %s\n", visible(strings.TrimSuffix(journal.Changeset{ch}.String(), "\n"), false))
	}
	if *tree {
		tw := newTable(c.Stdout)
		for _, e := range res.Tree {
			size := "-"
			if e.Type == "file" {
				size = strconv.FormatInt(e.Size, 10)
			}
			name := e.Path
			if e.Type == "symlink" {
				name += " -> " + e.Target
			}
			fmt.Fprintf(tw, "%#o\t%s\t%s\t%s\t%s\n", uint32(e.Mode), e.Type, size, shortSHA(e.SHA256), visible(name, false))
		}
		tw.Flush()
		return exitOK
	}
	for _, d := range res.Diffs {
		fmt.Fprintln(c.Stdout)
		if d.Note != "" {
			fmt.Fprintf(c.Stdout, "# %s: %s\n", visible(d.Path, false), visible(d.Note, false))
		}
		io.WriteString(c.Stdout, visible(d.Diff, true))
	}
	return exitOK
}

// diffOptions are benchctl diff's: the tree after record at (0: the
// final tree), every change rather than the attempt's changeset (all),
// the whole tree rather than the diffs (tree).
type diffOptions struct {
	at        uint64
	all, tree bool
}

// damagedError is a journal that does not check or replay: an answer
// (exit 1), not a failure to get one.
type damagedError struct{ err error }

func (e *damagedError) Error() string { return e.err.Error() }
func (e *damagedError) Unwrap() error { return e.err }

// diff reads attempt id, its journal and the blobs it needs (each
// checked against its hash), checks the chain against the attempt's
// head and replays it: the changeset and each change's unified diff,
// or the tree. A journal that does not check or replay is a
// *damagedError. benchctl diff and benchctl view show it.
func (c *CLI) diff(ctx context.Context, id string, opt diffOptions) (diffResult, error) {
	a, recs, problem, err := c.checkedJournal(ctx, id)
	if err != nil {
		return diffResult{}, err
	}
	// An empty journal and an --at past its end are told before a broken
	// chain.
	if len(recs) == 0 {
		return diffResult{}, fmt.Errorf("the journal of %s is empty", id)
	}
	last := recs[len(recs)-1]
	if opt.at > last.Seq {
		return diffResult{}, fmt.Errorf("--at %d: the journal of %s ends at record %d", opt.at, id, last.Seq)
	}
	if problem != "" {
		return diffResult{}, &damagedError{errors.New(problem)}
	}
	dir, err := os.MkdirTemp("", "benchctl-blobs-")
	if err != nil {
		return diffResult{}, err
	}
	defer os.RemoveAll(dir)
	bf := &blobFetcher{c: c, ctx: ctx, id: id, blobs: &journal.Blobs{Dir: dir}}
	for _, r := range []journal.Record{recs[0], last} {
		if r.Op == journal.OpMount || r.Op == journal.OpUnmount {
			if err := bf.fetch(r.SHA256); err != nil {
				return diffResult{}, err
			}
		}
	}
	upTo := last.Seq
	if opt.at != 0 {
		upTo = opt.at
	}
	before, err := journal.ReplayTree(recs, bf.blobs, 0)
	if err != nil {
		return diffResult{}, &damagedError{err}
	}
	after, err := journal.ReplayTree(recs, bf.blobs, upTo)
	if err != nil {
		return diffResult{}, &damagedError{err}
	}
	res := diffResult{Attempt: id, At: upTo, Diffs: []fileDiff{}}
	if opt.at != 0 {
		r := recs[upTo-1]
		res.Record = &r
	}
	// The attempt's own changeset is what the grader saw (the task's
	// policy left noise out); --at, --all and an attempt without one use
	// every change.
	var cs journal.Changeset
	if opt.at == 0 && !opt.all && a.Changeset != nil && last.Op == journal.OpUnmount {
		cs = a.Changeset
	} else {
		cs = journal.DiffTrees(before, after, nil)
	}
	res.Changeset = append([]apitype.Change{}, cs...)
	if opt.tree {
		res.Tree = make([]journal.Entry, 0, len(after))
		for _, p := range after.Paths() {
			res.Tree = append(res.Tree, after[p])
		}
		return res, nil
	}
	for _, ch := range cs {
		d, err := diffChange(bf, before, after, ch)
		if err != nil {
			return diffResult{}, err
		}
		res.Diffs = append(res.Diffs, d)
	}
	return res, nil
}

// diffChange renders one change as a unified diff of the content before
// and after.
func diffChange(bf *blobFetcher, before, after journal.Tree, ch journal.Change) (fileDiff, error) {
	d := fileDiff{Kind: ch.Kind, Path: ch.Path, From: ch.From}
	oldPath := ch.Path
	if ch.Kind == journal.Renamed {
		oldPath = ch.From
	}
	b, hasB := before[oldPath]
	a, hasA := after[ch.Path]
	if ch.Kind == journal.Added {
		hasB = false
	}
	if ch.Kind == journal.Deleted {
		hasA = false
	}
	content := func(e journal.Entry) ([]byte, error) {
		switch e.Type {
		case "file":
			return bf.read(e.SHA256)
		case "symlink":
			return []byte(e.Target + "\n"), nil
		}
		return nil, nil
	}
	var old, new []byte
	var err error
	aName, bName := "/dev/null", "/dev/null"
	if hasB {
		aName = "a/" + oldPath
		if old, err = content(b); err != nil {
			return d, err
		}
	}
	if hasA {
		bName = "b/" + ch.Path
		if new, err = content(a); err != nil {
			return d, err
		}
	}
	var notes []string
	switch {
	case hasA && hasB && a.Type != b.Type:
		notes = append(notes, fmt.Sprintf("%s became a %s", b.Type, a.Type))
	case hasA && hasB && a.Mode != b.Mode:
		notes = append(notes, fmt.Sprintf("mode %#o -> %#o", uint32(b.Mode), uint32(a.Mode)))
	case hasA && !hasB && a.Type != "file":
		notes = append(notes, fmt.Sprintf("new %s, mode %#o", a.Type, uint32(a.Mode)))
	case hasB && !hasA && b.Type != "file":
		notes = append(notes, fmt.Sprintf("%s removed", b.Type))
	}
	if ch.Kind == journal.Renamed {
		notes = append(notes, "renamed from "+ch.From)
	}
	d.Note = strings.Join(notes, "; ")
	if (hasA && a.Type == "dir") || (hasB && b.Type == "dir") {
		return d, nil
	}
	d.Binary = isBinary(old) || isBinary(new)
	if hasA != hasB && len(old)+len(new) == 0 {
		d.Diff = fmt.Sprintf("--- %s\n+++ %s\n", aName, bName) // an empty file added or removed
		return d, nil
	}
	d.Diff = unifiedDiff(aName, bName, old, new)
	return d, nil
}
