package main

import (
	"context"
	"errors"
	"fmt"

	"benchd.dev/client"
)

// cmdRetry retries what is left of a run: each attempt that ended in an
// infra error and is not retried yet. Nothing to retry exits 1.
func (c *CLI) cmdRetry(ctx context.Context, args []string) int {
	f := c.newFlags("retry")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 1, 1, "RUN"); !ok {
		return code
	}
	r, err := c.api().Retry(ctx, pos[0])
	if errors.Is(err, client.ErrConflict) {
		return c.fail("retry", exitNo, err)
	}
	if err != nil {
		return c.fail("retry", exitError, err)
	}
	if f.json {
		c.printJSON(r)
		return exitOK
	}
	for _, p := range r.Retried {
		fmt.Fprintf(c.Stdout, "%s: retried by %s (queued)\n", p.Of, p.Attempt)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(c.Stdout, "%s: not retried: %s\n", s.Attempt, oneLine(s.Why, 200))
	}
	return exitOK
}
