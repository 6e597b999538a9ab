package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/forensics"
	"benchd.dev/internal/dsse"
)

// unresolved is the fixture's attempt with a verdict left to review.
func unresolved(fx *fixture, id string) apitype.Attempt {
	a := fx.attempt
	a.ID, a.Task = id, "rt-06"
	a.Pass, a.Reward, a.Outcome = false, 0, apitype.OutcomeReview
	a.Reasons = []apitype.Reason{{Code: "needs_review", Message: "the claim is hedged"}}
	return a
}

// TestShowListReview: an attempt left to review is REVIEW in show and
// list, and "pass": null with its outcome in JSON; show exits 1 for it
// (not a pass until someone decides it).
func TestShowListReview(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	d.attempts["a-9"] = unresolved(fx, "a-9")
	code, stdout, _ := runCLI(t, d.Socket, nil, false, "show", "a-9")
	if code != exitNo || !strings.Contains(stdout, "verdict       REVIEW (left to review: neither passed nor failed; benchctl review a-9") ||
		!strings.Contains(stdout, "needs_review: the claim is hedged") {
		t.Errorf("show: got exit %d\n%s\nwant REVIEW and its reason", code, stdout)
	}
	code, stdout, _ = runCLI(t, d.Socket, nil, false, "show", "--json", "a-9")
	if code != exitNo || !strings.Contains(stdout, `"pass": null`) || !strings.Contains(stdout, `"outcome": "review"`) {
		t.Errorf("show --json: got exit %d\n%s\nwant pass null and outcome review", code, stdout)
	}
	code, stdout, _ = runCLI(t, d.Socket, nil, false, "list", "--task", "rt-06")
	if code != exitOK || !strings.Contains(stdout, "a-9") || !strings.Contains(stdout, "REVIEW") || strings.Contains(stdout, "FAIL") {
		t.Errorf("list: got exit %d\n%s\nwant a-9 as REVIEW, no FAIL", code, stdout)
	}
	code, stdout, _ = runCLI(t, d.Socket, nil, false, "list", "--json", "--task", "rt-06")
	var list struct {
		Attempts []map[string]json.RawMessage `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || code != exitOK || len(list.Attempts) != 1 {
		t.Fatalf("list --json: got exit %d, %v\n%s", code, err, stdout)
	}
	if got := string(list.Attempts[0]["pass"]); got != "null" {
		t.Errorf("list --json: got pass %s, want null", got)
	}
	if got := string(list.Attempts[0]["outcome"]); got != `"review"` {
		t.Errorf("list --json: got outcome %s, want \"review\"", got)
	}
}

func TestReview(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	d.attempts["a-9"] = unresolved(fx, "a-9")
	d.attempts["a-8"] = unresolved(fx, "a-8")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no decision", []string{"review", "a-9", "--why", "x"}, "give exactly one of --pass and --fail"},
		{"both", []string{"review", "a-9", "--pass", "--fail", "--why", "x"}, "give exactly one of --pass and --fail"},
		{"no why", []string{"review", "a-9", "--pass"}, "missing --why"},
		{"blank why", []string{"review", "a-9", "--pass", "--why", "  "}, "missing --why"},
		{"no attempt", []string{"review", "--pass", "--why", "x"}, "missing ATTEMPT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := d.requestCount()
			code, _, stderr := runCLI(t, d.Socket, nil, false, tc.args...)
			if code != exitError || !strings.Contains(stderr, tc.want) {
				t.Errorf("got exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
			if d.requestCount() != n {
				t.Error("a bad usage reached benchd")
			}
		})
	}

	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "review", "a-9", "--pass", "--why", "both readings and the case are named")
	if code != exitOK {
		t.Fatalf("review: got exit %d: %s", code, stderr)
	}
	for _, w := range []string{"a-9: pass by review (uid 1000", "why: both readings and the case are named"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("review: got\n%s\nwant %q", stdout, w)
		}
	}
	// Reviewed, show gives the decision and the grader's verdict.
	_, stdout, _ = runCLI(t, d.Socket, nil, false, "show", "a-9")
	for _, w := range []string{"verdict       pass (reward", "review        pass by uid 1000", "graded      REVIEW (reward 0; needs_review)"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("show after review: got\n%s\nwant %q", stdout, w)
		}
	}
	// A second review is benchd's conflict, one line, exit 2.
	code, _, stderr = runCLI(t, d.Socket, nil, false, "review", "a-9", "--fail", "--why", "again")
	if code != exitError || !strings.Contains(stderr, "reviewed already") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("second review: got exit %d, stderr %q; want 2 and benchd's conflict", code, stderr)
	}
	// Not in review.
	code, _, stderr = runCLI(t, d.Socket, nil, false, "review", fx.attempt.ID, "--fail", "--why", "x")
	if code != exitError || !strings.Contains(stderr, "not in review") {
		t.Errorf("review of a graded attempt: got exit %d, stderr %q; want 2, not in review", code, stderr)
	}
	// --json gives the attempt as reviewed.
	code, stdout, _ = runCLI(t, d.Socket, nil, false, "review", "--json", "a-8", "--fail", "--why", "no case named")
	var a apitype.Attempt
	if err := json.Unmarshal([]byte(stdout), &a); err != nil || code != exitOK {
		t.Fatalf("review --json: got exit %d, %v\n%s", code, err, stdout)
	}
	if a.Outcome != apitype.OutcomeFail || a.Review == nil || a.Review.Why != "no case named" || a.Review.Outcome != apitype.OutcomeFail {
		t.Errorf("review --json: got %+v, want the attempt failed by its review", a)
	}
}

// reviewedFiles is the archive of the fixture's attempt as benchd
// exports it once a review decided it (outcome): attempt.json and the
// signed statement carry the review, review.json holds it. task.json
// carries no policy, so the denied unlink needs no wrong_files in the
// grader's verdict.
func reviewedFiles(t *testing.T, fx *fixture, outcome string) map[string][]byte {
	t.Helper()
	files := fx.archiveFiles(t)
	a := fx.exported()
	a.Review = &apitype.Review{Outcome: outcome, Why: "both readings are stated", UID: 1000,
		Time:   time.Date(2026, 12, 1, 20, 1, 2, 345, time.UTC),
		Graded: apitype.Verdict{Outcome: apitype.OutcomeReview, Reasons: []apitype.Reason{{Code: "needs_review", Message: "hedged"}}}}
	a.Outcome, a.Pass, a.Reward, a.Reasons = outcome, outcome == apitype.OutcomePass, 0, []apitype.Reason{}
	if a.Pass {
		a.Reward = 1
	}
	files["attempt.json"], _ = json.Marshal(a)
	files["review.json"], _ = json.Marshal(a.Review)
	task := fx.task
	task.Allow, task.Ignore = nil, nil
	files["task.json"], _ = json.Marshal(task)
	resign(t, fx, files)
	return files
}

func TestVerifyReview(t *testing.T) {
	fx := newFixture(t)
	editReview := func(f map[string][]byte, name string, edit func(rv *apitype.Review)) {
		if name == "attempt.json" {
			var a apitype.Attempt
			json.Unmarshal(f[name], &a)
			edit(a.Review)
			f[name], _ = json.Marshal(a)
			return
		}
		var rv apitype.Review
		json.Unmarshal(f[name], &rv)
		edit(&rv)
		f[name], _ = json.Marshal(rv)
	}
	tests := []struct {
		name      string
		files     func(t *testing.T) map[string][]byte
		wantCode  int
		wantError string
		wantCheck string
	}{
		{"reviewed pass", func(t *testing.T) map[string][]byte { return reviewedFiles(t, fx, apitype.OutcomePass) }, exitOK, "", ""},
		{"reviewed fail", func(t *testing.T) map[string][]byte { return reviewedFiles(t, fx, apitype.OutcomeFail) }, exitOK, "", ""},
		{"why edited in review.json", func(t *testing.T) map[string][]byte {
			f := reviewedFiles(t, fx, apitype.OutcomePass)
			editReview(f, "review.json", func(rv *apitype.Review) { rv.Why = "edited" })
			return f
		}, exitNo, "review: the review's why differs: review.json gives \"edited\"", "review"},
		{"decision edited in review.json", func(t *testing.T) map[string][]byte {
			f := reviewedFiles(t, fx, apitype.OutcomeFail)
			editReview(f, "review.json", func(rv *apitype.Review) { rv.Outcome = apitype.OutcomePass })
			return f
		}, exitNo, "review: the review's outcome differs", "review"},
		{"reviewer edited in attempt.json", func(t *testing.T) map[string][]byte {
			f := reviewedFiles(t, fx, apitype.OutcomePass)
			editReview(f, "attempt.json", func(rv *apitype.Review) { rv.UID = 0 })
			return f
		}, exitNo, "statement: signed field review differs", "statement"},
		{"review.json missing", func(t *testing.T) map[string][]byte {
			f := reviewedFiles(t, fx, apitype.OutcomePass)
			delete(f, "review.json")
			return f
		}, exitNo, "review: missing review.json", "review"},
		{"review added to an unreviewed archive", func(t *testing.T) map[string][]byte {
			f := fx.archiveFiles(t)
			rv := reviewedFiles(t, fx, apitype.OutcomePass)
			f["review.json"] = rv["review.json"]
			return f
		}, exitNo, "review: the archive has review.json, but the signed statement has no review", "review"},
		{"review added to attempt.json under the first signature", func(t *testing.T) map[string][]byte {
			f := reviewedFiles(t, fx, apitype.OutcomePass)
			f["attempt.dsse.json"] = fx.archiveFiles(t)["attempt.dsse.json"]
			return f
		}, exitNo, "review", "statement"},
		{"a first-form statement carrying a review", func(t *testing.T) map[string][]byte {
			f := reviewedFiles(t, fx, apitype.OutcomePass)
			var a apitype.Attempt
			json.Unmarshal(f["attempt.json"], &a)
			st := apitype.StatementOf(a)
			st.Type = apitype.StatementType
			payload, _ := json.Marshal(st)
			f["attempt.dsse.json"], _ = json.Marshal(dsse.Sign(fx.key, apitype.StatementPayloadType, payload))
			return f
		}, exitNo, "signature: the signed statement is of type \"" + apitype.StatementType + "\", which has no review, but carries one", "signature"},
		{"a signed verdict the review did not decide", func(t *testing.T) map[string][]byte {
			f := reviewedFiles(t, fx, apitype.OutcomePass)
			var a apitype.Attempt
			json.Unmarshal(f["attempt.json"], &a)
			a.Outcome, a.Pass, a.Reward = apitype.OutcomeFail, false, 0
			f["attempt.json"], _ = json.Marshal(a)
			resign(t, fx, f)
			return f
		}, exitNo, "review: the signed verdict is not the one the signed review decided (pass)", "review"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "a-1.tar")
			if err := os.WriteFile(file, tarFiles(t, tt.files(t)), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, "", nil, false, "verify", "--key", fx.keyHex(), file)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d\nstdout:\n%s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			if tt.wantError == "" {
				for _, w := range []string{"verified: " + file, "reviewed: ", "by uid 1000 at 2026-12-01T20:01:02Z (the grader had left it to review): both readings are stated"} {
					if !strings.Contains(stdout, w) {
						t.Errorf("got stdout\n%s\nwant %q", stdout, w)
					}
				}
			} else if !strings.Contains(stderr, tt.wantError) {
				t.Errorf("got stderr %q, want it to contain %q", stderr, tt.wantError)
			}
			_, stdout, _ = runCLI(t, "", nil, false, "verify", "--json", "--key", fx.keyHex(), file)
			var res forensics.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("--json: %v\n%s", err, stdout)
			}
			var failed []string
			for _, c := range res.Checks {
				if !c.OK {
					failed = append(failed, c.Name)
				}
			}
			if tt.wantCheck == "" && (len(failed) > 0 || res.Review == nil) || tt.wantCheck != "" && (len(failed) == 0 || failed[0] != tt.wantCheck) {
				t.Errorf("got failed checks %q (review %+v), want the first to be %q", failed, res.Review, tt.wantCheck)
			}
		})
	}
}
