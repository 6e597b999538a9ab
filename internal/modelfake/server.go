package modelfake

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody bounds a request body.
const maxBody = 64 << 20

// Config configures a Server.
type Config struct {
	Script *Script
	// Log receives one JSON line per request (Entry); nil: none.
	Log io.Writer
	// Logger gets errors; nil discards them.
	Logger *slog.Logger
}

// Entry is the log record of one request.
type Entry struct {
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	API    string    `json:"api"` // responses, chat, messages, count_tokens, models, unknown
	Model  string    `json:"model,omitempty"`
	Stream bool      `json:"stream"`
	Tools  []string  `json:"tools"`
	Turn   int       `json:"turn"`
	// Result is the start of the last tool result in the history, so a
	// failing tool call shows in the log.
	Result string `json:"result,omitempty"`
	Answer string `json:"answer"` // tool:NAME, text, hang, or error: ...
	Status int    `json:"status"`
}

// Server answers model API requests from a script. It is an
// http.Handler; Close releases requests a hanging script holds.
type Server struct {
	script *Script
	log    *slog.Logger
	ids    atomic.Int64
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	out     io.Writer
	entries []Entry
}

// New makes a server for cfg.Script, which it validates.
func New(cfg Config) (*Server, error) {
	if cfg.Script == nil {
		return nil, fmt.Errorf("%w: no script", ErrInvalid)
	}
	if err := cfg.Script.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{script: cfg.Script, log: cfg.Logger.With("component", "modelfake"), out: cfg.Log, closed: make(chan struct{})}, nil
}

// Close ends every request held by a hanging script.
func (s *Server) Close() { s.once.Do(func() { close(s.closed) }) }

// Requests returns the log entries so far.
func (s *Server) Requests() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.entries...)
}

func (s *Server) record(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, e)
	if s.out != nil {
		b, _ := json.Marshal(e)
		if _, err := s.out.Write(append(b, '\n')); err != nil {
			s.log.Error("unable to write the request log", "err", err)
		}
	}
}

func (s *Server) id(prefix string) string {
	return fmt.Sprintf("%s_%06d", prefix, s.ids.Add(1))
}

// request is what the server needs from a request, whatever the API.
type request struct {
	Model       string
	Stream      bool
	Tools       []Tool
	ToolResults int
	LastResult  string
	Usage       bool // chat: stream_options.include_usage
	size        int
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := Entry{Time: time.Now().UTC(), Method: r.Method, Path: r.URL.Path, Tools: []string{}, Status: http.StatusOK}
	defer func() { s.record(e) }()
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(p, "/responses"):
		e.API = "responses"
	case strings.HasSuffix(p, "/chat/completions"):
		e.API = "chat"
	case strings.HasSuffix(p, "/messages/count_tokens"):
		e.API = "count_tokens"
	case strings.HasSuffix(p, "/messages"):
		e.API = "messages"
	case strings.HasSuffix(p, "/models") && r.Method == http.MethodGet:
		e.API = "models"
	default:
		e.API = "unknown"
	}
	if e.API == "models" {
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
		e.Answer = "models"
		return
	}
	if e.API == "unknown" || r.Method != http.MethodPost {
		e.Status, e.Answer = http.StatusNotFound, "error: no such endpoint"
		http.Error(w, `{"error":{"type":"not_found","message":"no such endpoint"}}`, e.Status)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		e.Status, e.Answer = http.StatusBadRequest, "error: "+err.Error()
		http.Error(w, err.Error(), e.Status)
		return
	}
	var req request
	switch e.API {
	case "responses":
		req, err = parseResponses(body)
	case "chat":
		req, err = parseChat(body)
	default:
		req, err = parseMessages(body)
	}
	if err != nil {
		e.Status, e.Answer = http.StatusBadRequest, "error: "+err.Error()
		http.Error(w, fmt.Sprintf(`{"error":{"type":"invalid_request_error","message":%q}}`, err.Error()), e.Status)
		return
	}
	req.size = len(body)
	e.Model, e.Stream, e.Turn = req.Model, req.Stream, req.ToolResults
	e.Result = clip(req.LastResult, 400)
	for _, t := range req.Tools {
		e.Tools = append(e.Tools, t.Name)
	}
	if e.API == "count_tokens" {
		writeJSON(w, map[string]any{"input_tokens": tokens(req.size)})
		e.Answer = "count_tokens"
		return
	}
	if s.script.Hang {
		e.Answer = "hang"
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		return
	}
	act := action{text: s.script.final()}
	if len(req.Tools) > 0 {
		acts, err := s.script.plan(req.Tools)
		if err != nil {
			e.Status, e.Answer = http.StatusBadRequest, "error: "+err.Error()
			s.log.Error("unable to plan the session", "err", err)
			http.Error(w, fmt.Sprintf(`{"error":{"type":"invalid_request_error","message":%q}}`, err.Error()), e.Status)
			return
		}
		act = acts[min(req.ToolResults, len(acts)-1)]
	}
	e.Answer = act.String()
	switch e.API {
	case "responses":
		s.answerResponses(w, req, act)
	case "chat":
		s.answerChat(w, req, act)
	default:
		s.answerMessages(w, req, act)
	}
}

// tokens is a rough token count for n bytes.
func tokens(n int) int { return n/4 + 1 }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(v)
	w.Write(b)
}

// sse writes server-sent events and flushes each one.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; name may be empty (Chat Completions has none).
func (s *sse) event(name string, v any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sse) done() {
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	if s.f != nil {
		s.f.Flush()
	}
}

// clip shortens s to n bytes at most.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// resultText is the text of a tool result's content: a string, or the
// text fields of a list of parts.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}
