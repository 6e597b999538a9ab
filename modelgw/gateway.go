package modelgw

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"benchd.dev/client/apitype"
)

// Bounds of one gateway (see "Bounds" in the package doc).
const (
	// MaxDials is how many dials to the upstream may be in progress at
	// once (netns.MaxGatewayDials, for a raw gateway).
	MaxDials = 4
	// MaxUpstreamConns caps the connections to the upstream, in use or
	// idle (netns.MaxGatewayConns bounds the agent's side).
	MaxUpstreamConns = 64
	// MaxRequestBytes caps a request's body; a larger one is refused
	// (413).
	MaxRequestBytes = 16 << 20
	// MaxPendingBytes caps the request bodies read and not yet sent
	// upstream, all connections together; a request that would pass it
	// is refused (503).
	MaxPendingBytes = 64 << 20
	// maxParseBytes caps the whole (not streamed) response kept to read
	// its usage.
	maxParseBytes = 16 << 20
	// dialTimeout bounds a dial and its TLS handshake.
	dialTimeout = 30 * time.Second
	// maxPathText caps a call's recorded path.
	maxPathText = 2048
)

// Config configures a Gateway.
type Config struct {
	Upstream Upstream
	Recorder *Recorder
	// RootCAs verify an https upstream's certificate; nil: the host's
	// roots.
	RootCAs *x509.CertPool
	Logger  *slog.Logger
}

// Gateway is an HTTP reverse proxy to one upstream that records each
// call: an http.Handler for the gateway's listener inside the
// namespace. Its methods may be called concurrently.
type Gateway struct {
	up    Upstream
	base  *url.URL
	rec   *Recorder
	log   *slog.Logger
	tr    *http.Transport
	tls   *tls.Config
	dials chan struct{}
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup

	pending, refused, dialErrors atomic.Int64

	mu          sync.Mutex
	closed      bool
	lastDialErr string
}

// New makes the gateway for cfg.Upstream.
func New(cfg Config) (*Gateway, error) {
	if cfg.Recorder == nil {
		return nil, fmt.Errorf("gateway %s: no recorder: %w", cfg.Upstream.Name, ErrInvalid)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	base, err := url.Parse(cfg.Upstream.URL())
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") {
		return nil, fmt.Errorf("gateway %s: bad upstream %q: %w", cfg.Upstream.Name, cfg.Upstream.URL(), ErrInvalid)
	}
	ctx, stop := context.WithCancel(context.Background())
	g := &Gateway{up: cfg.Upstream, base: base, rec: cfg.Recorder, ctx: ctx, stop: stop,
		log:   cfg.Logger.With("component", "modelgw", "gateway", cfg.Upstream.Name),
		dials: make(chan struct{}, MaxDials),
		tls:   tlsConfig(cfg.Upstream, cfg.RootCAs),
	}
	g.tr = &http.Transport{
		// Never a proxy from the environment: the upstream is dialed
		// as the spec says.
		Proxy:       nil,
		DialContext: func(_ context.Context, _, _ string) (net.Conn, error) { return g.dial(false) },
		DialTLSContext: func(_ context.Context, _, _ string) (net.Conn, error) {
			return g.dial(true)
		},
		MaxConnsPerHost:     MaxUpstreamConns,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return g, nil
}

// Upstream is the gateway's upstream.
func (g *Gateway) Upstream() Upstream { return g.up }

// DialErrors counts the failed dials (or TLS handshakes) to the upstream
// while the gateway was open, and says how the last one failed.
func (g *Gateway) DialErrors() (int64, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dialErrors.Load(), g.lastDialErr
}

// Refused counts the requests the gateway answered itself (see the
// package doc's "What reaches the upstream") and those past MaxCalls.
func (g *Gateway) Refused() int64 { return g.refused.Load() + g.rec.Dropped() }

// Close ends the calls in progress (each recorded, with the error that
// the attempt ended), waits for them, and closes the upstream
// connections.
func (g *Gateway) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.stop()
	g.wg.Wait()
	g.tr.CloseIdleConnections()
}

// dial connects to the upstream, at most MaxDials at once, within
// dialTimeout, with the TLS handshake for https. It is bound to the
// gateway's life, not to the request that caused it: an agent that goes
// away mid-dial does not make it fail. A failure while the gateway is
// open is a dial error.
func (g *Gateway) dial(useTLS bool) (net.Conn, error) {
	select {
	case g.dials <- struct{}{}:
	case <-g.ctx.Done():
		return nil, g.ctx.Err()
	}
	defer func() { <-g.dials }()
	ctx, cancel := context.WithTimeout(g.ctx, dialTimeout)
	defer cancel()
	c, err := g.connect(ctx, useTLS)
	if err != nil && g.ctx.Err() == nil {
		g.mu.Lock()
		g.dialErrors.Add(1)
		g.lastDialErr = err.Error()
		g.mu.Unlock()
		g.log.Warn("gateway dial failed", "err", err)
	}
	return c, err
}

func (g *Gateway) connect(ctx context.Context, useTLS bool) (net.Conn, error) {
	return connect(ctx, g.up, g.tls, useTLS)
}

// tlsConfig verifies up's certificate against roots (nil: the host's),
// HTTP/1.1 only.
func tlsConfig(up Upstream, roots *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: roots, ServerName: up.Host, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
}

func connect(ctx context.Context, up Upstream, tc *tls.Config, useTLS bool) (net.Conn, error) {
	d := net.Dialer{KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, "tcp", up.HostPort())
	if err != nil || !useTLS {
		return c, err
	}
	t := tls.Client(c, tc)
	if err := t.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS with %s: %w", up.HostPort(), err)
	}
	return t, nil
}

// Probe connects once to each upstream (TCP, and TLS for https with the
// certificate verified against roots, nil the host's), each within
// timeout, and closes the connection. The first that fails gives an
// error wrapping ErrUpstream that names the gateway and its upstream.
func Probe(ctx context.Context, ups []Upstream, roots *x509.CertPool, timeout time.Duration) error {
	for _, up := range ups {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		c, err := connect(pctx, up, tlsConfig(up, roots), up.Scheme == "https")
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: gateway %s: unable to reach %s: %v", ErrUpstream, up.Name, up.URL(), err)
		}
		c.Close()
	}
	return nil
}

// hopHeaders are the hop-by-hop headers (RFC 9110 7.6.1), never
// forwarded either way, with those a Connection header names.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// endToEnd copies h without its hop-by-hop headers.
func endToEnd(h http.Header) http.Header {
	out := h.Clone()
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range hopHeaders {
		out.Del(k)
	}
	return out
}

// call is one call in progress.
type call struct {
	c      apitype.ModelCall
	start  time.Time
	reqMsg []byte // the request's head as forwarded
}

// refusal is a request the gateway answers itself.
type refusal struct {
	status int
	why    string
}

// check refuses what must not reach the upstream (see the package doc).
func check(r *http.Request) *refusal {
	switch {
	case r.Method == http.MethodConnect:
		return &refusal{http.StatusMethodNotAllowed, "CONNECT"}
	case !strings.HasPrefix(r.RequestURI, "/") || r.URL.Host != "" || r.URL.Opaque != "":
		return &refusal{http.StatusBadRequest, "a request URI not in origin form"}
	case r.Header.Get("Upgrade") != "" || headerHas(r.Header, "Connection", "upgrade"):
		return &refusal{http.StatusBadRequest, "a protocol upgrade"}
	case r.ProtoMajor != 1:
		return &refusal{http.StatusHTTPVersionNotSupported, "not HTTP/1"}
	}
	if strings.ContainsAny(r.URL.Path, "\\\x00") || !strings.HasPrefix(r.URL.Path, "/") {
		return &refusal{http.StatusBadRequest, "a path with a backslash or NUL"}
	}
	if raw := strings.ToLower(r.URL.RawPath); strings.Contains(raw, "%2f") || strings.Contains(raw, "%5c") {
		return &refusal{http.StatusBadRequest, "an encoded slash in the path"}
	}
	for _, seg := range strings.Split(r.URL.Path[1:], "/") {
		if seg == "." || seg == ".." {
			return &refusal{http.StatusBadRequest, "a dot segment in the path"}
		}
	}
	return nil
}

func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// ServeHTTP proxies one request to the upstream and records it.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		http.Error(w, "the gateway is closed", http.StatusServiceUnavailable)
		return
	}
	g.wg.Add(1)
	g.mu.Unlock()
	defer g.wg.Done()

	seq := g.rec.next()
	if seq == 0 {
		http.Error(w, fmt.Sprintf("benchd gateway: more than %d calls in this attempt", g.rec.maxCalls), http.StatusTooManyRequests)
		return
	}
	cl := &call{start: time.Now(), c: apitype.ModelCall{Seq: seq, Gateway: g.up.Name, Time: time.Now().UTC(),
		Method: r.Method, Path: clip(r.RequestURI, maxPathText), API: apiOf(r.Method, r.URL.Path)}}
	if rf := check(r); rf != nil {
		g.refuse(w, r, cl, nil, rf)
		return
	}
	body, rf := g.readBody(r)
	defer g.pending.Add(-int64(len(body)))
	if rf != nil {
		g.refuse(w, r, cl, nil, rf)
		return
	}
	cl.c.RequestBytes = int64(len(body))
	if cl.c.API != apitype.ModelAPIOther {
		cl.c.Model, cl.c.Stream = requestFacts(body)
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(g.ctx, cancel)
	defer stop()
	out := *g.base
	out.Path = g.up.Path + r.URL.Path
	out.RawPath, out.RawQuery = "", r.URL.RawQuery
	req, err := http.NewRequestWithContext(ctx, r.Method, out.String(), bytes.NewReader(body))
	if err != nil {
		g.refuse(w, r, cl, body, &refusal{http.StatusBadRequest, err.Error()})
		return
	}
	req.Header = endToEnd(r.Header)
	req.Header.Del("Host")
	// Plain bodies, so that the recorder reads them as they pass.
	req.Header.Set("Accept-Encoding", "identity")
	req.ContentLength = int64(len(body))
	if len(body) == 0 && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		req.Body = nil
	}
	head := messageHead(fmt.Sprintf("%s %s HTTP/1.1", r.Method, out.RequestURI()),
		withHost(req.Header, out.Host, len(body), req.Body != nil))
	cl.c.RequestSHA256, cl.c.Truncated = g.rec.writeMessage(seq, false, head, body)
	started := cl.c
	started.Error = errInProgress
	g.rec.writeLine(&started)

	resp, err := g.tr.RoundTrip(req)
	if err != nil {
		why := "the upstream did not answer: " + err.Error()
		switch {
		case g.ctx.Err() != nil:
			why = "the attempt ended before the upstream answered"
		case r.Context().Err() != nil:
			why = "the agent went away before the upstream answered"
		}
		http.Error(w, "benchd gateway: "+why, http.StatusBadGateway)
		g.finish(cl, nil, nil, nil, why)
		return
	}
	defer resp.Body.Close()
	g.relay(w, r, cl, resp)
}

// withHost is h with the Host and framing headers the request goes
// upstream with, for the stored copy.
func withHost(h http.Header, host string, n int, hasBody bool) http.Header {
	h = h.Clone()
	h.Set("Host", host)
	if hasBody {
		h.Set("Content-Length", strconv.Itoa(n))
	}
	return h
}

// readBody reads the request's body, within MaxRequestBytes and the
// gateway's MaxPendingBytes; the bytes it returns stay counted as
// pending until the caller subtracts them.
func (g *Gateway) readBody(r *http.Request) ([]byte, *refusal) {
	if r.ContentLength > MaxRequestBytes {
		return nil, &refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("a body of more than %d bytes", MaxRequestBytes)}
	}
	var buf bytes.Buffer
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(chunk)
		if n > 0 {
			if buf.Len()+n > MaxRequestBytes {
				g.pending.Add(-int64(buf.Len()))
				return nil, &refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("a body of more than %d bytes", MaxRequestBytes)}
			}
			if g.pending.Add(int64(n)) > MaxPendingBytes {
				g.pending.Add(-int64(buf.Len() + n))
				return nil, &refusal{http.StatusServiceUnavailable, fmt.Sprintf("more than %d bytes of request bodies in flight", MaxPendingBytes)}
			}
			buf.Write(chunk[:n])
		}
		if err == io.EOF {
			return buf.Bytes(), nil
		}
		if err != nil {
			g.pending.Add(-int64(buf.Len()))
			return nil, &refusal{http.StatusBadRequest, "the request body could not be read: " + err.Error()}
		}
	}
}

// refuse answers the request itself and records it, with its head (and
// body, if read) as the stored request.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, cl *call, body []byte, rf *refusal) {
	g.refused.Add(1)
	head := messageHead(fmt.Sprintf("%s %s %s", r.Method, r.RequestURI, r.Proto), r.Header)
	cl.c.RequestSHA256, cl.c.Truncated = g.rec.writeMessage(cl.c.Seq, false, head, body)
	cl.c.RequestBytes = int64(len(body))
	why := "refused by the gateway: " + rf.why
	w.Header().Set("Connection", "close")
	http.Error(w, "benchd gateway: "+why, rf.status)
	g.finish(cl, nil, nil, nil, why)
}

// relay sends the upstream's response to the agent as it arrives,
// flushing after each read, and tees it to the recorder and the parser.
func (g *Gateway) relay(w http.ResponseWriter, r *http.Request, cl *call, resp *http.Response) {
	h := endToEnd(resp.Header)
	for k, vs := range h {
		w.Header()[k] = vs
	}
	if resp.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
	fl := http.NewResponseController(w)
	fl.Flush()

	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var sp *streamParser
	var whole []byte
	wholeOK := cl.c.API != apitype.ModelAPIOther && mt != "text/event-stream"
	if cl.c.API != apitype.ModelAPIOther && mt == "text/event-stream" {
		sp = newStreamParser(cl.c.API)
	}
	var stored []byte
	budget := int64(MaxMessageBytes) // refined by the recorder when stored
	var why string
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			b := buf[:n]
			cl.c.ResponseBytes += int64(n)
			if int64(len(stored)) < budget {
				stored = append(stored, b[:min(int64(n), budget-int64(len(stored)))]...)
			}
			if sp != nil {
				sp.Write(b)
			} else if wholeOK {
				if len(whole)+n <= maxParseBytes {
					whole = append(whole, b...)
				} else {
					wholeOK, whole = false, nil
				}
			}
			if _, werr := w.Write(b); werr != nil {
				why = "the agent went away during the response"
				break
			}
			fl.Flush()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			switch {
			case g.ctx.Err() != nil:
				why = "the attempt ended during the response"
			case r.Context().Err() != nil:
				why = "the agent went away during the response"
			default:
				why = "the upstream cut the response short: " + err.Error()
			}
			break
		}
	}
	var rep *reply
	switch {
	case sp != nil:
		rep = sp.result()
	case wholeOK:
		rep = parseBody(cl.c.API, whole)
	}
	if int64(len(stored)) < cl.c.ResponseBytes {
		cl.c.Truncated = true
	}
	g.finish(cl, resp, stored, rep, why)
	if why != "" && !strings.HasPrefix(why, "the agent") {
		// The agent must not take a cut response for a whole one: the
		// connection is closed without the response's end.
		panic(http.ErrAbortHandler)
	}
}

// finish records the end of the call: its response (nil: none), what
// the parser read of it, and why it ended early ("" for a whole one).
func (g *Gateway) finish(cl *call, resp *http.Response, body []byte, rep *reply, why string) {
	c := &cl.c
	c.DurationMS = time.Since(cl.start).Milliseconds()
	c.Error = why
	var head []byte
	if resp != nil {
		c.Status = resp.StatusCode
		head = messageHead(fmt.Sprintf("HTTP/1.1 %s", resp.Status), endToEnd(resp.Header))
	}
	if rep != nil {
		if rep.model != "" {
			c.Model = clip(rep.model, maxModelName)
		}
		c.Usage, c.ToolCalls, c.Text = rep.usage, rep.tools, rep.text.String()
	}
	sha, cut := g.rec.writeMessage(c.Seq, true, head, body)
	c.ResponseSHA256, c.Truncated = sha, c.Truncated || cut
	g.rec.writeLine(c)
}
