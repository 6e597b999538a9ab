package daemon

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
)

// TestCheckRefusedBeforeStream: a check refused before any attempt is
// submitted gets an error response, stream=1 or not (the stream's
// status is only sent with its first line), and stream takes only 1.
func TestCheckRefusedBeforeStream(t *testing.T) {
	tests := []struct {
		name, query string
		wantStatus  int
		wantCode    string
	}{
		{"stream of an unknown task", "?stream=1&task=rt-99", http.StatusNotFound, apitype.CodeNotFound},
		{"unknown task", "?task=rt-99", http.StatusNotFound, apitype.CodeNotFound},
		{"stream not 1", "?stream=yes&task=rt-01", http.StatusBadRequest, apitype.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Stopping, so that a check that did start would end at once
			// (busy) rather than wait for attempts no worker runs.
			s := batchServer(t)
			s.closing = make(chan struct{})
			close(s.closing)
			rec := httptest.NewRecorder()
			s.routes().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/tasks/check"+tt.query, nil))
			var e apitype.Error
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != tt.wantStatus || e.Code != tt.wantCode {
				t.Errorf("got %d %s, want %d with code %s", rec.Code, rec.Body, tt.wantStatus, tt.wantCode)
			}
			if as, err := s.store.ListAttempts(t.Context(), store.Filter{}); err != nil || len(as) != 0 {
				t.Errorf("got %d attempts stored (%v), want none", len(as), err)
			}
		})
	}
}

// TestCheckStreamError: once the stream has started, a check that
// cannot finish ends with an "error" event of the error's class, not an
// "end", and its attempts are canceled. Here benchd is stopping (and no
// worker runs them), so it cannot await them.
func TestCheckStreamError(t *testing.T) {
	s := batchServer(t)
	s.closing = make(chan struct{})
	close(s.closing)
	rec := httptest.NewRecorder()
	s.routes().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/tasks/check?stream=1&task=rt-01", nil))
	if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || ct != "application/x-ndjson" {
		t.Fatalf("got %d %s, want 200 and a stream", rec.Code, ct)
	}
	dec := json.NewDecoder(rec.Body)
	var evs []apitype.CheckEvent
	for dec.More() {
		var ev apitype.CheckEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("got a line that is not a CheckEvent: %v", err)
		}
		evs = append(evs, ev)
	}
	if len(evs) != 2 || evs[0].Type != apitype.CheckStart || len(evs[0].Attempts) < 2 || evs[0].Concurrency != 3 {
		t.Fatalf("got events %+v, want the start, with rt-01's reference and known attempts and the concurrency, then the error", evs)
	}
	if last := evs[1]; last.Type != apitype.CheckError || last.Error == nil || last.Error.Code != apitype.CodeBusy {
		t.Errorf("got last event %+v, want an error of code %s", last, apitype.CodeBusy)
	}
	for _, r := range evs[0].Attempts {
		a, err := s.store.GetAttempt(t.Context(), r.Attempt)
		if err != nil || a.State != apitype.StateCanceled || a.Purpose != apitype.PurposeCheck {
			t.Errorf("attempt %s (%s): got state %s purpose %s (%v), want canceled, of purpose check", r.Attempt, r.Agent, a.State, a.Purpose, err)
		}
	}
}
