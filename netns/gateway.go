package netns

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// gatewayDialTimeout bounds the dial of a gateway's real endpoint.
const gatewayDialTimeout = 30 * time.Second

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

	conns, dialErrors, bytesIn, bytesOut atomic.Int64

	mu   sync.Mutex
	open map[net.Conn]struct{}
}

func (p *gatewayProxy) serve() {
	p.open = map[net.Conn]struct{}{}
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
			p.conns.Add(1)
			if !p.track(c) {
				c.Close()
				return
			}
			p.wg.Add(1)
			go p.handle(c)
		}
	}()
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

func (p *gatewayProxy) handle(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	ctx, cancel := context.WithTimeout(p.ctx, gatewayDialTimeout)
	d := net.Dialer{KeepAlive: 30 * time.Second}
	up, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.gw.Host, strconv.Itoa(p.gw.Port)))
	cancel()
	if err != nil {
		p.dialErrors.Add(1)
		p.log.Warn("gateway dial failed", "gateway", p.gw.Name, "err", err)
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

// close stops accepting, ends every open connection and waits.
func (p *gatewayProxy) close() {
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
	return GatewayUse{
		Name: p.gw.Name, Host: p.gw.Host, Port: p.gw.Port, Listen: p.listen,
		Conns: p.conns.Load(), DialErrors: p.dialErrors.Load(),
		BytesIn: p.bytesIn.Load(), BytesOut: p.bytesOut.Load(),
	}
}
