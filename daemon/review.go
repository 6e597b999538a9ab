package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"benchd.dev/client/apitype"
)

// handleReview: POST /v1/attempts/{id}/review (review).
func (s *server) handleReview(w http.ResponseWriter, r *http.Request) error {
	var req apitype.ReviewRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	a, err := s.review(r.Context(), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// review decides an attempt whose verdict the grader left to
// review: the store records the decision with the caller's uid (from
// the connection's peer credentials, never from the request) and the
// time, and the attempt is signed again, its statement now of type
// apitype.StatementTypeReviewed with the review in it. It returns the
// attempt as signed.
func (s *server) review(ctx context.Context, id string, req apitype.ReviewRequest) (apitype.Attempt, error) {
	if err := checkReview(req); err != nil {
		return apitype.Attempt{}, err
	}
	p := peerFrom(ctx)
	if p.Err != nil {
		return apitype.Attempt{}, fmt.Errorf("the reviewer is unknown: %v: %w", p.Err, errForbidden)
	}
	// The policy signed at the attempt's end is the one that graded it,
	// even when the task store has another bundle by now.
	pol := s.signedPolicy(ctx, id)
	rv := apitype.Review{Outcome: req.Outcome, Why: req.Why, UID: p.UID, Time: time.Now().UTC()}
	if _, err := s.store.ReviewAttempt(ctx, id, rv); err != nil {
		return apitype.Attempt{}, err // it names the attempt
	}
	a, err := s.signAttempt(ctx, id, pol)
	if err != nil {
		return apitype.Attempt{}, fmt.Errorf("attempt %s was reviewed, but its statement could not be signed again: %w", id, err)
	}
	s.log.Info("attempt reviewed", "attempt", id, "outcome", rv.Outcome, "uid", rv.UID)
	return a, nil
}

// checkReview refuses a review without a decision or a reason.
func checkReview(req apitype.ReviewRequest) error {
	switch {
	case req.Outcome != apitype.OutcomePass && req.Outcome != apitype.OutcomeFail:
		return fmt.Errorf("review outcome %q: want %q or %q: %w", req.Outcome, apitype.OutcomePass, apitype.OutcomeFail, errInvalid)
	case strings.TrimSpace(req.Why) == "":
		return fmt.Errorf("a review needs a reason (why): %w", errInvalid)
	case len(req.Why) > apitype.MaxReviewWhy:
		return fmt.Errorf("the review's reason is %d bytes, at most %d: %w", len(req.Why), apitype.MaxReviewWhy, errInvalid)
	}
	return nil
}
