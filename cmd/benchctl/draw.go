package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"benchd.dev/draw"
)

// drawVerifyResult is what draw --verify --json prints.
type drawVerifyResult struct {
	List        string           `json:"list"`
	Identical   bool             `json:"identical"`
	Seed        uint64           `json:"seed"`
	Cap         int              `json:"cap"`
	LibraryHash string           `json:"library_hash"`
	Difference  *draw.Difference `json:"difference"` // null when identical
}

// drawResult is what draw --json prints.
type drawResult struct {
	Output string `json:"output,omitempty"` // the list's file
	*draw.Result
}

// libraryFlags are the flags that name a library.
type libraryFlags struct {
	manifests stringList
	tasksDir  string
}

func (lf *libraryFlags) add(f *flags) {
	f.Var(&lf.manifests, "library", "a manifest `L` (TOML or JSON lines) or a directory of them (repeatable)")
	f.StringVar(&lf.tasksDir, "tasks", "", "a `DIR` of task bundles that join the library (their changesets from a manifest: benchctl library index)")
}

func (lf *libraryFlags) load() (*draw.Library, error) {
	if len(lf.manifests) == 0 && lf.tasksDir == "" {
		return nil, errors.New("missing --library L (or --tasks DIR)")
	}
	return draw.Load(draw.LoadConfig{Manifests: lf.manifests, TasksDir: lf.tasksDir})
}

// parseSeed reads a seed: the draw's date as a number, YYYYMMDD.
func parseSeed(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || len(s) != 8 {
		return 0, fmt.Errorf("--seed %q: want the draw's date as YYYYMMDD, such as 20261004", s)
	}
	if _, err := time.Parse("20060102", s); err != nil {
		return 0, fmt.Errorf("--seed %s: not a date (want YYYYMMDD)", s)
	}
	return n, nil
}

func (c *CLI) cmdDraw(ctx context.Context, args []string) int {
	f := c.newFlags("draw")
	var lf libraryFlags
	lf.add(f)
	seedFlag := f.String("seed", "", "the draw's date as a number `YYYYMMDD` (with --verify: the seed the list must state)")
	capFlag := f.Int("cap", draw.DefaultCap, "at most `N` tasks per group")
	out := f.String("o", "", "write the list to `LIST` (default stdout)")
	verify := f.String("verify", "", "draw again and compare with `LIST`: exit 0 when identical, 1 naming the first difference")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	var seed *uint64
	if *seedFlag != "" {
		n, err := parseSeed(*seedFlag)
		if err != nil {
			return c.usageError("draw", "%v", err)
		}
		seed = &n
	}
	if *verify != "" {
		if *out != "" {
			return c.usageError("draw", "-o and --verify do not go together")
		}
		return c.drawVerify(f.json, *verify, &lf, seed)
	}
	if seed == nil {
		return c.usageError("draw", "missing --seed YYYYMMDD (the draw's date)")
	}
	if *capFlag < 1 {
		return c.usageError("draw", "--cap %d: want at least 1", *capFlag)
	}
	if *out != "" {
		if err := checkOutputFile(*out); err != nil {
			return c.usageError("draw", "-o %s: %v", *out, err)
		}
	}
	lib, err := lf.load()
	if err != nil {
		return c.fail("draw", exitError, err)
	}
	res, err := draw.Draw(lib, draw.Rule{Seed: *seed, Cap: *capFlag})
	if err != nil {
		return c.fail("draw", exitError, err)
	}
	list := res.Render()
	if *out != "" && *out != "-" {
		if err := os.WriteFile(*out, list, 0o644); err != nil {
			return c.fail("draw", exitError, fmt.Errorf("unable to write the list: %w", err))
		}
	}
	switch {
	case f.json:
		if *out == "-" {
			return c.usageError("draw", "-o - and --json do not go together")
		}
		c.printJSON(drawResult{Output: *out, Result: res})
	case *out == "" || *out == "-":
		c.Stdout.Write(list)
	default:
		fmt.Fprintf(c.Stdout, "%d tasks drawn with seed %d, cap %d, from library %s; list written to %s\n\n",
			len(res.List), res.Rule.Seed, res.Rule.Cap, res.LibraryHash, *out)
		_, counts, _ := strings.Cut(string(list), "\ncounts\n")
		fmt.Fprint(c.Stdout, counts)
	}
	return exitOK
}

func (c *CLI) drawVerify(asJSON bool, path string, lf *libraryFlags, seed *uint64) int {
	list, err := os.ReadFile(path)
	if err != nil {
		return c.fail("draw", exitError, fmt.Errorf("unable to read the list: %w", err))
	}
	lib, err := lf.load()
	if err != nil {
		return c.fail("draw", exitError, err)
	}
	res, d, err := draw.Verify(list, lib, seed)
	if err != nil {
		return c.fail("draw", exitError, err)
	}
	out := drawVerifyResult{List: path, Identical: d == nil, LibraryHash: lib.Hash(), Difference: d}
	if rule, err := draw.ReadRule(list); err == nil {
		out.Seed, out.Cap = rule.Seed, rule.Cap
	}
	code := exitOK
	if d != nil {
		code = exitNo
	}
	if asJSON {
		c.printJSON(out)
		return code
	}
	if d != nil {
		fmt.Fprintf(c.Stdout, "%s differs from the rule's list (%s): %s\n", path, d.What, d.Message)
		return code
	}
	fmt.Fprintf(c.Stdout, "%s is the rule's list: seed %d, cap %d, %d tasks, library %s\n",
		path, out.Seed, out.Cap, len(res.List), out.LibraryHash)
	return code
}
