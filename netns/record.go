package netns

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Caps on what one namespace records; beyond them only counts grow.
const (
	maxAttempts = 10000
	maxQueries  = 10000
	maxFlows    = 65536
)

// flow identifies an outbound flow, so retransmitted SYNs and further
// datagrams of a UDP flow are recorded once.
type flow struct {
	proto    uint8
	src, dst netip.AddrPort
}

// recorder keeps the attempts and questions of one namespace.
type recorder struct {
	mu              sync.Mutex
	attempts        []Attempt
	attemptsDropped int64
	queries         []Query
	queriesDropped  int64
	flows           map[flow]struct{}
	refused         neighbourhood // open mode: what the host end rejects
}

func newRecorder() *recorder {
	return &recorder{flows: map[flow]struct{}{}}
}

func (r *recorder) addQuery(q Query) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queries) >= maxQueries {
		r.queriesDropped++
		return
	}
	r.queries = append(r.queries, q)
}

// addDropped counts packets the capture lost as dropped attempts.
func (r *recorder) addDropped(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attemptsDropped += n
}

// addPacket records the outbound IPv4 or IPv6 packet pkt (from its
// network header on) if it starts a new flow to a non-loopback
// destination, and the DNS question it carries if it is a datagram to
// port 53.
func (r *recorder) addPacket(now time.Time, pkt []byte) {
	p, ok := parsePacket(pkt)
	if !ok || p.dst.Addr().Unmap().IsLoopback() {
		return
	}
	f := flow{proto: p.proto, src: p.src, dst: p.dst}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.flows[f]; seen {
		return
	}
	if len(r.flows) >= maxFlows {
		clear(r.flows)
	}
	r.flows[f] = struct{}{}
	if len(r.attempts) >= maxAttempts {
		r.attemptsDropped++
	} else {
		proto := "tcp"
		if p.proto == protoUDP {
			proto = "udp"
		}
		r.attempts = append(r.attempts, Attempt{Time: now, Proto: proto, Dst: p.dst.Addr().Unmap(), Port: p.dst.Port(), Refused: r.refused.refuses(p.dst.Addr())})
	}
	if p.proto == protoUDP && p.dst.Port() == 53 {
		if q, err := parseQuestion(p.payload); err == nil && q.flags&dnsQR == 0 {
			if len(r.queries) >= maxQueries {
				r.queriesDropped++
			} else {
				r.queries = append(r.queries, Query{Time: now, Name: q.name, Type: typeName(q.qtype), Server: p.dst, Answer: AnswerDirect})
			}
		}
	}
}

// snapshot copies the records into rep.
func (r *recorder) snapshot(rep *Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep.Attempts = slices.Clone(r.attempts)
	rep.AttemptsDropped = r.attemptsDropped
	rep.DNS = slices.Clone(r.queries)
	rep.DNSDropped = r.queriesDropped
}

const (
	protoTCP = 6
	protoUDP = 17
	tcpSYN   = 0x02
	tcpACK   = 0x10
)

// packet is what parsePacket reads of a TCP SYN or a UDP datagram.
type packet struct {
	proto    uint8
	src, dst netip.AddrPort
	payload  []byte // UDP only; may be cut short by the capture length
}

// parsePacket reads an IPv4 or IPv6 packet that is a TCP SYN (without
// ACK) or a UDP datagram. IPv6 extension headers and IPv4 fragments past
// the first are not followed.
func parsePacket(b []byte) (packet, bool) {
	if len(b) < 1 {
		return packet{}, false
	}
	var p packet
	var l4 []byte
	switch b[0] >> 4 {
	case 4:
		if len(b) < 20 {
			return packet{}, false
		}
		ihl := int(b[0]&0xf) * 4
		if ihl < 20 || len(b) < ihl || binary.BigEndian.Uint16(b[6:])&0x1fff != 0 {
			return packet{}, false
		}
		p.proto = b[9]
		src, _ := netip.AddrFromSlice(b[12:16])
		dst, _ := netip.AddrFromSlice(b[16:20])
		p.src, p.dst = netip.AddrPortFrom(src, 0), netip.AddrPortFrom(dst, 0)
		l4 = b[ihl:]
	case 6:
		if len(b) < 40 {
			return packet{}, false
		}
		p.proto = b[6]
		src, _ := netip.AddrFromSlice(b[8:24])
		dst, _ := netip.AddrFromSlice(b[24:40])
		p.src, p.dst = netip.AddrPortFrom(src, 0), netip.AddrPortFrom(dst, 0)
		l4 = b[40:]
	default:
		return packet{}, false
	}
	switch p.proto {
	case protoTCP:
		if len(l4) < 14 || l4[13]&(tcpSYN|tcpACK) != tcpSYN {
			return packet{}, false
		}
	case protoUDP:
		if len(l4) < 8 {
			return packet{}, false
		}
		p.payload = l4[8:]
	default:
		return packet{}, false
	}
	p.src = netip.AddrPortFrom(p.src.Addr(), binary.BigEndian.Uint16(l4))
	p.dst = netip.AddrPortFrom(p.dst.Addr(), binary.BigEndian.Uint16(l4[2:]))
	return p, true
}
