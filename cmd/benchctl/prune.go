package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"benchd.dev/client/apitype"
)

func (c *CLI) cmdPrune(ctx context.Context, args []string) int {
	f := c.newFlags("prune")
	before := f.String("before", "", "delete the ended attempts created before `WHEN`: "+whenHelp)
	var purposes stringList
	f.Var(&purposes, "purpose", "only attempts of purpose `P`: "+strings.Join(apitype.Purposes, ", ")+" (repeatable; default every purpose)")
	dryRun := f.Bool("dry-run", false, "say what would go, delete nothing")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	req, err := pruneRequest(*before, purposes, *dryRun, time.Now())
	if err != nil {
		return c.usageError("prune", "%v", err)
	}
	p, err := c.api().Prune(ctx, req)
	if err != nil {
		return c.fail("prune", exitError, err)
	}
	if f.json {
		c.printJSON(p)
		return exitOK
	}
	verb := "pruned"
	if p.DryRun {
		verb = "would prune"
	}
	fmt.Fprintf(c.Stdout, "%s %s created before %s (%s, %s): %s freed (blobs %s, records %s, work directories %s)\n",
		verb, plural(len(p.Attempts), "ended attempt"), req.Before.UTC().Format(time.RFC3339),
		plural(p.Runs, "emptied run"), plural(p.Blobs, "unused blob"),
		formatBytes(p.Bytes()), formatBytes(p.BlobBytes), formatBytes(p.RecordBytes), formatBytes(p.WorkBytes))
	if len(p.KeptForRetries) > 0 {
		fmt.Fprintf(c.Stdout, "  kept %s that a kept retry names (its signed retry_of): %s\n",
			plural(len(p.KeptForRetries), "attempt"), strings.Join(p.KeptForRetries, ", "))
	}
	for _, k := range p.Kept {
		fmt.Fprintf(c.Stdout, "  work directory kept: %s\n", k)
	}
	return exitOK
}

// pruneRequest checks prune's flags and makes its request.
func pruneRequest(before string, purposes []string, dryRun bool, now time.Time) (apitype.PruneRequest, error) {
	if before == "" {
		return apitype.PruneRequest{}, fmt.Errorf("missing --before WHEN (%s)", whenHelp)
	}
	t, err := parseWhen("--before", before, now)
	if err != nil {
		return apitype.PruneRequest{}, err
	}
	for _, p := range purposes {
		if !apitype.ValidPurpose(p) {
			return apitype.PruneRequest{}, fmt.Errorf("--purpose %q: want one of %s", p, strings.Join(apitype.Purposes, ", "))
		}
	}
	return apitype.PruneRequest{Before: t, Purposes: purposes, DryRun: dryRun}, nil
}
