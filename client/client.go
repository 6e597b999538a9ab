// Package client is the Go client of benchd's HTTP/JSON API, spoken over
// the daemon's unix socket.
//
// The zero Client is ready to use:
//
//	var c client.Client // Socket "": $BENCHD_SOCKET, else apitype.DefaultSocket
//	a, err := c.Attempt(ctx, "a-0001")
//
// Every endpoint of client/apitype's package doc is one method, ctx first.
// Streams are returned as they arrive: Events reads the newline-delimited
// event stream of one attempt up to its last event (EventStream.Next, or
// range over EventStream.All), and Journal, Blob and Export hand back the
// response body for the caller to read and close. Get sends any GET and
// hands back its response as it is, for a caller that forwards it.
//
// # Errors
//
// An error response (apitype.Error on the wire) comes back as an *Error
// whose class matches one of the sentinel errors with errors.Is:
// ErrInvalid, ErrForbidden, ErrNotFound, ErrConflict, ErrTooLarge,
// ErrBusy, ErrInternal. The class follows the wire code, or the HTTP
// status when the code is missing or unknown. When nothing listens on the
// socket the error matches ErrNotRunning and names the socket ("benchd is
// not running at /run/benchd/benchd.sock"); a socket this user may not
// open matches ErrForbidden.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"benchd.dev/client/apitype"
)

// Client talks to one benchd. Its zero value uses the socket named by
// $BENCHD_SOCKET, or apitype.DefaultSocket. Set Socket before the first
// call; a Client is safe for concurrent use after that.
type Client struct {
	// Socket is the path of benchd's unix socket; "" means
	// $BENCHD_SOCKET, else apitype.DefaultSocket.
	Socket string

	once sync.Once
	hc   *http.Client
	path string
}

// maxJSONBytes caps a JSON response body: a larger one is an error, not
// an allocation without bound.
const maxJSONBytes = 64 << 20

// SocketPath returns the socket the client dials.
func (c *Client) SocketPath() string {
	if c.Socket != "" {
		return c.Socket
	}
	if s := os.Getenv(apitype.SocketEnv); s != "" {
		return s
	}
	return apitype.DefaultSocket
}

func (c *Client) init() {
	c.once.Do(func() {
		c.path = c.SocketPath()
		var d net.Dialer
		c.hc = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "unix", c.path)
			},
			DisableCompression: true,
			MaxIdleConns:       4,
		}}
	})
}

// do sends one request and returns the response when its status is 2xx,
// else the error the body describes. body, when not nil, is sent as JSON.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	c.init()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("unable to encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	u := "http://benchd" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("unable to make request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorFromResponse(resp)
	}
	return resp, nil
}

// transportError turns a failure to reach benchd into an error that says
// so in terms of the socket.
func (c *Client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w at %s", ErrNotRunning, c.path)
	case errors.Is(err, fs.ErrPermission):
		return &Error{Code: apitype.CodeForbidden, Message: fmt.Sprintf(
			"permission denied on benchd's socket %s (root or a member of group benchd may use it)", c.path)}
	}
	return fmt.Errorf("unable to reach benchd at %s: %w", c.path, err)
}

// getJSON decodes the response of a GET into out.
func (c *Client) getJSON(ctx context.Context, path string, query url.Values, out any) error {
	return c.doJSON(ctx, http.MethodGet, path, query, nil, out)
}

func (c *Client) doJSON(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := c.do(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBytes+1))
	if err != nil {
		return fmt.Errorf("unable to read response of %s %s: %w", method, path, err)
	}
	if len(b) > maxJSONBytes {
		return fmt.Errorf("response of %s %s is larger than %d bytes", method, path, maxJSONBytes)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("unable to decode response of %s %s: %w", method, path, err)
	}
	return nil
}

// endpoint joins apitype.Prefix and path segments, escaping each.
func endpoint(segs ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(apitype.Prefix, "/"))
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// checkID rejects an empty id or one that would change the request's path.
func checkID(what, id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/?#") {
		return &Error{Code: apitype.CodeInvalid, Message: fmt.Sprintf("bad %s id %q", what, id)}
	}
	return nil
}

// CreateRun asks for the attempts of req and returns the run, whose
// Attempts lists the new attempt ids.
func (c *Client) CreateRun(ctx context.Context, req apitype.RunRequest) (apitype.Run, error) {
	var run apitype.Run
	err := c.doJSON(ctx, http.MethodPost, endpoint("runs"), nil, req, &run)
	return run, err
}

// Run returns one run.
func (c *Client) Run(ctx context.Context, id string) (apitype.Run, error) {
	var run apitype.Run
	if err := checkID("run", id); err != nil {
		return run, err
	}
	err := c.getJSON(ctx, endpoint("runs", id), nil, &run)
	return run, err
}

// RunStatus returns where each attempt of run id is (one per slot of
// the run, a retried infra error as its last retry) and whether all of
// them have ended.
func (c *Client) RunStatus(ctx context.Context, id string) (apitype.RunStatus, error) {
	var st apitype.RunStatus
	if err := checkID("run", id); err != nil {
		return st, err
	}
	err := c.getJSON(ctx, endpoint("runs", id, "status"), nil, &st)
	return st, err
}

// CancelRun cancels every queued and running attempt of run id, waiting
// until each has ended, and returns them. A run with nothing queued or
// running is an error matching ErrConflict.
func (c *Client) CancelRun(ctx context.Context, id string) (apitype.RunCancel, error) {
	var rc apitype.RunCancel
	if err := checkID("run", id); err != nil {
		return rc, err
	}
	err := c.doJSON(ctx, http.MethodPost, endpoint("runs", id, "cancel"), nil, nil, &rc)
	return rc, err
}

// AttemptFilter narrows Attempts. Zero fields do not filter, and the
// fields that are set all apply; Limit 0 is the daemon's default.
type AttemptFilter struct {
	Run      string
	Task     string   // one task; with Tasks, it is one of them
	Tasks    []string // one of these tasks
	Agent    string   // the agent as given to run (AgentIdentity.Spec)
	Model    string
	States   []string  // one of these states
	Purposes []string  // one of these purposes (apitype.Purposes)
	Since    time.Time // created at or after
	Until    time.Time // created before
	Limit    int
}

// Query returns f as the query parameters of GET /v1/attempts.
func (f AttemptFilter) Query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("run", f.Run)
	set("agent", f.Agent)
	set("model", f.Model)
	if f.Task != "" {
		q.Add("task", f.Task)
	}
	for _, t := range f.Tasks {
		q.Add("task", t)
	}
	for _, st := range f.States {
		q.Add("state", st)
	}
	for _, p := range f.Purposes {
		q.Add("purpose", p)
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q
}

// Attempts lists attempts, newest first.
func (c *Client) Attempts(ctx context.Context, f AttemptFilter) ([]apitype.Attempt, error) {
	list, err := c.AttemptPage(ctx, f)
	return list.Attempts, err
}

// AttemptPage is Attempts with the total that match f, its limit aside.
func (c *Client) AttemptPage(ctx context.Context, f AttemptFilter) (apitype.AttemptList, error) {
	var list apitype.AttemptList
	if err := c.getJSON(ctx, endpoint("attempts"), f.Query(), &list); err != nil {
		return apitype.AttemptList{}, err
	}
	return list, nil
}

// Prune deletes the ended attempts req selects (or, req.DryRun, says
// which it would).
func (c *Client) Prune(ctx context.Context, req apitype.PruneRequest) (apitype.Prune, error) {
	var p apitype.Prune
	err := c.doJSON(ctx, http.MethodPost, endpoint("prune"), nil, req, &p)
	return p, err
}

// Attempt returns one attempt.
func (c *Client) Attempt(ctx context.Context, id string) (apitype.Attempt, error) {
	var a apitype.Attempt
	if err := checkID("attempt", id); err != nil {
		return a, err
	}
	err := c.getJSON(ctx, endpoint("attempts", id), nil, &a)
	return a, err
}

// Cancel cancels a queued or running attempt and returns it. Canceling a
// finished attempt is an error matching ErrConflict.
func (c *Client) Cancel(ctx context.Context, id string) (apitype.Attempt, error) {
	var a apitype.Attempt
	if err := checkID("attempt", id); err != nil {
		return a, err
	}
	err := c.doJSON(ctx, http.MethodPost, endpoint("attempts", id, "cancel"), nil, nil, &a)
	return a, err
}

// Retry retries each infra-error attempt of run id that no attempt
// retries yet. A run with nothing left to retry is an error matching
// ErrConflict.
func (c *Client) Retry(ctx context.Context, id string) (apitype.Retry, error) {
	var r apitype.Retry
	if err := checkID("run", id); err != nil {
		return r, err
	}
	err := c.doJSON(ctx, http.MethodPost, endpoint("runs", id, "retry"), nil, nil, &r)
	return r, err
}

// Regrade grades the attempt's stored final tree again.
func (c *Client) Regrade(ctx context.Context, id string) (apitype.Regrade, error) {
	var r apitype.Regrade
	if err := checkID("attempt", id); err != nil {
		return r, err
	}
	err := c.doJSON(ctx, http.MethodPost, endpoint("attempts", id, "regrade"), nil, nil, &r)
	return r, err
}

// Review decides an attempt whose verdict is left to review and returns
// it, reviewed and signed again. An attempt that is not in review, or was
// reviewed already, is an error matching ErrConflict; an outcome other
// than pass or fail, or an empty why, one matching ErrInvalid.
func (c *Client) Review(ctx context.Context, id string, req apitype.ReviewRequest) (apitype.Attempt, error) {
	var a apitype.Attempt
	if err := checkID("attempt", id); err != nil {
		return a, err
	}
	err := c.doJSON(ctx, http.MethodPost, endpoint("attempts", id, "review"), nil, req, &a)
	return a, err
}

// Transcript returns the agent's captured output.
func (c *Client) Transcript(ctx context.Context, id string) (apitype.Transcript, error) {
	var t apitype.Transcript
	if err := checkID("attempt", id); err != nil {
		return t, err
	}
	err := c.getJSON(ctx, endpoint("attempts", id, "transcript"), nil, &t)
	return t, err
}

// ModelLog returns the attempt's model calls through its HTTP gateways
// and their sum (while the attempt runs, the calls recorded so far).
func (c *Client) ModelLog(ctx context.Context, id string) (apitype.ModelLog, error) {
	var l apitype.ModelLog
	if err := checkID("attempt", id); err != nil {
		return l, err
	}
	err := c.getJSON(ctx, endpoint("attempts", id, "model"), nil, &l)
	return l, err
}

// ModelMessage returns model call seq's stored request (response false)
// or response: an HTTP/1.1 message as text, credentials redacted.
func (c *Client) ModelMessage(ctx context.Context, id string, seq int, response bool) ([]byte, error) {
	which := "request"
	if response {
		which = "response"
	}
	body, err := c.stream(ctx, id, "model", strconv.Itoa(seq), which)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

// stream returns the body of a GET for the caller to read and close.
func (c *Client) stream(ctx context.Context, id string, segs ...string) (io.ReadCloser, error) {
	if err := checkID("attempt", id); err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodGet, endpoint(append([]string{"attempts", id}, segs...)...), nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Journal returns the attempt's journal, JSON lines in the fsmon/journal
// format, for the caller to read and close.
func (c *Client) Journal(ctx context.Context, id string) (io.ReadCloser, error) {
	return c.stream(ctx, id, "journal")
}

// Blob returns the content blob sha of an attempt, for the caller to read
// and close. The content is as benchd sent it: a caller that relies on it
// checks its hash.
func (c *Client) Blob(ctx context.Context, id, sha string) (io.ReadCloser, error) {
	if !validSHA(sha) {
		return nil, &Error{Code: apitype.CodeInvalid, Message: fmt.Sprintf("bad blob hash %q: want 64 lowercase hex digits", sha)}
	}
	return c.stream(ctx, id, "blobs", sha)
}

// Export returns the attempt's archive (a tar, see apitype.ExportLayout)
// for the caller to read and close.
func (c *Client) Export(ctx context.Context, id string) (io.ReadCloser, error) {
	return c.stream(ctx, id, "export")
}

// Get sends GET path (an endpoint below apitype.Prefix, its segments
// escaped) with query, for a caller that hands benchd's answer on as it
// is (benchctl view): the response, for the caller to read and close,
// when its status is 2xx; else the error it describes, as every method
// returns it.
func (c *Client) Get(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	if !strings.HasPrefix(path, apitype.Prefix) || strings.ContainsAny(path, "?#") {
		return nil, &Error{Code: apitype.CodeInvalid, Message: fmt.Sprintf("bad endpoint %q: want a path below %s", path, apitype.Prefix)}
	}
	return c.do(ctx, http.MethodGet, path, query, nil)
}

// Tasks lists the daemon's task store (the bundles that load; TaskList
// has the broken ones too).
func (c *Client) Tasks(ctx context.Context) ([]apitype.TaskInfo, error) {
	list, err := c.TaskList(ctx)
	return list.Tasks, err
}

// TaskList lists the daemon's task store: its bundles, and those that do
// not load.
func (c *Client) TaskList(ctx context.Context) (apitype.TaskList, error) {
	var list apitype.TaskList
	if err := c.getJSON(ctx, endpoint("tasks"), nil, &list); err != nil {
		return apitype.TaskList{}, err
	}
	return list, nil
}

// CheckTasks runs the reference and every known attempt of task (every
// task when task is "") through the whole pipeline. It returns when the
// daemon has the answer, which takes as long as the attempts do.
func (c *Client) CheckTasks(ctx context.Context, task string) (apitype.TaskCheck, error) {
	var tc apitype.TaskCheck
	q := url.Values{}
	if task != "" {
		q.Set("task", task)
	}
	err := c.doJSON(ctx, http.MethodPost, endpoint("tasks", "check"), q, nil, &tc)
	return tc, err
}

// CheckTasksStream is CheckTasks with its progress: benchd streams an
// apitype.CheckEvent as the check starts and as each attempt ends, which
// progress is given (in the order they come; it may be nil), and the
// answer last, which CheckTasksStream returns. An "error" event is
// returned as the *Error an error response would be.
func (c *Client) CheckTasksStream(ctx context.Context, task string, progress func(apitype.CheckEvent)) (apitype.TaskCheck, error) {
	q := url.Values{"stream": {"1"}}
	if task != "" {
		q.Set("task", task)
	}
	resp, err := c.do(ctx, http.MethodPost, endpoint("tasks", "check"), q, nil)
	if err != nil {
		return apitype.TaskCheck{}, err
	}
	defer resp.Body.Close()
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		// A benchd from before the stream: its one answer.
		var tc apitype.TaskCheck
		if err := json.NewDecoder(resp.Body).Decode(&tc); err != nil {
			return tc, fmt.Errorf("unable to decode the check's answer: %w", err)
		}
		return tc, nil
	}
	sc := newLineScanner(resp.Body)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev apitype.CheckEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return apitype.TaskCheck{}, fmt.Errorf("unable to decode a check event: %w", err)
		}
		switch ev.Type {
		case apitype.CheckEnd:
			if ev.Check == nil {
				return apitype.TaskCheck{}, fmt.Errorf("the check's end event has no answer: %w", ErrInternal)
			}
			return *ev.Check, nil
		case apitype.CheckError:
			e := &Error{Status: resp.StatusCode, Code: apitype.CodeInternal, Message: "the check failed"}
			if ev.Error != nil {
				e.Code, e.Message = ev.Error.Code, ev.Error.Message
			}
			return apitype.TaskCheck{}, e
		}
		if progress != nil {
			progress(ev)
		}
	}
	if err := sc.Err(); err != nil {
		return apitype.TaskCheck{}, c.transportError(ctx, err)
	}
	if ctx.Err() != nil {
		return apitype.TaskCheck{}, ctx.Err()
	}
	return apitype.TaskCheck{}, fmt.Errorf("the check's stream ended before its answer: %w", io.ErrUnexpectedEOF)
}

// Status describes the daemon.
func (c *Client) Status(ctx context.Context) (apitype.Status, error) {
	var s apitype.Status
	err := c.getJSON(ctx, endpoint("status"), nil, &s)
	return s, err
}

// HostKey returns the public half of benchd's host key, which signs
// each ended attempt's statement.
func (c *Client) HostKey(ctx context.Context) (apitype.HostKey, error) {
	var k apitype.HostKey
	err := c.getJSON(ctx, endpoint("key"), nil, &k)
	return k, err
}

// Events opens the event stream of an attempt. The caller reads it with
// Next and closes it.
func (c *Client) Events(ctx context.Context, id string) (*EventStream, error) {
	body, err := c.stream(ctx, id, "events")
	if err != nil {
		return nil, err
	}
	return &EventStream{body: body, sc: newLineScanner(body)}, nil
}

// maxEventBytes caps one line of the event stream (the last one carries
// the whole Attempt).
const maxEventBytes = 16 << 20

func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
	return sc
}

// EventStream reads an attempt's events, one JSON object a line.
type EventStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
	done bool
	err  error
}

// Next returns the next event. After the event with Done set (which
// carries the final Attempt) it returns io.EOF. A stream that ends before
// that event is an error matching io.ErrUnexpectedEOF.
func (s *EventStream) Next() (apitype.Event, error) {
	if s.err != nil {
		return apitype.Event{}, s.err
	}
	if s.done {
		s.err = io.EOF
		return apitype.Event{}, s.err
	}
	for s.sc.Scan() {
		line := bytes.TrimSpace(s.sc.Bytes())
		if len(line) == 0 {
			continue // a keep-alive
		}
		var ev apitype.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			s.err = fmt.Errorf("bad event from benchd: %w", err)
			return apitype.Event{}, s.err
		}
		s.done = ev.Done
		return ev, nil
	}
	if err := s.sc.Err(); err != nil {
		s.err = fmt.Errorf("unable to read events: %w", err)
	} else {
		s.err = fmt.Errorf("event stream ended before the attempt did: %w", io.ErrUnexpectedEOF)
	}
	return apitype.Event{}, s.err
}

// All returns the remaining events as an iterator. It ends after the last
// event, or with the first error (never io.EOF), which it yields with a
// zero Event.
func (s *EventStream) All() iter.Seq2[apitype.Event, error] {
	return func(yield func(apitype.Event, error) bool) {
		for {
			ev, err := s.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

func validSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
