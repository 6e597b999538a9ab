package daemon

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"benchd.dev/client/apitype"
)

// handleReview decides an attempt whose verdict the grader left to
// review: the store records the decision with the caller's uid (from
// the connection's peer credentials, never from the request) and the
// time, and the attempt is signed again, its statement now of type
// apitype.StatementTypeReviewed with the review in it. The response is
// the attempt as signed.
func (s *server) handleReview(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var req apitype.ReviewRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.Outcome != apitype.OutcomePass && req.Outcome != apitype.OutcomeFail:
		return fmt.Errorf("review outcome %q: want %q or %q: %w", req.Outcome, apitype.OutcomePass, apitype.OutcomeFail, errInvalid)
	case strings.TrimSpace(req.Why) == "":
		return fmt.Errorf("a review needs a reason (why): %w", errInvalid)
	case len(req.Why) > apitype.MaxReviewWhy:
		return fmt.Errorf("the review's reason is %d bytes, at most %d: %w", len(req.Why), apitype.MaxReviewWhy, errInvalid)
	}
	p := peerFrom(r.Context())
	if p.Err != nil {
		return fmt.Errorf("the reviewer is unknown: %v: %w", p.Err, errForbidden)
	}
	ctx := r.Context()
	// The policy signed at the attempt's end is the one that graded it,
	// even when the task store has another bundle by now.
	pol := s.signedPolicy(ctx, id)
	rv := apitype.Review{Outcome: req.Outcome, Why: req.Why, UID: p.UID, Time: time.Now().UTC()}
	if _, err := s.store.ReviewAttempt(ctx, id, rv); err != nil {
		return err // it names the attempt
	}
	a, err := s.signAttempt(ctx, id, pol)
	if err != nil {
		return fmt.Errorf("attempt %s was reviewed, but its statement could not be signed again: %w", id, err)
	}
	s.log.Info("attempt reviewed", "attempt", id, "outcome", rv.Outcome, "uid", rv.UID)
	writeJSON(w, http.StatusOK, a)
	return nil
}
