package netns

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// deadEndpoint is a loopback port that was listened on and closed:
// nothing answers there.
func deadEndpoint(t *testing.T) (string, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	return ap.Addr().String(), int(ap.Port())
}

// echoUpstream is a loopback endpoint that echoes every connection and
// counts how many it had open at most.
type echoUpstream struct {
	ln      net.Listener
	mu      sync.Mutex
	open    int
	maxOpen int
}

func newEchoUpstream(t *testing.T) *echoUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &echoUpstream{ln: ln}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.open++
			u.maxOpen = max(u.maxOpen, u.open)
			u.mu.Unlock()
			wg.Go(func() {
				io.Copy(c, c)
				c.Close()
				u.mu.Lock()
				u.open--
				u.mu.Unlock()
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return u
}

func (u *echoUpstream) gateway(name string) Gateway {
	ap := netip.MustParseAddrPort(u.ln.Addr().String())
	return Gateway{Name: name, Host: ap.Addr().String(), Port: int(ap.Port())}
}

func (u *echoUpstream) most() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.maxOpen
}

// startProxy serves gw on a loopback listener, as a namespace would
// inside, and closes it at the end of the test.
func startProxy(t *testing.T, gw Gateway) *gatewayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &gatewayProxy{gw: gw, listen: netip.MustParseAddrPort(ln.Addr().String()), ln: ln, ctx: ctx, log: slog.New(slog.DiscardHandler)}
	p.serve()
	t.Cleanup(func() { cancel(); p.close() })
	return p
}

// waitFor polls cond until it holds; the test's own timeout bounds it.
func waitFor(cond func() bool) {
	for !cond() {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProbe(t *testing.T) {
	up := newEchoUpstream(t)
	deadHost, deadPort := deadEndpoint(t)
	live := up.gateway("live")
	dead := Gateway{Name: "model", Host: deadHost, Port: deadPort}
	deadAddr := net.JoinHostPort(deadHost, strconv.Itoa(deadPort))
	tests := []struct {
		name string
		gws  []Gateway
		want []string // in the error; none: no error
	}{
		{"none", nil, nil},
		{"live", []Gateway{live}, nil},
		{"dead", []Gateway{dead}, []string{"gateway model", deadAddr, "connection refused"}},
		{"dead after live", []Gateway{live, dead}, []string{"gateway model", deadAddr}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Probe(context.Background(), tt.gws, 5*time.Second)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if !errors.Is(err, ErrUpstream) {
				t.Fatalf("got %v, want an error wrapping ErrUpstream", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to say %q", err, w)
				}
			}
		})
	}
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := Probe(ctx, []Gateway{dead}, 5*time.Second); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUpstream) {
			t.Fatalf("got %v, want context.Canceled and no upstream error", err)
		}
	})
}

func TestGatewayDialErrors(t *testing.T) {
	host, port := deadEndpoint(t)
	p := startProxy(t, Gateway{Name: "model", Host: host, Port: port})
	for i := range 3 {
		c, err := net.Dial("tcp", p.listen.String())
		if err != nil {
			t.Fatal(err)
		}
		// The proxy closes the connection once its dial has failed.
		if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
			t.Fatalf("connection %d: got %d bytes, %v; want an empty stream", i, n, err)
		}
		c.Close()
	}
	u := p.use()
	if u.DialErrors != 3 || u.Refused != 0 || u.Conns != 3 {
		t.Errorf("got %d dial errors, %d refused, %d conns; want 3, 0, 3", u.DialErrors, u.Refused, u.Conns)
	}
	if !strings.Contains(u.LastDialError, "connection refused") {
		t.Errorf("got last dial error %q, want it to say connection refused", u.LastDialError)
	}
}

// TestGatewayFlood is an agent that opens far more connections than the
// gateway takes, holds them, then churns: connections past the bound are
// refused, the upstream never sees more than the bound, and no dial
// fails, so the flood cannot pass for an upstream failure.
func TestGatewayFlood(t *testing.T) {
	up := newEchoUpstream(t)
	p := startProxy(t, up.gateway("model"))
	const flood = 600
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range flood {
		c, err := net.Dial("tcp", p.listen.String())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		held = append(held, c)
	}
	waitFor(func() bool { u := p.use(); return u.Conns+u.Refused == flood })
	u := p.use()
	if u.Conns != MaxGatewayConns || u.Refused != flood-MaxGatewayConns {
		t.Errorf("got %d served, %d refused; want %d, %d", u.Conns, u.Refused, MaxGatewayConns, flood-MaxGatewayConns)
	}
	for _, c := range held {
		c.Close()
	}
	held = nil
	waitFor(func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.clients == 0 })

	// Churn: connect and hang up at once, many times over.
	for i := range flood {
		c, err := net.Dial("tcp", p.listen.String())
		if err != nil {
			t.Fatalf("churn %d: %v", i, err)
		}
		c.Close()
	}
	waitFor(func() bool { u := p.use(); return u.Conns+u.Refused == 2*flood })
	waitFor(func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.clients == 0 })

	// The gateway still serves.
	c, err := net.Dial("tcp", p.listen.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("got %q, %v through the gateway after the flood; want hello", buf, err)
	}
	u = p.use()
	if u.DialErrors != 0 || u.LastDialError != "" {
		t.Errorf("got %d dial errors (%q) after the flood, want none", u.DialErrors, u.LastDialError)
	}
	if m := up.most(); m > MaxGatewayConns {
		t.Errorf("got %d connections open at once at the upstream, want at most %d", m, MaxGatewayConns)
	}
}
