package netns

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DNS header flags and codes used by the stub.
const (
	dnsQR       = 1 << 15
	dnsRD       = 1 << 8
	dnsRA       = 1 << 7
	dnsOpcode   = 0xf << 11
	rcodeOK     = 0
	rcodeFormat = 1
	rcodeFail   = 2
	rcodeNX     = 3
	rcodeRefuse = 5
	typeA       = 1
	typeAAAA    = 28
	classIN     = 1
)

var errDNSFormat = errors.New("malformed DNS message")

// question is the first question of a DNS message.
type question struct {
	id     uint16
	flags  uint16
	name   string // lower case, no trailing dot; "" is the root
	qtype  uint16
	qclass uint16
	end    int // offset just past the question
}

// parseQuestion reads the header and first question of msg.
func parseQuestion(msg []byte) (question, error) {
	if len(msg) < 12 {
		return question{}, errDNSFormat
	}
	q := question{id: binary.BigEndian.Uint16(msg), flags: binary.BigEndian.Uint16(msg[2:])}
	if binary.BigEndian.Uint16(msg[4:]) < 1 {
		return q, errDNSFormat
	}
	var b strings.Builder
	off := 12
	for {
		if off >= len(msg) {
			return q, errDNSFormat
		}
		l := int(msg[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 || off+l > len(msg) || b.Len()+l+1 > 254 {
			return q, errDNSFormat // compression is not valid in a question
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		for _, c := range msg[off : off+l] {
			switch {
			case c >= 'A' && c <= 'Z':
				b.WriteByte(c + 'a' - 'A')
			case c > ' ' && c < 0x7f && c != '.' && c != '\\':
				b.WriteByte(c)
			default:
				fmt.Fprintf(&b, "\\%03d", c)
			}
		}
		off += l
	}
	if off+4 > len(msg) {
		return q, errDNSFormat
	}
	q.name = b.String()
	q.qtype = binary.BigEndian.Uint16(msg[off:])
	q.qclass = binary.BigEndian.Uint16(msg[off+2:])
	q.end = off + 4
	return q, nil
}

// typeName names a query type the way dig does.
func typeName(t uint16) string {
	switch t {
	case 1:
		return "A"
	case 2:
		return "NS"
	case 5:
		return "CNAME"
	case 6:
		return "SOA"
	case 12:
		return "PTR"
	case 15:
		return "MX"
	case 16:
		return "TXT"
	case 28:
		return "AAAA"
	case 33:
		return "SRV"
	case 64:
		return "SVCB"
	case 65:
		return "HTTPS"
	case 255:
		return "ANY"
	}
	return "TYPE" + strconv.Itoa(int(t))
}

// reply builds the answer to the query msg whose question is q: the
// header with rcode, the question echoed, and one A record per address.
func reply(msg []byte, q question, rcode int, addrs []netip.Addr) []byte {
	out := make([]byte, 12, q.end+16*len(addrs))
	binary.BigEndian.PutUint16(out, q.id)
	binary.BigEndian.PutUint16(out[2:], dnsQR|q.flags&(dnsOpcode|dnsRD)|dnsRA|uint16(rcode))
	binary.BigEndian.PutUint16(out[4:], 1)
	binary.BigEndian.PutUint16(out[6:], uint16(len(addrs)))
	out = append(out, msg[12:q.end]...)
	for _, a := range addrs {
		b := a.AsSlice()
		out = append(out, 0xc0, 12) // the name: a pointer to the question's
		out = binary.BigEndian.AppendUint16(out, q.qtype)
		out = binary.BigEndian.AppendUint16(out, classIN)
		out = binary.BigEndian.AppendUint32(out, 60)
		out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
		out = append(out, b...)
	}
	return out
}

// formErr answers a message whose question cannot be read.
func formErr(msg []byte) []byte {
	if len(msg) < 12 {
		return nil
	}
	out := make([]byte, 12)
	copy(out, msg[:2])
	binary.BigEndian.PutUint16(out[2:], dnsQR|binary.BigEndian.Uint16(msg[2:])&(dnsOpcode|dnsRD)|dnsRA|rcodeFormat)
	return out
}

// dnsStub is the resolver every namespace has at StubResolver. It
// records each question, answers a gateway's host with its loopback
// address, and either says NXDOMAIN (closed mode) or relays the question
// to the host's resolvers (open mode, forward non-nil).
type dnsStub struct {
	rec      *recorder
	gateways map[string]netip.Addr // host name -> loopback address
	local    map[string]bool       // names of the sandbox itself: localhost, its host name
	forward  *forwarder
	udp      net.PacketConn
	tcp      net.Listener
	wg       sync.WaitGroup
	ctx      context.Context

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// serve starts the stub's goroutines on its listeners.
func (s *dnsStub) serve() {
	s.conns = map[net.Conn]struct{}{}
	s.wg.Add(2)
	go s.serveUDP()
	go s.serveTCP()
}

// close stops the stub and waits for its goroutines.
func (s *dnsStub) close() {
	s.udp.Close()
	s.tcp.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// maxForwards bounds the open-mode questions relayed at once.
const maxForwards = 64

func (s *dnsStub) serveUDP() {
	defer s.wg.Done()
	sem := make(chan struct{}, maxForwards)
	buf := make([]byte, 65535)
	for {
		n, from, err := s.udp.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		msg := append([]byte(nil), buf[:n]...)
		if s.forward == nil {
			if out := s.answer(s.ctx, "udp", msg); out != nil {
				s.udp.WriteTo(out, from)
			}
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // overloaded: the client will retry
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-sem }()
			if out := s.answer(s.ctx, "udp", msg); out != nil {
				s.udp.WriteTo(out, from)
			}
		}()
	}
}

func (s *dnsStub) serveTCP() {
	defer s.wg.Done()
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			for {
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				msg, err := readTCPMsg(c)
				if err != nil {
					return
				}
				out := s.answer(s.ctx, "tcp", msg)
				if out == nil {
					return
				}
				if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(out)))); err != nil {
					return
				}
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

func readTCPMsg(r io.Reader) ([]byte, error) {
	var l [2]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	msg := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// answer records the question of msg and gives the reply to send, or nil
// to send none.
func (s *dnsStub) answer(ctx context.Context, proto string, msg []byte) []byte {
	q, err := parseQuestion(msg)
	if err != nil || q.flags&dnsQR != 0 {
		if err == nil {
			return nil // a response sent to us: ignore it
		}
		return formErr(msg)
	}
	rec := Query{Time: time.Now(), Name: q.name, Type: typeName(q.qtype), Server: StubResolver}
	if q.flags&dnsOpcode != 0 {
		rec.Answer = AnswerRefused
		s.rec.addQuery(rec)
		return reply(msg, q, rcodeRefuse, nil)
	}
	if s.local[q.name] && q.qclass == classIN {
		rec.Answer = AnswerLocal
		s.rec.addQuery(rec)
		switch q.qtype {
		case typeA:
			return reply(msg, q, rcodeOK, []netip.Addr{netip.MustParseAddr("127.0.0.1")})
		case typeAAAA:
			return reply(msg, q, rcodeOK, []netip.Addr{netip.IPv6Loopback()})
		}
		return reply(msg, q, rcodeOK, nil)
	}
	if a, ok := s.gateways[q.name]; ok && q.qclass == classIN {
		rec.Answer = AnswerGateway
		s.rec.addQuery(rec)
		if q.qtype == typeA && a.Is4() {
			return reply(msg, q, rcodeOK, []netip.Addr{a})
		}
		return reply(msg, q, rcodeOK, nil) // the name exists, without this type
	}
	if s.forward == nil {
		rec.Answer = AnswerNXDomain
		s.rec.addQuery(rec)
		return reply(msg, q, rcodeNX, nil)
	}
	out, err := s.forward.exchange(ctx, proto, msg, q.id)
	if err != nil {
		rec.Answer = AnswerFailed
		s.rec.addQuery(rec)
		return reply(msg, q, rcodeFail, nil)
	}
	rec.Answer = AnswerForwarded
	s.rec.addQuery(rec)
	return out
}

// forwarder relays raw DNS messages to upstream resolvers from the
// host's network namespace.
type forwarder struct {
	servers []netip.AddrPort
	timeout time.Duration // per server
}

// exchange sends msg to each server in turn until one answers with id.
func (f *forwarder) exchange(ctx context.Context, proto string, msg []byte, id uint16) ([]byte, error) {
	var errs []error
	for _, srv := range f.servers {
		out, err := f.exchange1(ctx, proto, srv, msg, id)
		if err == nil {
			return out, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("no upstream resolver")
	}
	return nil, errors.Join(errs...)
}

func (f *forwarder) exchange1(ctx context.Context, proto string, srv netip.AddrPort, msg []byte, id uint16) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, proto, srv.String())
	if err != nil {
		return nil, fmt.Errorf("unable to reach resolver %s: %w", srv, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	if proto == "tcp" {
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...)); err != nil {
			return nil, fmt.Errorf("resolver %s: %w", srv, err)
		}
		out, err := readTCPMsg(c)
		if err != nil {
			return nil, fmt.Errorf("resolver %s: %w", srv, err)
		}
		return out, nil
	}
	if _, err := c.Write(msg); err != nil {
		return nil, fmt.Errorf("resolver %s: %w", srv, err)
	}
	buf := make([]byte, 65535)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("resolver %s: %w", srv, err)
		}
		if n >= 12 && binary.BigEndian.Uint16(buf) == id {
			return append([]byte(nil), buf[:n]...), nil
		}
	}
}

// hostResolvers reads the nameserver lines of a resolv.conf.
func hostResolvers(conf []byte) []netip.AddrPort {
	var out []netip.AddrPort
	for _, line := range strings.Split(string(conf), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(f[1])
		if err != nil || a.Zone() != "" {
			continue
		}
		out = append(out, netip.AddrPortFrom(a.Unmap(), 53))
	}
	return out
}
