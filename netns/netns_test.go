package netns

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestParseGateway(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Gateway
		err  bool
	}{
		{"host name", "model=api.example.com:443", Gateway{Name: "model", Host: "api.example.com", Port: 443}, false},
		{"upper case host", "m=API.Example.COM:8080", Gateway{Name: "m", Host: "api.example.com", Port: 8080}, false},
		{"trailing dot", "m=api.example.com.:443", Gateway{Name: "m", Host: "api.example.com", Port: 443}, false},
		{"ipv4", "echo=127.0.0.1:7", Gateway{Name: "echo", Host: "127.0.0.1", Port: 7}, false},
		{"ipv6", "v6=[2001:db8::1]:443", Gateway{Name: "v6", Host: "2001:db8::1", Port: 443}, false},
		{"dots and dashes in name", "a.b-c_d=h:1", Gateway{Name: "a.b-c_d", Host: "h", Port: 1}, false},
		{"no equals", "api.example.com:443", Gateway{}, true},
		{"empty name", "=h:1", Gateway{}, true},
		{"upper case name", "Model=h:1", Gateway{}, true},
		{"no port", "m=h", Gateway{}, true},
		{"port zero", "m=h:0", Gateway{}, true},
		{"port too big", "m=h:65536", Gateway{}, true},
		{"port not a number", "m=h:https", Gateway{}, true},
		{"empty host", "m=:443", Gateway{}, true},
		{"bad label", "m=-bad.example:443", Gateway{}, true},
		{"underscore host", "m=a_b.example:443", Gateway{}, true},
		{"unbracketed ipv6", "m=2001:db8::1:443", Gateway{}, true},
		{"unspecified address", "m=0.0.0.0:80", Gateway{}, true},
		{"zone", "m=[fe80::1%eth0]:80", Gateway{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGateway(tt.in)
			if tt.err {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("ParseGateway(%q) = %+v, %v; want an ErrInvalid", tt.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseGateway(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseGateway(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			again, err := ParseGateway(got.String())
			if err != nil || again != got {
				t.Fatalf("round trip of %q: got %+v, %v", got.String(), again, err)
			}
		})
	}
}

// dnsQuery builds a standard query for name with type qtype.
func dnsQuery(id uint16, name string, qtype uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = append(b, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) // RD, one question
	for _, l := range splitLabels(name) {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	b = append(b, 0)
	b = binary.BigEndian.AppendUint16(b, qtype)
	return binary.BigEndian.AppendUint16(b, classIN)
}

func splitLabels(name string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if i > start {
				out = append(out, name[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// dnsAnswer reads the rcode and the A records of a reply to id.
func dnsAnswer(t *testing.T, msg []byte, id uint16) (rcode int, addrs []netip.Addr) {
	t.Helper()
	q, err := parseQuestion(msg)
	if err != nil {
		t.Fatalf("reply does not parse: %v", err)
	}
	if q.id != id || q.flags&dnsQR == 0 {
		t.Fatalf("reply id %d flags %#x, want id %d and QR", q.id, q.flags, id)
	}
	an := int(binary.BigEndian.Uint16(msg[6:]))
	off := q.end
	for range an {
		if msg[off]&0xc0 != 0xc0 {
			t.Fatalf("answer name is not a pointer")
		}
		off += 2
		typ := binary.BigEndian.Uint16(msg[off:])
		l := int(binary.BigEndian.Uint16(msg[off+8:]))
		off += 10
		if typ == typeA && l == 4 {
			a, _ := netip.AddrFromSlice(msg[off : off+4])
			addrs = append(addrs, a)
		}
		off += l
	}
	return int(q.flags & 0xf), addrs
}

func TestDNSMessages(t *testing.T) {
	tests := []struct {
		name     string
		msg      []byte
		wantName string
		wantType string
		err      bool
	}{
		{"a", dnsQuery(1, "Example.Invalid", typeA), "example.invalid", "A", false},
		{"aaaa", dnsQuery(2, "example.invalid.", typeAAAA), "example.invalid", "AAAA", false},
		{"https", dnsQuery(3, "x.y", 65), "x.y", "HTTPS", false},
		{"unknown type", dnsQuery(4, "x.y", 999), "x.y", "TYPE999", false},
		{"root", dnsQuery(5, "", 2), "", "NS", false},
		{"odd byte", dnsQuery(6, "a\x01b", typeA), `a\001b`, "A", false},
		{"short header", []byte{1, 2, 3}, "", "", true},
		{"no question", []byte{0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "", "", true},
		{"truncated name", dnsQuery(7, "example.invalid", typeA)[:20], "", "", true},
		{"compression pointer", append([]byte{0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}, 0xc0, 12, 0, 1, 0, 1), "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseQuestion(tt.msg)
			if tt.err {
				if err == nil {
					t.Fatalf("parseQuestion = %+v, want an error", q)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if q.name != tt.wantName || typeName(q.qtype) != tt.wantType {
				t.Fatalf("got %q %s, want %q %s", q.name, typeName(q.qtype), tt.wantName, tt.wantType)
			}
		})
	}
	t.Run("reply", func(t *testing.T) {
		msg := dnsQuery(77, "api.example.test", typeA)
		q, _ := parseQuestion(msg)
		a := netip.MustParseAddr("127.0.1.3")
		rc, addrs := dnsAnswer(t, reply(msg, q, rcodeOK, []netip.Addr{a}), 77)
		if rc != rcodeOK || len(addrs) != 1 || addrs[0] != a {
			t.Fatalf("got rcode %d, %v; want 0, [%v]", rc, addrs, a)
		}
		rc, addrs = dnsAnswer(t, reply(msg, q, rcodeNX, nil), 77)
		if rc != rcodeNX || len(addrs) != 0 {
			t.Fatalf("got rcode %d, %v; want 3, none", rc, addrs)
		}
	})
}

func TestStubAnswers(t *testing.T) {
	gw := netip.MustParseAddr("127.0.1.1")
	tests := []struct {
		name       string
		msg        []byte
		wantRcode  int
		wantAddrs  int
		wantAnswer string
	}{
		{"gateway a", dnsQuery(1, "API.example.test", typeA), rcodeOK, 1, AnswerGateway},
		{"gateway aaaa", dnsQuery(2, "api.example.test", typeAAAA), rcodeOK, 0, AnswerGateway},
		{"other name", dnsQuery(3, "pypi.org", typeA), rcodeNX, 0, AnswerNXDomain},
		{"localhost", dnsQuery(5, "localhost", typeA), rcodeOK, 1, AnswerLocal},
		{"own host name", dnsQuery(6, "Box", typeA), rcodeOK, 1, AnswerLocal},
		{"not a query", func() []byte { m := dnsQuery(4, "x", typeA); m[2] |= 0x28; return m }(), rcodeRefuse, 0, AnswerRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &dnsStub{rec: newRecorder(), gateways: map[string]netip.Addr{"api.example.test": gw}, local: map[string]bool{"localhost": true, "box": true}}
			out := s.answer(t.Context(), "udp", tt.msg)
			id := binary.BigEndian.Uint16(tt.msg)
			rc, addrs := dnsAnswer(t, out, id)
			if rc != tt.wantRcode || len(addrs) != tt.wantAddrs {
				t.Fatalf("got rcode %d, %v; want %d with %d addresses", rc, addrs, tt.wantRcode, tt.wantAddrs)
			}
			want := gw
			if tt.wantAnswer == AnswerLocal {
				want = netip.MustParseAddr("127.0.0.1")
			}
			if tt.wantAddrs == 1 && addrs[0] != want {
				t.Fatalf("got %v, want %v", addrs[0], want)
			}
			var r Report
			s.rec.snapshot(&r)
			if len(r.DNS) != 1 || r.DNS[0].Answer != tt.wantAnswer || r.DNS[0].Server != StubResolver {
				t.Fatalf("recorded %+v, want one query answered %q by the stub", r.DNS, tt.wantAnswer)
			}
		})
	}
}

// ipv4Packet builds an IPv4 packet carrying l4.
func ipv4Packet(proto byte, src, dst string, frag uint16, l4 []byte) []byte {
	b := make([]byte, 20, 20+len(l4))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[6:], frag)
	b[9] = proto
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	return append(b, l4...)
}

func ipv6Packet(proto byte, src, dst string, l4 []byte) []byte {
	b := make([]byte, 40, 40+len(l4))
	b[0] = 0x60
	b[6] = proto
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	return append(b, l4...)
}

func tcpHeader(sport, dport uint16, flags byte) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	b[12] = 5 << 4
	b[13] = flags
	return b
}

func udpHeader(sport, dport uint16, payload []byte) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	return append(b, payload...)
}

func TestRecorderPackets(t *testing.T) {
	tests := []struct {
		name     string
		pkts     [][]byte
		want     []Attempt
		wantDNS  []string
		wantUsed bool
	}{
		{"tcp syn", [][]byte{ipv4Packet(protoTCP, "10.0.0.2", "192.0.2.1", 0, tcpHeader(40000, 80, tcpSYN))},
			[]Attempt{{Proto: "tcp", Dst: netip.MustParseAddr("192.0.2.1"), Port: 80}}, nil, true},
		{"syn retransmitted", [][]byte{
			ipv4Packet(protoTCP, "10.0.0.2", "192.0.2.1", 0, tcpHeader(40000, 80, tcpSYN)),
			ipv4Packet(protoTCP, "10.0.0.2", "192.0.2.1", 0, tcpHeader(40000, 80, tcpSYN)),
			ipv4Packet(protoTCP, "10.0.0.2", "192.0.2.1", 0, tcpHeader(40001, 80, tcpSYN))},
			[]Attempt{{Proto: "tcp", Dst: netip.MustParseAddr("192.0.2.1"), Port: 80}, {Proto: "tcp", Dst: netip.MustParseAddr("192.0.2.1"), Port: 80}}, nil, true},
		{"syn ack ignored", [][]byte{ipv4Packet(protoTCP, "10.0.0.2", "192.0.2.1", 0, tcpHeader(80, 40000, tcpSYN|tcpACK))}, nil, nil, false},
		{"later fragment ignored", [][]byte{ipv4Packet(protoUDP, "10.0.0.2", "192.0.2.1", 3, udpHeader(1, 2, nil))}, nil, nil, false},
		{"loopback ignored", [][]byte{
			ipv4Packet(protoTCP, "127.0.0.1", "127.0.1.1", 0, tcpHeader(40000, 443, tcpSYN)),
			ipv6Packet(protoUDP, "::1", "::1", udpHeader(5, 53, nil))}, nil, nil, false},
		{"udp flow once", [][]byte{
			ipv6Packet(protoUDP, "2001:db8::2", "2001:db8::1", udpHeader(5000, 443, []byte("x"))),
			ipv6Packet(protoUDP, "2001:db8::2", "2001:db8::1", udpHeader(5000, 443, []byte("y")))},
			[]Attempt{{Proto: "udp", Dst: netip.MustParseAddr("2001:db8::1"), Port: 443}}, nil, true},
		{"tcp syn v6", [][]byte{ipv6Packet(protoTCP, "2001:db8::2", "2001:db8::1", tcpHeader(1, 22, tcpSYN))},
			[]Attempt{{Proto: "tcp", Dst: netip.MustParseAddr("2001:db8::1"), Port: 22}}, nil, true},
		{"direct dns", [][]byte{ipv4Packet(protoUDP, "10.0.0.2", "8.8.8.8", 0, udpHeader(5353, 53, dnsQuery(9, "pypi.org", typeAAAA)))},
			[]Attempt{{Proto: "udp", Dst: netip.MustParseAddr("8.8.8.8"), Port: 53}}, []string{"pypi.org AAAA 8.8.8.8:53 direct"}, true},
		{"garbage", [][]byte{{0x45}, {0x99, 1, 2}, nil}, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder()
			now := time.Unix(1000, 0)
			for _, p := range tt.pkts {
				r.addPacket(now, p)
			}
			var rep Report
			r.snapshot(&rep)
			if len(rep.Attempts) != len(tt.want) {
				t.Fatalf("got %d attempts %+v, want %d", len(rep.Attempts), rep.Attempts, len(tt.want))
			}
			for i, a := range rep.Attempts {
				w := tt.want[i]
				if a.Proto != w.Proto || a.Dst != w.Dst || a.Port != w.Port || !a.Time.Equal(now) {
					t.Errorf("attempt %d: got %+v, want %+v", i, a, w)
				}
			}
			var dns []string
			for _, q := range rep.DNS {
				dns = append(dns, q.Name+" "+q.Type+" "+q.Server.String()+" "+q.Answer)
			}
			if len(dns) != len(tt.wantDNS) || (len(dns) > 0 && dns[0] != tt.wantDNS[0]) {
				t.Errorf("got DNS %q, want %q", dns, tt.wantDNS)
			}
			if rep.NetworkUsed() != tt.wantUsed {
				t.Errorf("NetworkUsed() = %v, want %v", rep.NetworkUsed(), tt.wantUsed)
			}
		})
	}
}

func TestRecorderCaps(t *testing.T) {
	r := newRecorder()
	for i := range maxAttempts + 5 {
		r.addPacket(time.Now(), ipv4Packet(protoTCP, "10.0.0.2", "192.0.2.1", 0, tcpHeader(uint16(i), 80, tcpSYN)))
	}
	var rep Report
	r.snapshot(&rep)
	if len(rep.Attempts) != maxAttempts || rep.AttemptsDropped != 5 {
		t.Fatalf("got %d attempts, %d dropped; want %d, 5", len(rep.Attempts), rep.AttemptsDropped, maxAttempts)
	}
}

func TestHostResolvers(t *testing.T) {
	conf := "# comment\nnameserver 10.255.255.53\nnameserver ::1\nnameserver fe80::1%eth0\nsearch x\nnameserver bogus\n"
	got := hostResolvers([]byte(conf))
	want := []netip.AddrPort{netip.MustParseAddrPort("10.255.255.53:53"), netip.MustParseAddrPort("[::1]:53")}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestReportNetworkUsed(t *testing.T) {
	tests := []struct {
		name string
		r    Report
		want bool
	}{
		{"nothing", Report{}, false},
		{"gateway lookups only", Report{DNS: []Query{{Name: "api.x", Answer: AnswerGateway}}}, false},
		{"own name lookups only", Report{DNS: []Query{{Name: "box", Answer: AnswerLocal}}}, false},
		{"other lookup", Report{DNS: []Query{{Name: "api.x", Answer: AnswerGateway}, {Name: "pypi.org", Answer: AnswerNXDomain}}}, true},
		{"attempt", Report{Attempts: []Attempt{{Proto: "tcp"}}}, true},
		{"dropped only", Report{AttemptsDropped: 1}, true},
		{"gateway bytes only", Report{Gateways: []GatewayUse{{Name: "m", BytesIn: 5, BytesOut: 5, Conns: 1}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.NetworkUsed(); got != tt.want {
				t.Fatalf("NetworkUsed() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNeighbourhoodRefuses(t *testing.T) {
	n := newNeighbourhood([]netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, DefaultPool, netip.MustParseAddr("198.51.100.1"))
	for addr, want := range map[string]bool{
		"169.254.169.254": true, // cloud metadata
		"10.1.2.3":        true,
		"172.16.0.1":      true,
		"172.31.255.255":  true,
		"172.32.0.1":      false,
		"192.168.1.1":     true,
		"100.64.0.1":      true,
		"100.128.0.1":     false,
		"224.0.0.251":     true,
		"255.255.255.255": true,
		"0.0.0.0":         true,
		"192.0.2.9":       true, // Config.Neighbourhood
		"198.51.100.1":    true, // the host end
		"198.51.100.2":    false,
		"198.18.0.2":      false,
		"8.8.8.8":         false,
		"::ffff:10.0.0.1": true,
		"fd00::1":         false, // IPv6 never leaves: not a refusal of the host end
		"2001:4860::8888": false,
	} {
		if got := n.refuses(netip.MustParseAddr(addr)); got != want {
			t.Errorf("refuses(%s) = %v, want %v", addr, got, want)
		}
	}
	set := n.nftSet()
	if !strings.HasPrefix(set, "{ 0.0.0.0/8, 10.0.0.0/8,") || !strings.HasSuffix(set, "198.51.100.1/32, 192.0.2.0/24 }") {
		t.Errorf("nftSet() = %s", set)
	}
	if _, err := checkNeighbourhood([]netip.Prefix{netip.MustParsePrefix("fd00::/8")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an IPv6 neighbourhood prefix: %v, want ErrInvalid", err)
	}
	got, err := checkNeighbourhood([]netip.Prefix{netip.MustParsePrefix("192.0.2.77/24")})
	if err != nil || len(got) != 1 || got[0] != netip.MustParsePrefix("192.0.2.0/24") {
		t.Errorf("checkNeighbourhood masks: %v, %v", got, err)
	}
}
