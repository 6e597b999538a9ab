package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

func testCalls() []ModelCall {
	u := apitype.TokenUsage{InputTokens: 120, CachedInputTokens: 20, OutputTokens: 10}
	return []ModelCall{
		{Call: apitype.ModelCall{Seq: 1, Gateway: "model", Time: base, DurationMS: 12, Method: "POST", Path: "/v1/responses",
			API: apitype.ModelAPIResponses, Model: "m", Stream: true, Status: 200, Usage: &u,
			ToolCalls: []apitype.ToolCall{{ID: "c1", Name: "shell", Arguments: `{"command":["ls"]}`}}, RequestBytes: 3, ResponseBytes: 5},
			Request: []byte("POST /v1/responses HTTP/1.1\r\n\r\nreq"), Response: []byte("HTTP/1.1 200 OK\r\n\r\nresp\x00\xff")},
		{Call: apitype.ModelCall{Seq: 2, Gateway: "model", Time: base.Add(time.Second), Method: "GET", Path: "/v1/models",
			API: apitype.ModelAPIOther, Error: "the upstream did not answer"},
			Request: []byte("GET /v1/models HTTP/1.1\r\n\r\n")},
	}
}

// TestModelCalls: an attempt's calls go in with its end (Finish) or on
// their own (recovery), once, come back as stored with their messages,
// and go with the attempt when it is pruned.
func TestModelCalls(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		a := apitype.Attempt{ID: "a1", Task: "rt-01", Created: base, Host: "h"}
		mustCreate(t, s, a)
		a.State = apitype.StateRunning
		must(t, s.StartAttempt(ctx, a))
		calls := testCalls()
		a.State = apitype.StateDone
		fin := time.Now().UTC()
		a.Finished = &fin
		must(t, s.Finish(ctx, Finish{Attempt: a, ModelCalls: calls}))

		got, err := s.ModelCalls(ctx, "a1")
		must(t, err)
		want := []apitype.ModelCall{calls[0].Call, calls[1].Call}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got calls %+v\nwant %+v", got, want)
		}
		if apitype.ModelCallsSHA256(got) != apitype.ModelCallsSHA256(want) {
			t.Errorf("the calls' hash changed through the store")
		}
		for _, c := range calls {
			for _, resp := range []bool{false, true} {
				m, err := s.ModelMessage(ctx, "a1", c.Call.Seq, resp)
				must(t, err)
				w := c.Request
				if resp {
					w = c.Response
				}
				if string(m) != string(w) {
					t.Errorf("call %d response %v: got %q, want %q", c.Call.Seq, resp, m, w)
				}
			}
		}
		wantErr(t, s.SaveModelCalls(ctx, "a1", calls), ErrConflict)
		_, err = s.ModelMessage(ctx, "a1", 3, false)
		wantErr(t, err, ErrNotFound)
		_, err = s.ModelCalls(ctx, "nope")
		wantErr(t, err, ErrNotFound)

		// Another attempt's calls are its own.
		mustCreate(t, s, apitype.Attempt{ID: "a2", Task: "rt-01", Created: base.Add(time.Minute)})
		must(t, s.SaveModelCalls(ctx, "a2", calls[:1]))
		if got, _ := s.ModelCalls(ctx, "a2"); len(got) != 1 {
			t.Errorf("a2: got %d calls, want 1", len(got))
		}
		if none, err := s.ModelCalls(ctx, "a2x"); err == nil || none != nil {
			t.Errorf("got %v, %v for an unknown attempt", none, err)
		}

		p, err := s.Prune(ctx, PruneFilter{Before: base.Add(30 * time.Second)})
		must(t, err)
		if len(p.Attempts) != 1 || p.RecordBytes == 0 {
			t.Errorf("pruned %+v, want a1 and its calls' bytes", p)
		}
		_, err = s.ModelMessage(ctx, "a1", 1, true)
		wantErr(t, err, ErrNotFound)
		var rows int
		must(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM model_calls`).Scan(&rows))
		if rows != 1 {
			t.Errorf("%d model call rows left, want a2's 1", rows)
		}
	})
}
