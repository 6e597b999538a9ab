package apitype

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestVerdictJSON: a verdict left to review says "pass": null; a decided
// one says true or false, and reads back the same.
func TestVerdictJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    Verdict
		want string
	}{
		{"pass", Verdict{Pass: true, Reward: 1, Outcome: OutcomePass, Reasons: []Reason{}}, `{"reward":1,"outcome":"pass","reasons":[],"pass":true}`},
		{"fail", Verdict{Outcome: OutcomeFail, Reasons: []Reason{{"tests_failed", "x"}}}, `{"reward":0,"outcome":"fail","reasons":[{"code":"tests_failed","message":"x"}],"pass":false}`},
		{"review", Verdict{Outcome: OutcomeReview, Reasons: []Reason{{"needs_review", "x"}}}, `{"reward":0,"outcome":"review","reasons":[{"code":"needs_review","message":"x"}],"pass":null}`},
		{"no outcome", Verdict{Pass: true, Reward: 1, Reasons: []Reason{}}, `{"reward":1,"reasons":[],"pass":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got %s, want %s", b, tc.want)
			}
			var back Verdict
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Pass != tc.v.Pass || back.Outcome != tc.v.Outcome || back.Reward != tc.v.Reward {
				t.Errorf("read back %+v, want %+v", back, tc.v)
			}
		})
	}
}

// TestAttemptOutcomeJSON: an unresolved attempt says "pass": null and
// its outcome; a reviewed one its decided pass and the review.
func TestAttemptOutcomeJSON(t *testing.T) {
	review := Attempt{ID: "a", State: StateDone, Outcome: OutcomeReview, Reasons: []Reason{{"needs_review", "x"}}}
	reviewed := review
	reviewed.Pass, reviewed.Reward, reviewed.Outcome, reviewed.Reasons = true, 1, OutcomePass, []Reason{}
	reviewed.Review = &Review{Outcome: OutcomePass, Why: "fine", UID: 1000,
		Graded: Verdict{Outcome: OutcomeReview, Reasons: review.Reasons}}
	failed := Attempt{ID: "a", State: StateDone, Outcome: OutcomeFail}
	for _, tc := range []struct {
		name       string
		a          Attempt
		unresolved bool
		want       []string
	}{
		{"review", review, true, []string{`"pass":null`, `"outcome":"review"`}},
		{"reviewed", reviewed, false, []string{`"pass":true`, `"outcome":"pass"`, `"review":{"outcome":"pass","why":"fine","uid":1000`, `"graded":{"reward":0,"outcome":"review"`}},
		{"fail", failed, false, []string{`"pass":false`, `"outcome":"fail"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Unresolved(); got != tc.unresolved {
				t.Errorf("Unresolved: got %v, want %v", got, tc.unresolved)
			}
			b, err := json.Marshal(tc.a)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("got %s, want it to contain %s", b, w)
				}
			}
			var back Attempt
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Unresolved() != tc.unresolved || back.Outcome != tc.a.Outcome || (back.Review == nil) != (tc.a.Review == nil) {
				t.Errorf("read back %+v, want %+v", back, tc.a)
			}
		})
	}
}

// TestStatementOfReview: the statement of a reviewed attempt is of the
// reviewed type and carries the review; without one it is of the first
// type and its JSON has no review field, as statements signed before
// reviews existed.
func TestStatementOfReview(t *testing.T) {
	a := Attempt{ID: "a", State: StateDone, Outcome: OutcomeFail}
	st := StatementOf(a)
	b, _ := json.Marshal(st)
	if st.Type != StatementType || strings.Contains(string(b), `"review"`) {
		t.Errorf("unreviewed: got type %s, JSON %s; want %s without a review", st.Type, b, StatementType)
	}
	if st.Verdict == nil || st.Verdict.Outcome != OutcomeFail {
		t.Errorf("unreviewed: got verdict %+v, want outcome fail", st.Verdict)
	}
	a.Review = &Review{Outcome: OutcomeFail, Why: "no case", UID: 7}
	st = StatementOf(a)
	if st.Type != StatementTypeReviewed || st.Review == nil || st.Review.UID != 7 {
		t.Errorf("reviewed: got type %s, review %+v; want %s with the review", st.Type, st.Review, StatementTypeReviewed)
	}
}

// A change's paths that are not UTF-8 go through JSON as their bytes
// (path_b64, from_b64); UTF-8 ones as they always did.
func TestChangeNames(t *testing.T) {
	for _, c := range []Change{
		{Kind: "renamed", Path: "new\xff\n", From: "old\xfe", Type: "file", SHA256: "ab"},
		{Kind: "added", Path: "src/a.py", Type: "file"},
		{Kind: "added", Path: "\x1b[2K\r", Type: "dir"},
	} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(b) {
			t.Errorf("%q: JSON %q is not UTF-8", c.Path, b)
		}
		var got Change
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if got != c {
			t.Errorf("through JSON: got %+v, want %+v", got, c)
		}
	}
	b, _ := json.Marshal(Change{Kind: "added", Path: "src/a.py", Type: "file"})
	if want := `{"kind":"added","path":"src/a.py","type":"file"}`; string(b) != want {
		t.Errorf("UTF-8 change: got %s, want %s", b, want)
	}
	var c Change
	if err := json.Unmarshal([]byte(`{"kind":"added","path_b64":"YQ==","type":"file"}`), &c); err == nil {
		t.Errorf("path_b64 of UTF-8: got %+v, want an error", c)
	}
}
