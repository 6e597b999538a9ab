package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/forensics"
	"benchd.dev/fsmon/journal"
)

// cmdVerify is benchctl verify: the checks are forensics.Verify's; this
// reads the flags and prints the result.
func (c *CLI) cmdVerify(ctx context.Context, args []string) int {
	f := c.newFlags("verify")
	keyArg := f.String("key", "", "benchd's public host key: `FILE` or 64 hex digits, as benchctl key prints it (without it the signer is not checked, exit 3)")
	regradeFlag := f.Bool("regrade", false, "grade the attempt again from its journal with benchd's grader and compare verdicts (needs --tasks; run as root so the agent's code runs confined)")
	tasksFlag := f.String("tasks", "", "with --regrade: the directory of task bundles holding the bundle the attempt was graded with")
	benchdFlag := f.String("benchd", "", "with --regrade: the benchd binary to grade with (default: beside benchctl, then PATH)")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 1, 1, "FILE"); !ok {
		return code
	}
	file := pos[0]
	var key ed25519.PublicKey
	if *keyArg != "" {
		k, err := parseKey(*keyArg)
		if err != nil {
			return c.usageError("verify", "%v", err)
		}
		key = k
	}
	opt := forensics.Options{Key: key}
	if *regradeFlag {
		if *tasksFlag == "" {
			return c.usageError("verify", "--regrade needs --tasks DIR, the bundles to grade with")
		}
		bin, err := findBenchd(*benchdFlag)
		if err != nil {
			return c.usageError("verify", "%v", err)
		}
		tasksDir := *tasksFlag
		opt.Regrade = func(ctx context.Context, root string, a apitype.Attempt, recs []journal.Record, blobs *journal.Blobs) (string, error) {
			return regrade(ctx, root, a, recs, blobs, tasksDir, bin)
		}
	} else if *tasksFlag != "" || *benchdFlag != "" {
		return c.usageError("verify", "--tasks and --benchd go with --regrade")
	}
	if _, err := os.Stat(file); err != nil {
		return c.fail("verify", exitError, err)
	}
	res, err := forensics.Verify(ctx, file, opt)
	if err != nil {
		return c.fail("verify", exitError, err)
	}
	code = exitOK
	switch {
	case !res.OK:
		code = exitNo
	case !res.SignerChecked:
		code = exitUnchecked
	}
	if f.json {
		c.printJSON(res)
		return code
	}
	tw := newTable(c.Stdout)
	for _, ch := range res.Checks {
		word := "ok"
		switch {
		case !ch.OK:
			word = "FAIL"
		case ch.Name == "signature" && !res.SignerChecked:
			// The envelope's form was checked, not who signed it: "ok"
			// would claim what no key could show.
			word = "unchecked"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", word, ch.Name, ch.Detail)
	}
	tw.Flush()
	for _, n := range res.Notes {
		fmt.Fprintf(c.Stdout, "note: %s\n", n)
	}
	if rv := res.Review; rv != nil {
		fmt.Fprintf(c.Stdout, "reviewed: %s by uid %d at %s (the grader had left it to review): %s\n",
			rv.Outcome, rv.UID, rv.Time.UTC().Format(time.RFC3339), oneLine(rv.Why, 200))
	}
	if res.OK && res.SignerChecked {
		fmt.Fprintf(c.Stdout, "verified: %s: attempt %s of task %s, signed by the key given (keyid %s)\n", file, res.Attempt, res.Task, shortSHA(res.KeyID))
		return code
	}
	if res.OK {
		fmt.Fprintf(c.Stdout, "verified, except the signer: %s: attempt %s of task %s; the signer was not checked (give --key)\n", file, res.Attempt, res.Task)
		return code
	}
	c.errorLine("verify", file+": "+res.FirstProblem())
	return code
}
