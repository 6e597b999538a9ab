package modelgw

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/scrub"
)

// Caps on what the recorder stores (see "Caps" in the package doc).
const (
	// MaxMessageBytes caps each stored request and response (head and
	// body).
	MaxMessageBytes = 8 << 20
	// MaxStoredBytes caps the stored messages of one attempt, all
	// calls together.
	MaxStoredBytes = 128 << 20
	// MaxCalls caps the calls of one attempt: a request past it is
	// refused (429) and only counted.
	MaxCalls = 20000
)

// Files in an attempt's work directory.
const (
	// LogFile holds the calls, a JSON line (apitype.ModelCall) when each
	// call starts and another when it ends.
	LogFile = "model.jsonl"
	// MessagesDir holds each call's stored request and response as
	// SEQ.request and SEQ.response.
	MessagesDir = "model"
)

// errInProgress is a started call's Error until it ends; a log read
// after a crash turns it into errCutShort.
const (
	errInProgress = "in progress"
	errCutShort   = "cut short: benchd stopped before the call ended"
)

// MessagePath is the stored request (response false) or response of
// call seq in the work directory dir.
func MessagePath(dir string, seq int, response bool) string {
	return filepath.Join(dir, MessagesDir, MessageName(seq, response))
}

// MessageName is the name of call seq's stored request or response in
// MessagesDir (SEQ.request, SEQ.response); an export's model/ uses the
// same names.
func MessageName(seq int, response bool) string {
	if response {
		return strconv.Itoa(seq) + ".response"
	}
	return strconv.Itoa(seq) + ".request"
}

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	// Dir is the attempt's work directory, benchd's (the sandbox masks
	// it): the log and messages go there.
	Dir string
	// Secrets are the attempt's --env variables: their values are
	// scrubbed from everything stored (package scrub).
	Secrets []apitype.EnvVar
	// MaxMessageBytes, MaxStoredBytes and MaxCalls override the caps
	// (0: the constants of the same names).
	MaxMessageBytes, MaxStoredBytes int64
	MaxCalls                        int
}

// Recorder writes an attempt's model calls to its work directory as
// they start and end. Its methods may be called concurrently.
type Recorder struct {
	dir               string
	scrub             scrub.Replacer
	maxMsg, maxStored int64
	maxCalls          int

	mu      sync.Mutex
	f       *os.File // nil once closed
	seq     int
	stored  int64
	dropped int64 // calls refused past maxCalls
	err     error // the first write error
}

// NewRecorder creates the log and the messages directory in cfg.Dir.
func NewRecorder(cfg RecorderConfig) (*Recorder, error) {
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = MaxMessageBytes
	}
	if cfg.MaxStoredBytes <= 0 {
		cfg.MaxStoredBytes = MaxStoredBytes
	}
	if cfg.MaxCalls <= 0 {
		cfg.MaxCalls = MaxCalls
	}
	if err := os.Mkdir(filepath.Join(cfg.Dir, MessagesDir), 0o700); err != nil {
		return nil, fmt.Errorf("unable to make the model calls' directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(cfg.Dir, LogFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("unable to create the model calls' log: %w", err)
	}
	return &Recorder{dir: cfg.Dir, scrub: scrub.New(cfg.Secrets), maxMsg: cfg.MaxMessageBytes, maxStored: cfg.MaxStoredBytes,
		maxCalls: cfg.MaxCalls, f: f}, nil
}

// Close syncs and closes the log; calls that end after it are not
// recorded. It returns the first error any write met.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return r.err
	}
	err := errors.Join(r.f.Sync(), r.f.Close())
	r.f = nil
	if r.err == nil {
		r.err = err
	}
	return r.err
}

// Dropped counts the calls refused because the attempt had MaxCalls.
func (r *Recorder) Dropped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// next gives the next call's seq, or 0 past the cap.
func (r *Recorder) next() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seq >= r.maxCalls {
		r.dropped++
		return 0
	}
	r.seq++
	return r.seq
}

// reserve takes up to n bytes of the attempt's storage, at most the
// message cap, and says how many it got.
func (r *Recorder) reserve(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = min(n, r.maxMsg, r.maxStored-r.stored)
	n = max(n, 0)
	r.stored += n
	return n
}

// writeLine appends call c to the log, its text scrubbed.
func (r *Recorder) writeLine(c *apitype.ModelCall) {
	r.scrubCall(c)
	b, err := json.Marshal(c)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil && r.err == nil {
		r.err = fmt.Errorf("unable to write the model calls' log: %w", err)
	}
}

// scrubCall scrubs every text of c that the agent or the model wrote.
func (r *Recorder) scrubCall(c *apitype.ModelCall) {
	s := r.scrub.String
	c.Path, c.Model, c.Error, c.Text = s(c.Path), s(c.Model), s(c.Error), s(c.Text)
	for i := range c.ToolCalls {
		t := &c.ToolCalls[i]
		t.ID, t.Name, t.Arguments = s(t.ID), s(t.Name), s(t.Arguments)
	}
}

// writeMessage stores message m (head and body) of call seq, cut to
// what the caps allow, scrubbed; it returns the stored text's hash and
// whether it was cut.
func (r *Recorder) writeMessage(seq int, response bool, head []byte, body []byte) (string, bool) {
	msg := make([]byte, 0, len(head)+len(body))
	msg = append(append(msg, head...), body...)
	msg = r.scrub.Bytes(msg)
	n := r.reserve(int64(len(msg)))
	cut := n < int64(len(msg))
	msg = msg[:n]
	sum := sha256.Sum256(msg)
	if err := os.WriteFile(MessagePath(r.dir, seq, response), msg, 0o600); err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = fmt.Errorf("unable to store a model call's message: %w", err)
		}
		r.mu.Unlock()
	}
	return hex.EncodeToString(sum[:]), cut
}

// Header names whose values are credentials, redacted whatever their
// value; and parts of names that mark one.
var (
	secretHeaders = map[string]bool{
		"Authorization": true, "Proxy-Authorization": true, "X-Api-Key": true, "Api-Key": true,
		"Cookie": true, "Set-Cookie": true, "X-Goog-Api-Key": true, "Openai-Organization": false,
	}
	secretWords = []string{"key", "token", "secret", "auth", "cookie", "session", "password", "credential", "signature"}
)

// Redacted replaces a credential header's value.
const Redacted = "[redacted]"

func isSecretHeader(name string) bool {
	if v, ok := secretHeaders[http.CanonicalHeaderKey(name)]; ok {
		return v
	}
	l := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// messageHead renders the start line and the headers, credentials
// redacted, in the order http.Header.Write gives (sorted), CRLF ended.
func messageHead(start string, h http.Header) []byte {
	red := http.Header{}
	for k, vs := range h {
		if isSecretHeader(k) {
			vs = slices.Repeat([]string{Redacted}, len(vs))
		}
		red[k] = vs
	}
	var b bytes.Buffer
	b.WriteString(start + "\r\n")
	red.Write(&b)
	b.WriteString("\r\n")
	return b.Bytes()
}

// ReadLog reads the calls in the log of the work directory dir, in seq
// order: each call's last line. A call that has only its start line
// (benchd stopped during it) ends as cut short; a torn last line (a
// crash mid-write) is left out. No log is no calls.
func ReadLog(dir string) ([]apitype.ModelCall, error) {
	return readLog(dir, true)
}

func readLog(dir string, ended bool) ([]apitype.ModelCall, error) {
	f, err := os.Open(filepath.Join(dir, LogFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	bySeq := map[int]apitype.ModelCall{}
	rd := bufio.NewReader(f)
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var c apitype.ModelCall
			if json.Unmarshal(line, &c) == nil && c.Seq > 0 {
				bySeq[c.Seq] = c
			}
		}
		if err != nil {
			break
		}
	}
	calls := make([]apitype.ModelCall, 0, len(bySeq))
	for _, c := range bySeq {
		if ended && c.Error == errInProgress {
			c.Error = errCutShort
			if c.ResponseSHA256 == "" {
				c.ResponseSHA256 = emptySHA256
			}
		}
		calls = append(calls, c)
	}
	slices.SortFunc(calls, func(a, b apitype.ModelCall) int { return a.Seq - b.Seq })
	return calls, nil
}

// emptySHA256 is the hash of a message never received.
var emptySHA256 = func() string { s := sha256.Sum256(nil); return hex.EncodeToString(s[:]) }()

// ReadLiveLog reads the calls of an attempt that is still running: as
// ReadLog, but a call in progress stays so.
func ReadLiveLog(dir string) ([]apitype.ModelCall, error) {
	return readLog(dir, false)
}
