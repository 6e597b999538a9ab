package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/modelgw"
)

// loadModelCalls reads the model calls an attempt's HTTP gateways
// recorded in its work directory dir, with their stored messages, and
// their sum and cost at prices. A message file that is not what its
// call's hash says (cut by a crash mid-write, or missing) is stored as
// it is, and the call gets its hash and Truncated: the calls' hash,
// which the statement signs, binds what is stored. An attempt's end
// (attachModelCalls) and start-up recovery both read them so.
func loadModelCalls(dir string, prices *modelgw.Prices) ([]store.ModelCall, *apitype.ModelUsage, error) {
	calls, err := modelgw.ReadLog(dir)
	if err != nil || len(calls) == 0 {
		return nil, nil, err
	}
	out := make([]store.ModelCall, len(calls))
	for i := range calls {
		c := &calls[i]
		req, err := readMessage(modelgw.MessagePath(dir, c.Seq, false))
		if err != nil {
			return nil, nil, err
		}
		resp, err := readMessage(modelgw.MessagePath(dir, c.Seq, true))
		if err != nil {
			return nil, nil, err
		}
		for _, m := range []struct {
			b   []byte
			sha *string
		}{{req, &c.RequestSHA256}, {resp, &c.ResponseSHA256}} {
			sum := sha256.Sum256(m.b)
			if h := hex.EncodeToString(sum[:]); h != *m.sha {
				*m.sha, c.Truncated = h, true
			}
		}
		out[i] = store.ModelCall{Call: *c, Request: req, Response: resp}
	}
	return out, modelgw.Usage(calls, prices), nil
}

// readMessage reads a stored message, at most modelgw.MaxMessageBytes;
// a missing file is an empty message.
func readMessage(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unable to read a model call's message: %w", err)
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, modelgw.MaxMessageBytes))
}

// attachModelCalls reads the calls of the work directory dir and sets
// a's usage from them (cost at the price table), for the attempt's end
// to store them with it.
func (s *server) attachModelCalls(a *apitype.Attempt, dir string) []store.ModelCall {
	if dir == "" {
		return nil
	}
	recs, usage, err := loadModelCalls(dir, s.cfg.Prices)
	if err != nil {
		s.log.Warn("unable to read the model calls", "attempt", a.ID, "err", err)
		return nil
	}
	a.Model = usage
	return recs
}

// attemptDir is the work directory of attempt id on this host.
func (s *server) attemptDir(id string) string {
	return runs.AttemptDirOf(s.cfg.StateDir, id).Path()
}

// modelLog is the model calls of attempt a: the stored ones once it has
// ended; while it runs on this host, those its gateways recorded so far
// (a call in progress with Error "in progress").
func (s *server) modelLog(ctx context.Context, a apitype.Attempt) (apitype.ModelLog, error) {
	calls, err := s.store.ModelCalls(ctx, a.ID)
	if err != nil {
		return apitype.ModelLog{}, fmt.Errorf("model calls of attempt %s: %w", a.ID, err)
	}
	if len(calls) == 0 && a.State == apitype.StateRunning && s.liveOf(a.ID) != nil {
		if live, err := modelgw.ReadLiveLog(s.attemptDir(a.ID)); err == nil {
			calls = live
		}
	}
	if calls == nil {
		calls = []apitype.ModelCall{}
	}
	log := apitype.ModelLog{Attempt: a.ID, Calls: calls, Usage: apitype.ModelUsageOf(calls)}
	if a.Model != nil {
		log.Usage = *a.Model
	}
	return log, nil
}

func (s *server) handleModel(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	log, err := s.modelLog(r.Context(), a)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, log)
	return nil
}

// handleModelMessage serves a call's stored request or response as
// text: an HTTP/1.1 message, credentials redacted.
func (s *server) handleModelMessage(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	seq, err := strconv.Atoi(r.PathValue("seq"))
	if err != nil || seq < 1 {
		return fmt.Errorf("model call %q: want a number from 1: %w", r.PathValue("seq"), errInvalid)
	}
	response := r.PathValue("which") == "response"
	if !response && r.PathValue("which") != "request" {
		return fmt.Errorf("no endpoint %s %s: %w", r.Method, r.URL.Path, errNotFound)
	}
	b, err := s.store.ModelMessage(r.Context(), a.ID, seq, response)
	if errors.Is(err, store.ErrNotFound) && a.State == apitype.StateRunning && s.liveOf(a.ID) != nil {
		b, err = os.ReadFile(modelgw.MessagePath(s.attemptDir(a.ID), seq, response))
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("model call %d of attempt %s: %w", seq, a.ID, store.ErrNotFound)
		}
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(b)
	return nil
}
