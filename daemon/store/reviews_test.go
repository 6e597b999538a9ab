package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// inReview stores attempt id as done with a verdict left to review.
func inReview(t *testing.T, s *Store, id string) apitype.Attempt {
	t.Helper()
	ctx := context.Background()
	a := fullAttempt(id)
	a.Run = ""
	a.State = apitype.StateQueued
	mustCreate(t, s, a)
	a, err := s.GetAttempt(ctx, id)
	must(t, err)
	a.State, a.Outcome, a.Pass, a.Reward = apitype.StateDone, apitype.OutcomeReview, false, 0
	a.Reasons = []apitype.Reason{{Code: "needs_review", Message: "hedged claim"}}
	a.GradeSeed = 7
	must(t, s.UpdateAttempt(ctx, a))
	return a
}

var reviewTime = time.Date(2026, 12, 1, 20, 0, 0, 987654321, time.UTC)

func TestReviewAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		for _, tc := range []struct {
			outcome    string
			wantPass   bool
			wantReward int
			wantCodes  string
		}{
			{apitype.OutcomePass, true, 1, ""},
			{apitype.OutcomeFail, false, 0, apitype.ReasonFailedOnReview},
		} {
			t.Run(tc.outcome, func(t *testing.T) {
				s := be.open(t)
				inReview(t, s, "a1")
				before, err := s.GetAttempt(ctx, "a1")
				must(t, err)
				if !before.Unresolved() || before.Review != nil {
					t.Fatalf("before review: got unresolved %v, review %+v; want unresolved, no review", before.Unresolved(), before.Review)
				}
				rv := apitype.Review{Outcome: tc.outcome, Why: "both readings are stated", UID: 1000, Time: reviewTime}
				got, err := s.ReviewAttempt(ctx, "a1", rv)
				must(t, err)
				if got.Pass != tc.wantPass || got.Reward != tc.wantReward || got.Outcome != tc.outcome || got.Unresolved() {
					t.Errorf("got pass %v reward %d outcome %q unresolved %v, want %v %d %q false",
						got.Pass, got.Reward, got.Outcome, got.Unresolved(), tc.wantPass, tc.wantReward, tc.outcome)
				}
				var codes []string
				for _, r := range got.Reasons {
					codes = append(codes, r.Code)
				}
				if strings.Join(codes, ",") != tc.wantCodes {
					t.Errorf("got reasons %v, want %q", codes, tc.wantCodes)
				}
				if got.Review == nil {
					t.Fatal("got no review on the attempt")
				}
				r := got.Review
				if r.Outcome != tc.outcome || r.Why != rv.Why || r.UID != 1000 || !r.Time.Equal(reviewTime) {
					t.Errorf("got review %+v, want %+v", r, rv)
				}
				if r.Graded.Outcome != apitype.OutcomeReview || len(r.Graded.Reasons) != 1 || r.Graded.Reasons[0].Code != "needs_review" || r.Graded.Seed != 7 {
					t.Errorf("got graded verdict %+v, want the review verdict with its needs_review reason and seed", r.Graded)
				}
				// The list reads the review too, and the rest of the record
				// is untouched.
				list, err := s.ListAttempts(ctx, Filter{Task: "rt-01"})
				must(t, err)
				if len(list) != 1 || list[0].Review == nil || list[0].Review.Why != rv.Why {
					t.Errorf("list: got %+v, want the reviewed attempt", list)
				}
				if got.JournalHead != before.JournalHead || got.WallMS != before.WallMS || got.GradeSeed != 7 {
					t.Errorf("review changed other fields: got %+v", got)
				}
				// The review is the reviews table's: the data column holds
				// none, so the two cannot disagree.
				var data string
				must(t, s.r.QueryRowContext(ctx, `SELECT data FROM attempts WHERE id = 'a1'`).Scan(&data))
				var m map[string]json.RawMessage
				must(t, json.Unmarshal([]byte(data), &m))
				if _, ok := m["review"]; ok {
					t.Errorf("the data column holds a review: %s", data)
				}

				// A second review is refused, whatever it decides.
				for _, again := range []string{apitype.OutcomePass, apitype.OutcomeFail} {
					_, err := s.ReviewAttempt(ctx, "a1", apitype.Review{Outcome: again, Why: "again", UID: 0, Time: reviewTime})
					if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "reviewed already") {
						t.Errorf("second review (%s): got %v, want a conflict saying it was reviewed already", again, err)
					}
				}
				if a, err := s.GetAttempt(ctx, "a1"); err != nil || a.Review.Why != rv.Why || a.Outcome != tc.outcome {
					t.Errorf("after the refused review: got %+v, %v; want the first review kept", a.Review, err)
				}
			})
		}
	})
}

func TestReviewAttemptRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s := be.open(t)
		inReview(t, s, "review")
		failed := fullAttempt("failed")
		failed.Run, failed.State = "", apitype.StateQueued
		mustCreate(t, s, failed)
		f, err := s.GetAttempt(ctx, "failed")
		must(t, err)
		f.State, f.Outcome = apitype.StateDone, apitype.OutcomeFail
		must(t, s.UpdateAttempt(ctx, f))
		old := fullAttempt("old") // done and failed, stored before outcomes existed
		old.Run, old.State = "", apitype.StateQueued
		mustCreate(t, s, old)
		o, err := s.GetAttempt(ctx, "old")
		must(t, err)
		o.State = apitype.StateDone
		must(t, s.UpdateAttempt(ctx, o))
		mustCreate(t, s, apitype.Attempt{ID: "queued", Task: "rt-06", Created: base})

		ok := apitype.Review{Outcome: apitype.OutcomePass, Why: "fine", UID: 0, Time: reviewTime}
		for _, tc := range []struct {
			name, id string
			rv       apitype.Review
			want     error
			msg      string
		}{
			{"a failed attempt", "failed", ok, ErrConflict, "not in review (it is graded fail)"},
			{"a fail before outcomes", "old", ok, ErrConflict, "not in review (it is graded fail)"},
			{"a queued attempt", "queued", ok, ErrConflict, "not in review (it is queued)"},
			{"no such attempt", "nope", ok, ErrNotFound, "nope"},
			{"outcome review", "review", apitype.Review{Outcome: apitype.OutcomeReview, Why: "x", Time: reviewTime}, ErrInvalid, `outcome "review"`},
			{"no why", "review", apitype.Review{Outcome: apitype.OutcomePass, Why: " \n", Time: reviewTime}, ErrInvalid, "needs a reason"},
			{"long why", "review", apitype.Review{Outcome: apitype.OutcomePass, Why: strings.Repeat("x", apitype.MaxReviewWhy+1), Time: reviewTime}, ErrInvalid, "at most"},
			{"no time", "review", apitype.Review{Outcome: apitype.OutcomePass, Why: "x"}, ErrInvalid, "time"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.ReviewAttempt(ctx, tc.id, tc.rv)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("got %v, want an error matching %v that says %q", err, tc.want, tc.msg)
				}
			})
		}
		// Nothing refused changed anything.
		var n int
		must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM reviews`).Scan(&n))
		if n != 0 {
			t.Errorf("got %d reviews stored, want none", n)
		}
		if a, err := s.GetAttempt(ctx, "review"); err != nil || !a.Unresolved() {
			t.Errorf("the attempt in review after refused reviews: got %+v, %v; want it unresolved", a, err)
		}
	})
}

// TestMigrateReviews: a database of the version before reviews, with an
// attempt in review in it, gains the reviews table; the attempt reads
// back unresolved and can be reviewed.
func TestMigrateReviews(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	step := -1
	for i, m := range migrations {
		if m.name == "reviews" {
			step = i
		}
	}
	if step < 0 {
		t.Fatal("no migration named reviews")
	}
	db := openAtVersion(t, dir, step)
	var n int
	must(t, db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'reviews'`).Scan(&n))
	if n != 0 {
		t.Fatalf("version %d has reviews, want it added by version %d", step, step+1)
	}
	a := fullAttempt("a1")
	a.Run, a.Outcome = "", apitype.OutcomeReview
	a.Reasons = []apitype.Reason{{Code: "needs_review", Message: "x"}}
	insertOld(t, db, a)
	must(t, db.Close())

	s, err := Open(ctx, Config{Dir: dir})
	must(t, err)
	defer s.Close()
	if got := version(t, s.w.DB); got < step+1 {
		t.Fatalf("got version %d after Open, want at least %d", got, step+1)
	}
	got, err := s.GetAttempt(ctx, "a1")
	must(t, err)
	if !got.Unresolved() || got.Review != nil {
		t.Fatalf("after migration: got unresolved %v review %+v, want unresolved and no review", got.Unresolved(), got.Review)
	}
	r, err := s.ReviewAttempt(ctx, "a1", apitype.Review{Outcome: apitype.OutcomeFail, Why: "no case named", UID: 5, Time: reviewTime})
	must(t, err)
	if r.Review == nil || r.Outcome != apitype.OutcomeFail {
		t.Errorf("review after migration: got %+v", r)
	}
}
