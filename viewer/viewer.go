// Package viewer serves the web page of benchctl view: benchd's attempts,
// one attempt as a timeline, two attempts side by side and the
// scorecard, in the operator's browser, read from benchd's socket.
//
// # What it serves
//
// One listener on a loopback address (Config.Listen; any other address
// is refused) serves:
//
//   - the page: /, /app.js and /app.css, embedded in the binary; the
//     page loads nothing else, from anywhere (no CDN, font or network);
//     and /continue.js, the token exchange's script, the one file served
//     without a session (static: it sends the browser on to / with the
//     link's #route);
//   - GET /api/v1/...: a fixed list of benchd's read-only endpoints
//     (Forwarded), passed to benchd's socket with the path's values
//     checked and the query's names too; the answer comes back as benchd
//     gave it, or as an apitype.Error;
//   - GET /view/NAME: the derived views of Config.Views (the scorecard,
//     the diff, the journal with its chain checked...), computed by
//     benchctl with the code of the command that prints the same thing,
//     as JSON.
//
// Nothing else is reachable: no method but GET (and HEAD), no endpoint
// that changes anything (cancel, prune, review, regrade, runs, checks),
// no stream that stays open.
//
// # Who may read it
//
// Every local user can reach a loopback port, while benchd's socket
// admits only root and group benchd: the viewer must not open the
// socket to the others. Server.URL is the page's address with a
// one-time token (32 random bytes). The first request that carries it gets a session
// cookie (32 random bytes, HttpOnly, SameSite=Strict, named after the
// port) and the token stops working; every other request needs that
// cookie. The Host header must be the listener's address or
// localhost:PORT, so that a page of another site whose name was made to
// resolve to 127.0.0.1 (DNS rebinding) is refused; the data endpoints
// also refuse requests a browser marks as sent by another site
// (Sec-Fetch-Site), even another port of 127.0.0.1.
//
// # What it trusts
//
// Its Config (the command line of the operator who started it) and
// benchd, as far as where benchd's answers go: a socket only root and
// group benchd reach. Nothing of what it shows: transcripts, file paths and contents of
// journals, model text, tool calls and their arguments, agent names
// and arguments are the agent's or its operator's, and any of them may
// be markup or script made to run in the browser. The page renders
// every value as text (DOM text nodes; no HTML is ever parsed from
// data), builds its links only from its own routes with the values
// escaped, and shows a scorecard's plot, which draw writes as SVG, as an
// image, where nothing runs. Behind that, each response says what the
// browser may do: the page's Content-Security-Policy allows scripts,
// styles, images and fetches from the page's own origin only (images
// also as data: URLs, the plot's; no inline script, no eval) and requires Trusted Types with no policy, so no
// string can reach an HTML sink even by mistake; data responses are
// sandboxed with nothing allowed, served with nosniff, no-store and
// no-referrer; blobs are attachments.
package viewer

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
)

// DefaultListen is the address Config.Listen defaults to: a port the
// kernel picks on 127.0.0.1.
const DefaultListen = "127.0.0.1:0"

// ErrNotLoopback is the error of a Config.Listen that is not a loopback
// address.
var ErrNotLoopback = errors.New("not a loopback address")

// ErrBadQuery is the class of a View's error that is the query's fault:
// the view answers 400 with its message.
var ErrBadQuery = errors.New("bad query")

// A View computes a derived view from its query (the page's parameters,
// names and values not checked by the server: the View checks them,
// wrapping its refusals in ErrBadQuery). Its value is sent as JSON.
type View func(ctx context.Context, query url.Values) (any, error)

// Config configures a Server.
type Config struct {
	// Listen is HOST:PORT, HOST an IP address that is a loopback
	// address; port 0 lets the kernel pick one. "" is DefaultListen.
	Listen string
	// API reaches benchd.
	API *client.Client
	// Views are served at GET /view/NAME.
	Views map[string]View
	// Logger gets a line per refused request; nil discards them.
	Logger *slog.Logger
}

// Forwarded are the endpoints of benchd the page may read, as the
// viewer serves them (each is benchd's below /api): all GET, none that
// changes anything.
var Forwarded = []string{
	"GET /api/v1/status",
	"GET /api/v1/tasks",
	"GET /api/v1/runs/{run}",
	"GET /api/v1/runs/{run}/status",
	"GET /api/v1/attempts",
	"GET /api/v1/attempts/{id}",
	"GET /api/v1/attempts/{id}/journal",
	"GET /api/v1/attempts/{id}/blobs/{sha}",
	"GET /api/v1/attempts/{id}/transcript",
	"GET /api/v1/attempts/{id}/model",
	"GET /api/v1/attempts/{id}/model/{seq}/request",
	"GET /api/v1/attempts/{id}/model/{seq}/response",
}

// attemptsQuery are the names GET /api/v1/attempts passes on: the
// filters of apitype's package doc and limit.
var attemptsQuery = []string{"run", "task", "agent", "model", "state", "purpose", "since", "until", "limit"}

// Path values, checked before anything is sent to benchd: an id (an
// attempt's, a prefix of one, "latest", a run's), a blob's hash, a
// model call's number.
var (
	idValue  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)
	shaValue = regexp.MustCompile(`^[0-9a-f]{64}$`)
	seqValue = regexp.MustCompile(`^[1-9][0-9]{0,8}$`)
)

//go:embed page
var page embed.FS

// The page's files and their types.
var pageFiles = map[string]struct{ file, typ string }{
	"/":        {"page/index.html", "text/html; charset=utf-8"},
	"/app.js":  {"page/app.js", "text/javascript; charset=utf-8"},
	"/app.css": {"page/app.css", "text/css; charset=utf-8"},
	// continue.js sends the token exchange's page on to the viewer with
	// the route the link named (its #fragment, which no server sees).
	"/continue.js": {"page/continue.js", "text/javascript; charset=utf-8"},
}

// Security headers. pageCSP is the page's policy; dataCSP that of
// everything else, which is data and never a document.
const (
	pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
		"require-trusted-types-for 'script'; trusted-types 'none'"
	dataCSP = "default-src 'none'; sandbox; frame-ancestors 'none'"
)

// Server is one viewer: its listener, token and session.
type Server struct {
	cfg    Config
	log    *slog.Logger
	ln     net.Listener
	hosts  []string // the Host headers accepted
	cookie string   // the session cookie's name
	token  string
	mux    *http.ServeMux

	mu      sync.Mutex
	session string // the session cookie's value once the token was exchanged, "" before
}

// New checks cfg and listens on its address.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.API == nil {
		return nil, errors.New("viewer: no API client")
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %s: want HOST:PORT: %w", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen address %s: %w: the viewer shows benchd's records to whoever reaches it, so it listens on 127.0.0.1 or ::1 only", cfg.Listen, ErrNotLoopback)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("unable to listen on %s: %w", cfg.Listen, err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	port := fmt.Sprint(addr.Port)
	s := &Server{
		cfg:    cfg,
		log:    cfg.Logger,
		ln:     ln,
		hosts:  []string{net.JoinHostPort(addr.IP.String(), port), "localhost:" + port},
		cookie: "benchctl_view_" + port,
		token:  randomHex(),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux = http.NewServeMux()
	for _, p := range Forwarded {
		s.mux.HandleFunc(p, s.forward)
	}
	s.mux.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, apitype.CodeNotFound, "the viewer does not forward "+r.URL.Path)
	})
	s.mux.HandleFunc("GET /view/{name}", s.view)
	s.mux.HandleFunc("GET /{file...}", s.page)
	return s, nil
}

// randomHex is 32 random bytes in hex, never "": an empty session is
// how exchange knows the token was not used yet.
func randomHex() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.hosts[0] }

// URL is the page's address with the one-time token.
func (s *Server) URL() string { return "http://" + s.Addr() + "/?token=" + s.token }

// Serve serves until ctx ends, then stops; it returns nil then.
func (s *Server) Serve(ctx context.Context) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(s.ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}

// ServeHTTP checks every request (method, Host, session) before the
// routes see it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Content-Security-Policy", dataCSP)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		s.refuse(w, r, http.StatusMethodNotAllowed, "the viewer only reads: "+r.Method+" is refused")
		return
	}
	if !s.hostOK(r.Host) {
		s.refuse(w, r, http.StatusMisdirectedRequest, "wrong Host "+r.Host+": the viewer answers to "+s.hosts[0])
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/" && r.URL.Query().Has("token") {
		s.exchange(w, r)
		return
	}
	if !s.sessionOK(r) && r.URL.Path != "/continue.js" { // the exchange's own script, static
		s.refuse(w, r, http.StatusForbidden, "no session: open the URL benchctl view printed (its token works once; start benchctl view again for another)")
		return
	}
	if data := strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/view/"); data {
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
			s.refuse(w, r, http.StatusForbidden, "a request from another site ("+site+") is refused")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) hostOK(host string) bool {
	for _, h := range s.hosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}

func (s *Server) sessionOK(r *http.Request) bool {
	c, err := r.Cookie(s.cookie)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) == 1
}

// exchange trades the token, once, for the session cookie, and sends the
// browser on to the page (a navigation from this page, not a redirect, so
// that the SameSite=Strict cookie goes with it even when the link was
// opened from another site). The navigation keeps the link's route
// (#/attempt/ID): continue.js replaces the location with "/" and the
// fragment, which only the browser knows; without scripts a refresh goes
// to "/". A browser that has the session already is sent on too.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request) {
	given := r.URL.Query().Get("token")
	s.mu.Lock()
	ok := s.session == "" && subtle.ConstantTimeCompare([]byte(given), []byte(s.token)) == 1
	if ok {
		s.session = randomHex()
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	s.mu.Unlock()
	if !ok && !s.sessionOK(r) {
		s.refuse(w, r, http.StatusForbidden, "this link was used already, or is not this viewer's: its token works once (start benchctl view again for another)")
		return
	}
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><script src="/continue.js"></script><noscript><meta http-equiv="refresh" content="0; url=/"></noscript><title>benchd</title></head><body><p><a href="/">Continue to the viewer</a></p></body></html>`)
}

// refuse answers a refused request: its status, and why as text.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	s.log.Info("refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "status", status, "why", why)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, why+"\n")
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	f, ok := pageFiles[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := page.ReadFile(f.file)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Content-Type", f.typ)
	w.Write(b)
}

// forward passes a request of Forwarded to benchd, its path values
// checked and escaped, and benchd's answer back.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.TrimPrefix(r.Pattern, "GET /api/"), "/")
	for i, seg := range segs {
		name, ok := strings.CutPrefix(seg, "{")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, "}")
		v := r.PathValue(name)
		re := idValue
		switch name {
		case "sha":
			re = shaValue
		case "seq":
			re = seqValue
		}
		if !re.MatchString(v) {
			writeError(w, http.StatusBadRequest, apitype.CodeInvalid, fmt.Sprintf("bad %s %q", name, v))
			return
		}
		segs[i] = url.PathEscape(v)
	}
	var query url.Values
	if r.Pattern == "GET /api/v1/attempts" {
		query = url.Values{}
		for k, vs := range r.URL.Query() {
			if !slices.Contains(attemptsQuery, k) {
				writeError(w, http.StatusBadRequest, apitype.CodeInvalid, fmt.Sprintf("bad parameter %q: want one of %s", k, strings.Join(attemptsQuery, ", ")))
				return
			}
			query[k] = vs
		}
	} else if r.URL.RawQuery != "" {
		writeError(w, http.StatusBadRequest, apitype.CodeInvalid, r.URL.Path+" takes no parameters")
		return
	}
	resp, err := s.cfg.API.Get(r.Context(), "/"+strings.Join(segs, "/"), query)
	if err != nil {
		writeErrorOf(w, err)
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	h.Set("Content-Type", forwardedType(resp.Header.Get("Content-Type")))
	if strings.Contains(r.Pattern, "/blobs/") {
		h.Set("Content-Disposition", "attachment")
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" {
		h.Set("Content-Length", cl)
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// forwardedType is the Content-Type the viewer gives benchd's answer:
// the types benchd sends, anything else as bytes.
func forwardedType(ct string) string {
	base, _, _ := strings.Cut(ct, ";")
	switch strings.TrimSpace(strings.ToLower(base)) {
	case "application/json":
		return "application/json"
	case "application/x-ndjson", "application/jsonl":
		return "application/x-ndjson"
	case "text/plain":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// view serves one of Config.Views.
func (s *Server) view(w http.ResponseWriter, r *http.Request) {
	v, ok := s.cfg.Views[r.PathValue("name")]
	if !ok {
		writeError(w, http.StatusNotFound, apitype.CodeNotFound, "no view "+r.PathValue("name"))
		return
	}
	res, err := v(r.Context(), r.URL.Query())
	if err != nil {
		writeErrorOf(w, err)
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		writeError(w, http.StatusInternalServerError, apitype.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// writeErrorOf answers err as an apitype.Error of its class.
func writeErrorOf(w http.ResponseWriter, err error) {
	var ce *client.Error
	switch {
	case errors.Is(err, ErrBadQuery):
		writeError(w, http.StatusBadRequest, apitype.CodeInvalid, err.Error())
	case errors.As(err, &ce) && ce.Status != 0:
		code := ce.Code
		if code == "" {
			code = apitype.CodeInternal
		}
		writeError(w, ce.Status, code, ce.Error())
	case errors.Is(err, client.ErrNotFound):
		writeError(w, http.StatusNotFound, apitype.CodeNotFound, err.Error())
	case errors.Is(err, client.ErrInvalid):
		writeError(w, http.StatusBadRequest, apitype.CodeInvalid, err.Error())
	case errors.Is(err, client.ErrNotRunning), errors.Is(err, client.ErrForbidden):
		writeError(w, http.StatusBadGateway, apitype.CodeInternal, err.Error())
	case errors.Is(err, context.Canceled):
		// the browser left
	default:
		writeError(w, http.StatusInternalServerError, apitype.CodeInternal, err.Error())
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apitype.Error{Code: code, Message: msg})
}
