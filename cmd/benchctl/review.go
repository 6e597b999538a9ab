package main

import (
	"context"
	"fmt"
	"strings"

	"benchd.dev/client/apitype"
)

// cmdReview decides an attempt whose verdict the grader left to review.
// benchd records the caller's uid, the time and the reason, and signs
// the attempt again with the review in its statement.
func (c *CLI) cmdReview(ctx context.Context, args []string) int {
	f := c.newFlags("review")
	pass := f.Bool("pass", false, "decide that the attempt passed")
	fail := f.Bool("fail", false, "decide that the attempt failed")
	why := f.String("why", "", "why, in a sentence: kept with the attempt, exported and signed (required)")
	id, code, ok := c.attemptArg(f, args)
	if !ok {
		return code
	}
	switch {
	case *pass == *fail:
		return c.usageError("review", "give exactly one of --pass and --fail")
	case strings.TrimSpace(*why) == "":
		return c.usageError("review", "missing --why: a review says why")
	case len(*why) > apitype.MaxReviewWhy:
		return c.usageError("review", "--why is %d bytes, at most %d", len(*why), apitype.MaxReviewWhy)
	}
	req := apitype.ReviewRequest{Outcome: apitype.OutcomeFail, Why: *why}
	if *pass {
		req.Outcome = apitype.OutcomePass
	}
	a, err := c.api().Review(ctx, id, req)
	if err != nil {
		return c.fail("review", exitError, err)
	}
	if f.json {
		c.printJSON(normalize(a))
		return exitOK
	}
	rv := a.Review
	if rv == nil {
		return c.fail("review", exitError, fmt.Errorf("%s: benchd answered without the review", id))
	}
	fmt.Fprintf(c.Stdout, "%s: %s by review (uid %d at %s; the grader left it to review); signed again\n",
		a.ID, verdict(a), rv.UID, formatTime(&rv.Time))
	fmt.Fprintf(c.Stdout, "  why: %s\n", oneLine(rv.Why, 200))
	return exitOK
}
