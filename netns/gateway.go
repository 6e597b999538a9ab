package netns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// gatewayDialTimeout bounds the dial of a gateway's real endpoint.
const gatewayDialTimeout = 30 * time.Second

// Bounds on what one gateway takes from the namespace, so that an agent
// cannot make the upstream fail by the number of connections it opens: a
// connection beyond MaxGatewayConns open at once is closed at once and
// counted as refused, and at most MaxGatewayDials dials to the upstream
// are in progress at once (the others wait their turn).
const (
	MaxGatewayConns = 64
	MaxGatewayDials = 4
)

// ErrUpstream: a gateway's real endpoint could not be reached. It is the
// harness's failure, never the agent's.
var ErrUpstream = errors.New("gateway upstream unreachable")

// Probe dials each raw gateway's real endpoint from the calling
// goroutine's network namespace (the host's), each within timeout, and
// closes the connection at once; an HTTP gateway (Gateway.Handler) is
// left to its handler. The first that fails gives an error wrapping
// ErrUpstream that names the gateway, its endpoint and the dial error.
func Probe(ctx context.Context, gws []Gateway, timeout time.Duration) error {
	for _, g := range gws {
		if g.Handler != nil {
			continue // an HTTP gateway's handler probes its own upstream
		}
		addr := net.JoinHostPort(g.Host, strconv.Itoa(g.Port))
		dctx, cancel := context.WithTimeout(ctx, timeout)
		var d net.Dialer
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: gateway %s: unable to reach %s: %v", ErrUpstream, g.Name, addr, err)
		}
		c.Close()
	}
	return nil
}

// gatewayProxy listens inside the namespace for one gateway and copies
// bytes, untouched, between each connection and the real endpoint, which
// it dials from the host's network namespace.
type gatewayProxy struct {
	gw     Gateway
	listen netip.AddrPort
	ln     net.Listener
	ctx    context.Context
	log    *slog.Logger
	wg     sync.WaitGroup
	dials  chan struct{} // a slot per dial in progress, MaxGatewayDials

	conns, refused, dialErrors, bytesIn, bytesOut atomic.Int64

	srv      *http.Server   // HTTP gateways
	handlers sync.WaitGroup // HTTP gateways: requests being served

	mu          sync.Mutex
	open        map[net.Conn]struct{} // both ends of every connection
	clients     int                   // connections accepted and not yet ended
	lastDialErr string
}

func (p *gatewayProxy) serve() {
	p.open = map[net.Conn]struct{}{}
	if p.gw.Handler != nil {
		p.serveHTTP()
		return
	}
	p.dials = make(chan struct{}, MaxGatewayDials)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				time.Sleep(10 * time.Millisecond) // e.g. EMFILE: do not spin
				continue
			}
			ok, closed := p.admit(c)
			if closed {
				c.Close()
				return
			}
			if !ok {
				p.refused.Add(1)
				c.Close()
				continue
			}
			p.conns.Add(1)
			p.wg.Add(1)
			go p.handle(c)
		}
	}()
}

// admit registers the accepted connection c if fewer than
// MaxGatewayConns are open; closed is true once the proxy is closed.
func (p *gatewayProxy) admit(c net.Conn) (ok, closed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open == nil {
		return false, true
	}
	if p.clients >= MaxGatewayConns {
		return false, false
	}
	p.clients++
	p.open[c] = struct{}{}
	return true, false
}

// track registers c so close can end it; false once the proxy is closed.
func (p *gatewayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open == nil {
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *gatewayProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.open, c)
	c.Close()
}

// release ends the accepted connection c and frees its place.
func (p *gatewayProxy) release(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.open, c)
	p.clients--
	c.Close()
}

// dial dials the real endpoint, at most MaxGatewayDials at once. A dial
// that fails while the proxy is still open is a dial error; one cut short
// by Close is not.
func (p *gatewayProxy) dial() (net.Conn, bool) {
	select {
	case p.dials <- struct{}{}:
	case <-p.ctx.Done():
		return nil, false
	}
	defer func() { <-p.dials }()
	ctx, cancel := context.WithTimeout(p.ctx, gatewayDialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	up, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.gw.Host, strconv.Itoa(p.gw.Port)))
	if err != nil {
		if p.ctx.Err() != nil {
			return nil, false
		}
		p.dialErrors.Add(1)
		p.mu.Lock()
		p.lastDialErr = err.Error()
		p.mu.Unlock()
		p.log.Warn("gateway dial failed", "gateway", p.gw.Name, "err", err)
		return nil, false
	}
	return up, true
}

func (p *gatewayProxy) handle(c net.Conn) {
	defer p.wg.Done()
	defer p.release(c)
	up, ok := p.dial()
	if !ok {
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(up, c, &p.bytesOut)
	}()
	pipe(c, up, &p.bytesIn)
	<-done
}

// pipe copies src to dst, counting the bytes read, then half-closes dst
// (or closes it, if it cannot be half-closed) so the peer sees the end.
func pipe(dst, src net.Conn, n *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			n.Add(int64(k))
			if _, werr := dst.Write(buf[:k]); werr != nil {
				src.Close()
				break
			}
		}
		if err != nil {
			break
		}
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		dst.Close()
	}
}

// serveHTTP serves the gateway's handler on its listener: the same
// bound on open connections as a raw gateway, bytes counted on the
// agent's side.
func (p *gatewayProxy) serveHTTP() {
	h := p.gw.Handler
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			if p.open == nil {
				p.mu.Unlock()
				http.Error(w, "the gateway is closed", http.StatusServiceUnavailable)
				return
			}
			p.handlers.Add(1)
			p.mu.Unlock()
			defer p.handlers.Done()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.srv.Serve(&boundListener{Listener: p.ln, p: p})
	}()
}

// boundListener admits at most MaxGatewayConns connections at once to
// an HTTP gateway and counts their bytes.
type boundListener struct {
	net.Listener
	p *gatewayProxy
}

func (l *boundListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ok, closed := l.p.admit(c)
		if closed {
			c.Close()
			return nil, net.ErrClosed
		}
		if !ok {
			l.p.refused.Add(1)
			c.Close()
			continue
		}
		l.p.conns.Add(1)
		return &countedConn{Conn: c, p: l.p}, nil
	}
}

// countedConn counts an HTTP gateway's bytes and frees its place once
// closed.
type countedConn struct {
	net.Conn
	p    *gatewayProxy
	once sync.Once
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.p.bytesOut.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.p.bytesIn.Add(int64(n))
	return n, err
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.p.mu.Lock()
		delete(c.p.open, c.Conn)
		c.p.clients--
		c.p.mu.Unlock()
	})
	return c.Conn.Close()
}

// close stops accepting, ends every open connection and waits.
func (p *gatewayProxy) close() {
	if p.srv != nil {
		// Closing the connections cancels the requests' contexts; the
		// handlers are waited for.
		p.mu.Lock()
		p.open = nil
		p.mu.Unlock()
		p.srv.Close()
		p.handlers.Wait()
		p.wg.Wait()
		return
	}
	p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.open = nil
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *gatewayProxy) use() GatewayUse {
	p.mu.Lock()
	last := p.lastDialErr
	p.mu.Unlock()
	return GatewayUse{
		Name: p.gw.Name, Host: p.gw.Host, Port: p.gw.Port, Listen: p.listen, HTTP: p.gw.Handler != nil,
		Conns: p.conns.Load(), Refused: p.refused.Load(),
		DialErrors: p.dialErrors.Load(), LastDialError: last,
		BytesIn: p.bytesIn.Load(), BytesOut: p.bytesOut.Load(),
	}
}
