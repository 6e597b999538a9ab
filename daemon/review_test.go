package daemon

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
	"benchd.dev/internal/dsse"
)

// TestReviewHandler: POST /v1/attempts/{id}/review decides an attempt
// left to review as the caller (the peer's uid, not the request's),
// signs it again with the review in a statement of the reviewed type
// (the policy signed at the end kept), and refuses a second review, an
// attempt not in review and bad requests with their classes.
func TestReviewHandler(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	st, err := store.Open(ctx, store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key, err := HostKey(state)
	if err != nil {
		t.Fatal(err)
	}
	// The task store has no rt-06 bundle of this hash: the policy can
	// only come from the first signature.
	s := &server{cfg: Config{TasksDir: t.TempDir()}, log: slog.New(slog.DiscardHandler), store: st, key: key}
	now := time.Now().UTC()
	pol := &apitype.TaskPolicy{Allow: []string{"BLOCKED.md"}, Ignore: []string{"__pycache__/"}}
	for id, outcome := range map[string]string{"a-review": apitype.OutcomeReview, "a-fail": apitype.OutcomeFail} {
		a := apitype.Attempt{ID: id, Task: "rt-06", State: apitype.StateQueued, Created: now}
		if err := st.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		a.State, a.Outcome, a.TaskSHA256, a.JournalHead = apitype.StateDone, outcome, strings.Repeat("b", 64), strings.Repeat("a", 64)
		a.Reasons = []apitype.Reason{{Code: "needs_review", Message: "hedged"}}
		a.Started, a.Finished, a.WallMS = &now, &now, 12
		if err := st.UpdateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		s.sign(ctx, id, pol)
	}
	mux := s.routes()
	post := func(id, body string, p *peer) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/attempts/"+id+"/review", strings.NewReader(body))
		if p != nil {
			req = req.WithContext(context.WithValue(req.Context(), peerKey{}, *p))
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec
	}
	reviewer := &peer{PID: 1, UID: 1234, GID: 1234}
	for _, tc := range []struct {
		name, id, body string
		p              *peer
		status         int
		code, msg      string
	}{
		{"outcome review", "a-review", `{"outcome":"review","why":"x"}`, reviewer, 400, apitype.CodeInvalid, `review outcome "review"`},
		{"no why", "a-review", `{"outcome":"pass","why":" "}`, reviewer, 400, apitype.CodeInvalid, "needs a reason"},
		{"uid in the body", "a-review", `{"outcome":"pass","why":"x","uid":0}`, reviewer, 400, apitype.CodeInvalid, "unknown field"},
		{"no peer", "a-review", `{"outcome":"pass","why":"x"}`, nil, 403, apitype.CodeForbidden, "reviewer is unknown"},
		{"not in review", "a-fail", `{"outcome":"pass","why":"x"}`, reviewer, 409, apitype.CodeConflict, "unable to review attempt a-fail: conflict: it is not in review (it is graded fail)"},
		{"no such attempt", "a-nope", `{"outcome":"pass","why":"x"}`, reviewer, 404, apitype.CodeNotFound, "a-nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := post(tc.id, tc.body, tc.p)
			var e apitype.Error
			json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("got %d %+v, want %d %s with %q", rec.Code, e, tc.status, tc.code, tc.msg)
			}
		})
	}
	if a, _ := st.GetAttempt(ctx, "a-review"); !a.Unresolved() {
		t.Fatalf("refused requests changed the attempt: %+v", a)
	}

	rec := post("a-review", `{"outcome":"pass","why":"both readings are stated"}`, reviewer)
	if rec.Code != 200 {
		t.Fatalf("review: got %d %s", rec.Code, rec.Body)
	}
	var got apitype.Attempt
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Pass || got.Outcome != apitype.OutcomePass || got.Review == nil || got.Review.UID != 1234 || got.Review.Why != "both readings are stated" {
		t.Fatalf("review: got %+v (review %+v), want a pass reviewed by uid 1234", got, got.Review)
	}
	b, err := st.Envelope(ctx, "a-review")
	if err != nil {
		t.Fatal(err)
	}
	env, err := dsse.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := dsse.Verify(env, key.Public().(ed25519.PublicKey)); err != nil {
		t.Fatalf("the envelope after review: %v", err)
	}
	var signed apitype.Statement
	json.Unmarshal(env.Payload, &signed)
	stored, _ := st.GetAttempt(ctx, "a-review")
	want := apitype.StatementOf(stored)
	want.TaskPolicy = pol
	gb, _ := json.Marshal(signed)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("got signed statement\n%s\nwant\n%s", gb, wb)
	}
	if signed.Type != apitype.StatementTypeReviewed || signed.Review == nil || signed.Verdict == nil || !signed.Verdict.Pass {
		t.Errorf("got signed statement %s, want the reviewed type with the review and the decided verdict", gb)
	}

	rec = post("a-review", `{"outcome":"fail","why":"second thoughts"}`, &peer{UID: 0})
	var e apitype.Error
	json.Unmarshal(rec.Body.Bytes(), &e)
	if rec.Code != 409 || !strings.Contains(e.Message, "reviewed already (pass by uid 1234") {
		t.Errorf("second review: got %d %+v, want 409 naming the first review", rec.Code, e)
	}
}
