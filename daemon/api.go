package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/daemon/store"
	"benchd.dev/fsmon/journal"
	"benchd.dev/tasks"
)

// handlerFunc is an endpoint: it writes its response, or returns an
// error for writeError to translate.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(pattern string, h handlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				writeError(w, s.log, r, err)
			}
		})
	}
	handle("POST /v1/runs", s.handleCreateRun)
	handle("GET /v1/runs/{id}", s.handleGetRun)
	handle("GET /v1/runs/{id}/status", s.handleRunStatus)
	handle("POST /v1/runs/{id}/cancel", s.handleCancelRun)
	handle("POST /v1/runs/{id}/retry", s.handleRetry)
	handle("GET /v1/attempts", s.handleListAttempts)
	// An attempt's {id} may be a unique prefix or "latest"
	// (resolveAttempt); the handlers see the whole id.
	attempt := func(pattern string, h handlerFunc) {
		handle(pattern, func(w http.ResponseWriter, r *http.Request) error {
			id, err := s.resolveAttempt(r.Context(), r.PathValue("id"))
			if err != nil {
				return err
			}
			r.SetPathValue("id", id)
			return h(w, r)
		})
	}
	attempt("GET /v1/attempts/{id}", s.handleGetAttempt)
	attempt("GET /v1/attempts/{id}/events", s.handleEvents)
	attempt("POST /v1/attempts/{id}/cancel", s.handleCancel)
	attempt("POST /v1/attempts/{id}/regrade", s.handleRegrade)
	attempt("POST /v1/attempts/{id}/review", s.handleReview)
	attempt("GET /v1/attempts/{id}/journal", s.handleJournal)
	attempt("GET /v1/attempts/{id}/blobs/{sha}", s.handleBlob)
	attempt("GET /v1/attempts/{id}/transcript", s.handleTranscript)
	attempt("GET /v1/attempts/{id}/model", s.handleModel)
	attempt("GET /v1/attempts/{id}/model/{seq}/{which}", s.handleModelMessage)
	attempt("GET /v1/attempts/{id}/export", s.handleExport)
	handle("GET /v1/tasks", s.handleTasks)
	handle("POST /v1/tasks/check", s.handleCheck)
	handle("GET /v1/status", s.handleStatus)
	handle("GET /v1/key", s.handleKey)
	handle("POST /v1/prune", s.handlePrune)
	handle("/", func(w http.ResponseWriter, r *http.Request) error {
		return fmt.Errorf("no endpoint %s %s: %w", r.Method, r.URL.Path, errNotFound)
	})
	return mux
}

// Attempt references (resolveAttempt).
const (
	// latestAttempt names the newest attempt.
	latestAttempt = "latest"
	// minAttemptPrefix is the shortest prefix taken, in characters after
	// the "a-" every attempt id starts with.
	minAttemptPrefix = 4
	// maxCandidates is how many attempts an ambiguous prefix's error names.
	maxCandidates = 5
)

// resolveAttempt turns what a caller named an attempt by into its id: the
// id itself; "latest", the newest attempt; or a prefix of one id, with or
// without its "a-", of at least minAttemptPrefix characters after it. A
// prefix of several ids is refused naming some of them (newest first),
// one of none is not found.
func (s *server) resolveAttempt(ctx context.Context, ref string) (string, error) {
	if ref == latestAttempt {
		ids, err := s.store.AttemptIDs(ctx, "", 1)
		if err != nil {
			return "", err
		}
		if len(ids) == 0 {
			return "", fmt.Errorf("attempt latest: there are no attempts yet: %w", errNotFound)
		}
		return ids[0], nil
	}
	prefix := ref
	if !strings.HasPrefix(prefix, "a-") {
		prefix = "a-" + prefix
	}
	ids, err := s.store.AttemptIDs(ctx, prefix, maxCandidates+1)
	if err != nil {
		return "", err
	}
	if slices.Contains(ids, prefix) {
		return prefix, nil // a whole id, though it prefixes others
	}
	switch {
	case len(ids) == 0:
		return "", fmt.Errorf("attempt %s: %w", ref, store.ErrNotFound)
	case len(prefix)-len("a-") < minAttemptPrefix:
		return "", fmt.Errorf("attempt %q: a prefix needs at least %d characters after \"a-\" (or give the whole id, or latest): %w", ref, minAttemptPrefix, errInvalid)
	case len(ids) == 1:
		return ids[0], nil
	}
	more := ""
	if len(ids) > maxCandidates {
		ids, more = ids[:maxCandidates], ", ..."
	}
	return "", fmt.Errorf("attempt %q is ambiguous: it starts %s%s; give more of the id: %w", ref, strings.Join(ids, ", "), more, errInvalid)
}

// decodeJSON decodes the request body into v: one JSON value of at most
// apitype.MaxBodyBytes, with no unknown fields and nothing after it.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	r.Body = http.MaxBytesReader(w, r.Body, apitype.MaxBodyBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("request body is over %d bytes: %w", apitype.MaxBodyBytes, errTooLarge)
		}
		if err == io.EOF {
			return fmt.Errorf("empty request body, want a JSON object: %w", errInvalid)
		}
		return fmt.Errorf("malformed JSON: %v: %w", err, errInvalid)
	}
	if _, err := dec.Token(); err != io.EOF {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("request body is over %d bytes: %w", apitype.MaxBodyBytes, errTooLarge)
		}
		return fmt.Errorf("malformed JSON: data after the request object: %w", errInvalid)
	}
	return nil
}

// canonicalTaskID checks a task id before it comes near a path and
// returns it canonical (tasks.CanonicalID: "RT-01" names rt-01).
func canonicalTaskID(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("no task given: %w", errInvalid)
	}
	c := tasks.CanonicalID(id)
	if !tasks.ValidID(c) {
		return "", fmt.Errorf("task id %q is not valid: use letters, digits and dashes: %w", id, errInvalid)
	}
	return c, nil
}

// validate checks a RunRequest completely, every task of it; nothing is
// changed before it returns nil. It finds the tasks and checks the run's
// size and purpose; what one attempt asks is checked by the one
// validator, runs.Engine.Plan, once for each task.
func (s *server) validate(req apitype.RunRequest) (submitted, error) {
	var sub submitted
	found, err := s.findTasks(req)
	if err != nil {
		return sub, err
	}
	sub.n = req.Attempts
	if sub.n == 0 {
		sub.n = 1
	}
	if most := min(apitype.MaxAttempts, s.cfg.MaxQueued); sub.n < 1 || sub.n > most {
		return sub, fmt.Errorf("attempts %d out of range [1, %d]: %w", req.Attempts, most, errInvalid)
	}
	if total := sub.n * len(found); total > s.cfg.MaxQueued {
		return sub, fmt.Errorf("%d tasks of %d attempts make %d attempts, beyond the queue's limit of %d (benchd --max-queued): %w",
			len(found), sub.n, total, s.cfg.MaxQueued, errInvalid)
	}
	sub.purpose = req.Purpose
	if sub.purpose == "" {
		sub.purpose = apitype.PurposeRun
	}
	if !apitype.ValidPurpose(sub.purpose) {
		return sub, fmt.Errorf("purpose %q: want one of %s: %w", req.Purpose, strings.Join(apitype.Purposes, ", "), errInvalid)
	}
	timeout, err := runs.ParseTimeout(req.Timeout)
	if err != nil {
		return sub, err
	}
	sub.env = req.Env
	for _, task := range found {
		plan, err := s.engine.Plan(runs.Spec{Task: task, Agent: req.Agent, Timeout: timeout, Env: req.Env, Gateways: req.Gateways, Model: req.Model})
		if err != nil {
			if len(found) > 1 {
				return sub, fmt.Errorf("task %s: %w", task.ID, err)
			}
			return sub, err
		}
		sub.tasks = append(sub.tasks, submittedTask{task: task, plan: plan})
	}
	return sub, nil
}

// maxKnownNamed is how many known tasks the error of an unknown one
// names.
const maxKnownNamed = 40

// findTasks finds the bundles of a request's tasks (RunRequest.Tasks, or
// its one Task), in order. A task given twice is invalid; the tasks not
// in the store are refused together, naming them and the known tasks.
func (s *server) findTasks(req apitype.RunRequest) ([]*tasks.Task, error) {
	ids := req.Tasks
	if len(ids) == 0 {
		ids = []string{req.Task}
	}
	if len(ids) > apitype.MaxRunTasks {
		return nil, fmt.Errorf("%d tasks: at most %d: %w", len(ids), apitype.MaxRunTasks, errInvalid)
	}
	var (
		found   []*tasks.Task
		unknown []string
		seen    = map[string]bool{}
	)
	for _, ref := range ids {
		id, err := canonicalTaskID(ref)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			return nil, fmt.Errorf("task %s given twice: %w", id, errInvalid)
		}
		seen[id] = true
		task, err := tasks.Find(s.cfg.TasksDir, id)
		switch {
		case errors.Is(err, tasks.ErrNotFound):
			unknown = append(unknown, id)
		case err != nil:
			return nil, fmt.Errorf("task %q: %w", ref, err)
		default:
			found = append(found, task)
		}
	}
	if len(unknown) == 0 {
		return found, nil
	}
	what := "unknown task "
	if len(unknown) > 1 {
		what = "unknown tasks "
	}
	return nil, fmt.Errorf("%s%s (%s): %w", what, strings.Join(unknown, ", "), s.knownTasks(), errNotFound)
}

// knownTasks names the tasks of the store, for an error.
func (s *server) knownTasks() string {
	all, broken, err := tasks.LoadEach(s.cfg.TasksDir)
	if err != nil {
		return fmt.Sprintf("the task store does not load: %v", err)
	}
	if len(broken) > 0 && len(all) == 0 {
		return fmt.Sprintf("no bundle of the task store loads: %v", broken[0])
	}
	if len(all) == 0 {
		return "the task store " + s.cfg.TasksDir + " has no tasks"
	}
	ids := make([]string, len(all))
	for i, t := range all {
		ids[i] = t.ID
	}
	slices.Sort(ids)
	more := ""
	if len(ids) > maxKnownNamed {
		more = fmt.Sprintf(" and %d more (benchctl tasks list)", len(ids)-maxKnownNamed)
		ids = ids[:maxKnownNamed]
	}
	if len(broken) > 0 {
		more += fmt.Sprintf("; %d bundle(s) do not load, %s among them (benchctl tasks list names them)", len(broken), broken[0].Dir)
	}
	return "known tasks: " + strings.Join(ids, ", ") + more
}

func (s *server) handleCreateRun(w http.ResponseWriter, r *http.Request) error {
	var req apitype.RunRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	sub, err := s.validate(req)
	if err != nil {
		return err
	}
	run, err := s.submit(r.Context(), sub)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, run)
	return nil
}

func (s *server) handleGetRun(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	run, err := s.store.GetRun(r.Context(), id)
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// withLive adds what only memory knows (the phase of a running attempt).
func (s *server) withLive(a apitype.Attempt) apitype.Attempt {
	if a.State != apitype.StateRunning {
		return a
	}
	if la := s.liveOf(a.ID); la != nil {
		ev, _, _ := la.snapshot()
		if ev.Phase != "" {
			a.Phase = ev.Phase
		}
	}
	return a
}

func (s *server) getAttempt(r *http.Request) (apitype.Attempt, error) {
	id := r.PathValue("id")
	a, err := s.store.GetAttempt(r.Context(), id)
	if err != nil {
		return a, fmt.Errorf("attempt %s: %w", id, err)
	}
	return s.withLive(a), nil
}

func (s *server) handleListAttempts(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f, err := attemptFilter(q)
	if err != nil {
		return err
	}
	f.Limit = 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 10000 {
			return fmt.Errorf("limit %q out of range [1, 10000]: %w", l, errInvalid)
		}
		f.Limit = n
	}
	list, err := s.store.ListAttempts(r.Context(), f)
	if err != nil {
		return err
	}
	total, err := s.store.CountAttempts(r.Context(), f)
	if err != nil {
		return err
	}
	out := apitype.AttemptList{Attempts: make([]apitype.Attempt, 0, len(list)), Total: max(total, len(list))}
	for _, a := range list {
		out.Attempts = append(out.Attempts, s.withLive(a))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// attemptFilter reads the attempts' FILTER (apitype's package doc) from
// q. A bad value is invalid, and named.
func attemptFilter(q url.Values) (store.Filter, error) {
	f := store.Filter{Run: q.Get("run"), Agent: q.Get("agent"), Model: q.Get("model")}
	for _, t := range q["task"] {
		id, err := canonicalTaskID(t)
		if err != nil {
			return f, err
		}
		f.Tasks = append(f.Tasks, id)
	}
	for _, st := range q["state"] {
		if !slices.Contains(apitype.States, st) {
			return f, fmt.Errorf("state %q: want one of %s: %w", st, strings.Join(apitype.States, ", "), errInvalid)
		}
		f.States = append(f.States, st)
	}
	for _, p := range q["purpose"] {
		if !apitype.ValidPurpose(p) {
			return f, fmt.Errorf("purpose %q: want one of %s: %w", p, strings.Join(apitype.Purposes, ", "), errInvalid)
		}
		f.Purposes = append(f.Purposes, p)
	}
	for _, tm := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := q.Get(tm.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, fmt.Errorf("%s %q is not an RFC 3339 time: %w", tm.name, v, errInvalid)
		}
		*tm.to = t
	}
	return f, nil
}

func (s *server) handleGetAttempt(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// handleEvents streams the attempt's events, one JSON object a line,
// until it ends (a last event with Done set), the caller goes or benchd
// stops.
func (s *server) handleEvents(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	la := s.liveOf(id)
	a, err := s.store.GetAttempt(r.Context(), id)
	if err != nil {
		return fmt.Errorf("attempt %s: %w", id, err)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	if la == nil && s.attempts().shared() && (a.State == apitype.StateQueued || a.State == apitype.StateRunning) {
		return s.storedEvents(r.Context(), enc, rc, id)
	}
	if la == nil {
		enc.Encode(s.endedEvent(r.Context(), a))
		rc.Flush()
		return nil
	}
	s.followLive(r.Context(), la, enc, rc)
	return nil
}

// endedEvent is the final event of attempt a, which has no live state
// here: when a is still queued or running in the store, it ended between
// the two look-ups, and the store has its end now.
func (s *server) endedEvent(ctx context.Context, a apitype.Attempt) apitype.Event {
	if a.State == apitype.StateQueued || a.State == apitype.StateRunning {
		if a2, err := s.store.GetAttempt(ctx, a.ID); err == nil {
			return finalEvent(a2)
		}
	}
	return finalEvent(a)
}

// followLive sends la's events as they change, until its final one, the
// client's going or benchd's shutdown.
func (s *server) followLive(ctx context.Context, la *liveAttempt, enc *json.Encoder, rc *http.ResponseController) {
	var last apitype.Event
	first := true
	for {
		ev, changed, final := la.snapshot()
		if first || ev != last {
			if err := enc.Encode(ev); err != nil {
				return
			}
			rc.Flush()
			first, last = false, ev
		}
		if final != nil {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		}
	}
}

func (s *server) handleCancel(w http.ResponseWriter, r *http.Request) error {
	a, err := s.cancelAttempt(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

func (s *server) handleJournal(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	cw := &countingWriter{w: w}
	w.Header().Set("Content-Type", "application/x-ndjson")
	if err := s.store.JournalLines(r.Context(), a.ID, cw); err != nil {
		if cw.n == 0 {
			return fmt.Errorf("journal of attempt %s: %w", a.ID, err)
		}
		s.log.Warn("journal stream cut short", "attempt", a.ID, "err", err)
	}
	return nil
}

// countingWriter counts what went through, so that an error before any
// byte can still become an error response.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (s *server) handleBlob(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	sha := r.PathValue("sha")
	if !journal.ValidSHA(sha) {
		return fmt.Errorf("blob %q is not a sha256 hex digest: %w", sha, errInvalid)
	}
	blobs, err := s.store.BlobsFor(r.Context(), a.ID)
	if err != nil {
		return err
	}
	if !blobs.Has(sha) {
		return fmt.Errorf("blob %s of attempt %s: %w", sha, a.ID, errNotFound)
	}
	f, err := blobs.Open(sha)
	if err != nil {
		return fmt.Errorf("blob %s: %w", sha, err)
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	io.Copy(w, f)
	return nil
}

func (s *server) handleTranscript(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	t, err := s.transcript(r.Context(), a.ID)
	if err != nil {
		return fmt.Errorf("transcript of attempt %s: %w", a.ID, err)
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (s *server) handleTasks(w http.ResponseWriter, r *http.Request) error {
	all, broken, err := tasks.LoadEach(s.cfg.TasksDir)
	if err != nil {
		return fmt.Errorf("unable to load the task store: %w", err)
	}
	out := apitype.TaskList{Tasks: make([]apitype.TaskInfo, 0, len(all))}
	for _, b := range broken {
		out.Broken = append(out.Broken, apitype.BrokenBundle{Dir: b.Dir, Error: b.Error()})
	}
	for _, t := range all {
		info, err := taskInfo(t)
		if err != nil {
			return err
		}
		out.Tasks = append(out.Tasks, info)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) handleStatus(w http.ResponseWriter, r *http.Request) error {
	q, run := s.counts()
	writeJSON(w, http.StatusOK, apitype.Status{
		Version:     Version,
		Queued:      q,
		Running:     run,
		Concurrency: s.cfg.Concurrency,
		StateDir:    s.cfg.StateDir,
		Tasks:       s.cfg.TasksDir,
	})
	return nil
}

// storedEvents streams the events of an attempt of the fleet that this
// host does not run, from the store: one at each change of state or
// phase, until it has ended.
func (s *server) storedEvents(ctx context.Context, enc *json.Encoder, rc *http.ResponseController, id string) error {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last apitype.Event
	first := true
	for {
		a, err := s.store.GetAttempt(ctx, id)
		if err != nil {
			return nil
		}
		ev := apitype.Event{Attempt: id, State: a.State, Phase: a.Phase}
		if a.Started != nil && a.State == apitype.StateRunning {
			ev.ElapsedMS = time.Since(*a.Started).Milliseconds()
		}
		ended := a.State != apitype.StateQueued && a.State != apitype.StateRunning
		if ended {
			ev = finalEvent(a)
		}
		if first || ev.State != last.State || ev.Phase != last.Phase || ended {
			if err := enc.Encode(ev); err != nil {
				return nil
			}
			rc.Flush()
			first, last = false, ev
		}
		if ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case <-t.C:
		}
	}
}
