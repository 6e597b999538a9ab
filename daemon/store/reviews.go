package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"benchd.dev/client/apitype"
)

// ReviewAttempt decides attempt id, whose verdict the grader left to
// review, as rv says (rv.Outcome pass or fail; rv.Why, rv.UID and
// rv.Time are recorded as given, rv.Graded is set from the stored
// verdict). In one transaction it stores the review (the reviews table)
// and replaces the attempt's verdict with the decided one: a pass has
// reward 1 and no reasons, a fail one reason, ReasonFailedOnReview,
// giving the reviewer's why. It returns the attempt as stored after.
//
// An attempt that is not in review (not done, or its outcome is not
// review), or that was reviewed already, is an error matching
// ErrConflict; an outcome other than pass or fail, an empty or
// overlong why, or a zero time one matching ErrInvalid; an attempt that
// does not exist one matching ErrNotFound.
func (s *Store) ReviewAttempt(ctx context.Context, id string, rv apitype.Review) (apitype.Attempt, error) {
	if err := validReview(rv); err != nil {
		return apitype.Attempt{}, fmt.Errorf("unable to review attempt %s: %w", id, err)
	}
	err := s.writeTx(ctx, func(tx *tx) error {
		a, err := scanAttempt(tx.QueryRowContext(ctx, attemptSelect+` WHERE a.id = ?`, id))
		if err != nil {
			return err
		}
		if a.Review != nil {
			return fmt.Errorf("%w: it was reviewed already (%s by uid %d at %s): a review is final",
				ErrConflict, a.Review.Outcome, a.Review.UID, a.Review.Time.Format(time.RFC3339))
		}
		if !a.Unresolved() {
			what := a.State
			if a.State == apitype.StateDone {
				what = "graded " + outcomeOf(a)
			}
			return fmt.Errorf("%w: it is not in review (it is %s): only a verdict the grader left to review can be reviewed",
				ErrConflict, what)
		}
		graded := apitype.Verdict{Pass: a.Pass, Reward: a.Reward, Outcome: a.Outcome, Reasons: a.Reasons, Seed: a.GradeSeed}
		if graded.Reasons == nil {
			graded.Reasons = []apitype.Reason{}
		}
		gb, err := json.Marshal(graded)
		if err != nil {
			return err
		}
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT n FROM attempts WHERE id = ?`, id).Scan(&n); err != nil {
			return translate(err)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO reviews (attempt, outcome, why, uid, reviewed, graded) VALUES (?, ?, ?, ?, ?, ?)`,
			n, rv.Outcome, rv.Why, rv.UID, nanos(rv.Time), gb); err != nil {
			return translate(err)
		}
		decide(&a, rv)
		row, err := toRow(a)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE attempts SET data = ? WHERE n = ?`, row.data, n)
		return err
	})
	if err != nil {
		return apitype.Attempt{}, fmt.Errorf("unable to review attempt %s: %w", id, err)
	}
	return s.GetAttempt(ctx, id)
}

// decide makes a's verdict the one rv decides.
func decide(a *apitype.Attempt, rv apitype.Review) {
	a.Outcome = rv.Outcome
	if rv.Outcome == apitype.OutcomePass {
		a.Pass, a.Reward, a.Reasons = true, 1, []apitype.Reason{}
		return
	}
	a.Pass, a.Reward = false, 0
	a.Reasons = []apitype.Reason{{
		Code:    apitype.ReasonFailedOnReview,
		Message: fmt.Sprintf("the grader left the verdict to review; uid %d failed it: %s", rv.UID, rv.Why),
	}}
}

// outcomeOf names the outcome of a graded attempt, also one recorded
// before outcomes existed.
func outcomeOf(a apitype.Attempt) string {
	switch {
	case a.Outcome != "":
		return a.Outcome
	case a.Pass:
		return apitype.OutcomePass
	}
	return apitype.OutcomeFail
}

func validReview(rv apitype.Review) error {
	switch {
	case rv.Outcome != apitype.OutcomePass && rv.Outcome != apitype.OutcomeFail:
		return fmt.Errorf("%w: review outcome %q, want %q or %q", ErrInvalid, rv.Outcome, apitype.OutcomePass, apitype.OutcomeFail)
	case strings.TrimSpace(rv.Why) == "":
		return fmt.Errorf("%w: a review needs a reason (why)", ErrInvalid)
	case len(rv.Why) > apitype.MaxReviewWhy:
		return fmt.Errorf("%w: the review's reason is %d bytes, at most %d", ErrInvalid, len(rv.Why), apitype.MaxReviewWhy)
	case rv.Time.IsZero():
		return fmt.Errorf("%w: a review needs its time", ErrInvalid)
	}
	return nil
}
