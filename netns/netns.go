package netns

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Sentinel error classes. Errors about the caller's input wrap ErrInvalid;
// a name already in use wraps ErrConflict; an exhausted address pool wraps
// ErrBusy.
var (
	// ErrInvalid: a Config, a gateway spec or a name is malformed.
	ErrInvalid = errors.New("invalid network namespace config")
	// ErrConflict: a namespace with the same name exists in the run dir.
	ErrConflict = errors.New("network namespace already exists")
	// ErrBusy: every /30 of the open-mode pool is taken.
	ErrBusy = errors.New("no free address for an open network namespace")
)

// Mode says what a namespace can reach.
type Mode string

const (
	// Closed: loopback only. Every outbound attempt fails at once and is
	// recorded; only the gateways reach the outside.
	Closed Mode = "closed"
	// Open: real outbound connectivity through a veth pair and NAT on the
	// host, with bytes and destinations recorded.
	Open Mode = "open"
)

// DefaultRunDir holds the bind mounts and state files of live namespaces.
const DefaultRunDir = "/run/benchd/netns"

// DefaultPool is the IPv4 range the /30 of each open namespace is taken
// from when Config.Pool is not set.
var DefaultPool = netip.MustParsePrefix("10.213.0.0/16")

// StubResolver is the address of the DNS stub inside every namespace.
var StubResolver = netip.MustParseAddrPort("127.0.0.53:53")

// Gateway is one allow-listed endpoint, written name=host:port. Inside the
// namespace it is reachable on its own loopback address (127.0.1.N) on the
// same port; the host name maps to that address in Hosts and in the DNS
// stub.
type Gateway struct {
	Name string `json:"name"`
	Host string `json:"host"` // a DNS name (lower case) or an IP literal
	Port int    `json:"port"`
	// Handler, when not nil, makes the gateway an HTTP one: inside the
	// namespace it serves plain HTTP with Handler on ListenPort, and
	// dials nothing itself (the handler reaches Host:Port its own way,
	// and counts its own dial errors). The connection bound, the byte
	// counts and the name mapping are the same as a raw gateway's.
	Handler http.Handler `json:"-"`
	// ListenPort is the gateway's port inside the namespace; 0 means
	// Port.
	ListenPort int `json:"listen_port,omitempty"`
}

// listenPort is the gateway's port inside the namespace.
func (g Gateway) listenPort() int {
	if g.ListenPort != 0 {
		return g.ListenPort
	}
	return g.Port
}

// String gives the gateway in the syntax ParseGateway reads.
func (g Gateway) String() string {
	return g.Name + "=" + net.JoinHostPort(g.Host, strconv.Itoa(g.Port))
}

var (
	gatewayName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)
	hostLabel   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// ParseGateway reads name=host:port. The name is 1 to 63 characters of
// [a-z0-9_.-] starting with a letter or digit; the host is a DNS name or
// an IP literal (IPv6 in brackets); the port is 1 to 65535. The host is
// kept in lower case, without a trailing dot.
func ParseGateway(s string) (Gateway, error) {
	name, hostport, ok := strings.Cut(s, "=")
	if !ok {
		return Gateway{}, fmt.Errorf("gateway %q: want name=host:port: %w", s, ErrInvalid)
	}
	if !gatewayName.MatchString(name) {
		return Gateway{}, fmt.Errorf("gateway %q: bad name %q: %w", s, name, ErrInvalid)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return Gateway{}, fmt.Errorf("gateway %q: %v: %w", s, err, ErrInvalid)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return Gateway{}, fmt.Errorf("gateway %q: bad port %q: %w", s, port, ErrInvalid)
	}
	g := Gateway{Name: name, Host: strings.TrimSuffix(strings.ToLower(host), "."), Port: p}
	if err := g.validHost(); err != nil {
		return Gateway{}, fmt.Errorf("gateway %q: %w", s, err)
	}
	return g, nil
}

func (g Gateway) validHost() error {
	if a, err := netip.ParseAddr(g.Host); err == nil {
		if a.Zone() != "" || !a.IsValid() || a.IsUnspecified() {
			return fmt.Errorf("bad address %q: %w", g.Host, ErrInvalid)
		}
		return nil
	}
	h := strings.TrimSuffix(g.Host, ".")
	if h == "" || len(h) > 253 {
		return fmt.Errorf("bad host %q: %w", g.Host, ErrInvalid)
	}
	for _, l := range strings.Split(h, ".") {
		if !hostLabel.MatchString(l) {
			return fmt.Errorf("bad host %q: %w", g.Host, ErrInvalid)
		}
	}
	return nil
}

// CheckGateways checks a namespace's gateways as New does: each parses
// (ParseGateway's rules; a listen port, if set, in range), names are
// unique, no two listen on one host and port, none names the sandbox
// itself (localhost, hostname), at most 254 hosts. It returns them
// normalized (host in lower case, no trailing dot).
func CheckGateways(in []Gateway, hostname string) ([]Gateway, error) {
	names := map[string]bool{}
	ends := map[string]bool{}
	hosts := map[string]bool{}
	gws := make([]Gateway, len(in))
	for i, g := range in {
		parsed, err := ParseGateway(g.String())
		if err != nil {
			return nil, err
		}
		if g.ListenPort < 0 || g.ListenPort > 65535 {
			return nil, fmt.Errorf("gateway %s: bad listen port %d: %w", g.Name, g.ListenPort, ErrInvalid)
		}
		parsed.Handler, parsed.ListenPort = g.Handler, g.ListenPort
		g := parsed
		if g.Host == "localhost" || (hostname != "" && g.Host == hostname) {
			return nil, fmt.Errorf("gateway %s: host %q names the sandbox itself: %w", g.Name, g.Host, ErrInvalid)
		}
		gws[i] = g
		if names[g.Name] {
			return nil, fmt.Errorf("gateway name %q used twice: %w", g.Name, ErrInvalid)
		}
		end := g.Host + ":" + fmt.Sprint(g.listenPort())
		if ends[end] {
			return nil, fmt.Errorf("gateway endpoint %s used twice: %w", end, ErrInvalid)
		}
		names[g.Name], ends[end], hosts[g.Host] = true, true, true
	}
	if len(hosts) > 254 {
		return nil, fmt.Errorf("%d gateway hosts, at most 254: %w", len(hosts), ErrInvalid)
	}
	return gws, nil
}

// ListenAddrs gives the address inside the namespace at which each
// gateway (by name) listens, as New assigns them: 127.0.1.N, N the rank
// of the gateway's host among the distinct hosts of gws, in order, and
// the gateway's listen port. Hosts maps a host name to that address; an
// IP literal host is reached at the address itself.
func ListenAddrs(gws []Gateway) map[string]netip.AddrPort {
	out := map[string]netip.AddrPort{}
	for name, a := range hostAddrs(gws) {
		for _, g := range gws {
			if g.Host == name {
				out[g.Name] = netip.AddrPortFrom(a, uint16(g.listenPort()))
			}
		}
	}
	return out
}

// hostAddrs gives each distinct host of gws its loopback address.
func hostAddrs(gws []Gateway) map[string]netip.Addr {
	addrs := map[string]netip.Addr{}
	next := gatewayNet
	for _, g := range gws {
		if _, ok := addrs[g.Host]; !ok {
			next = next.Next()
			addrs[g.Host] = next
		}
	}
	return addrs
}

// gatewayNet holds the loopback addresses of gateways: 127.0.1.1 upward.
var gatewayNet = netip.MustParseAddr("127.0.1.0")

// isIP reports whether the gateway's host is an IP literal.
func (g Gateway) isIP() bool {
	_, err := netip.ParseAddr(g.Host)
	return err == nil
}

// Report is what a namespace saw. It is a snapshot: call Report again for
// later traffic; after Close it stays final.
type Report struct {
	Mode Mode `json:"mode"`
	// Attempts lists outbound flows: each TCP connection attempt (SYN) and
	// each new UDP flow to a non-loopback destination, in order.
	Attempts []Attempt `json:"attempts"`
	// AttemptsDropped counts flows beyond the record cap, and packets the
	// capture lost (its receive buffer full).
	AttemptsDropped int64 `json:"attempts_dropped,omitempty"`
	// DNS lists every question asked of the stub resolver, and every
	// question seen in a UDP datagram sent to port 53 elsewhere.
	DNS []Query `json:"dns"`
	// DNSDropped counts questions beyond the record cap.
	DNSDropped int64        `json:"dns_dropped,omitempty"`
	Gateways   []GatewayUse `json:"gateways"`
	// BytesIn and BytesOut count the bytes received and sent by the
	// namespace on its veth (open mode only), link headers included.
	BytesIn  uint64 `json:"bytes_in"`
	BytesOut uint64 `json:"bytes_out"`
}

// NetworkUsed reports whether the namespace tried to reach anything but
// its gateways: an outbound attempt, or a DNS question for a name that is
// neither a gateway's nor the sandbox's own (localhost, Config.Hostname).
func (r Report) NetworkUsed() bool {
	if len(r.Attempts) > 0 || r.AttemptsDropped > 0 || r.DNSDropped > 0 {
		return true
	}
	for _, q := range r.DNS {
		if q.Answer != AnswerGateway && q.Answer != AnswerLocal {
			return true
		}
	}
	return false
}

// Attempt is one outbound flow seen leaving a process in the namespace.
type Attempt struct {
	Time  time.Time  `json:"time"`
	Proto string     `json:"proto"` // "tcp" or "udp"
	Dst   netip.Addr `json:"dst"`
	Port  uint16     `json:"port"`
	// Refused: open mode rejected it at the host end of the veth, the
	// destination being in the host's neighbourhood (Neighbourhood,
	// Config.Neighbourhood) or the host itself. Closed mode refuses
	// every connection inside the namespace and leaves this false.
	Refused bool `json:"refused,omitempty"`
}

// The answers a Query can have.
const (
	AnswerGateway   = "gateway"   // a gateway's host: answered with its loopback address
	AnswerLocal     = "local"     // localhost or Config.Hostname: answered with loopback
	AnswerNXDomain  = "nxdomain"  // closed mode: the name does not exist
	AnswerForwarded = "forwarded" // open mode: relayed to the host's resolvers
	AnswerFailed    = "failed"    // open mode: no upstream answered (SERVFAIL)
	AnswerRefused   = "refused"   // not a standard query, or malformed
	AnswerDirect    = "direct"    // sent to a server other than the stub; seen, not answered
)

// Query is one DNS question.
type Query struct {
	Time   time.Time      `json:"time"`
	Name   string         `json:"name"` // lower case, no trailing dot
	Type   string         `json:"type"` // "A", "AAAA", ..., or "TYPE123"
	Server netip.AddrPort `json:"server"`
	Answer string         `json:"answer"`
}

// GatewayUse is the traffic through one gateway.
type GatewayUse struct {
	Name   string         `json:"name"`
	Host   string         `json:"host"`
	Port   int            `json:"port"`
	Listen netip.AddrPort `json:"listen"` // its address inside the namespace
	// HTTP says the gateway served HTTP with a handler (Gateway.Handler).
	HTTP bool `json:"http,omitempty"`
	// Conns counts the connections served: each dialed to the endpoint
	// (raw), or each served by the handler (HTTP).
	Conns int64 `json:"conns"`
	// Refused counts connections closed at once because MaxGatewayConns
	// were open: the agent's doing, never an upstream failure.
	Refused int64 `json:"refused,omitempty"`
	// DialErrors counts failed dials to the endpoint while the namespace
	// was open, LastDialError says how the last one failed.
	DialErrors    int64  `json:"dial_errors,omitempty"`
	LastDialError string `json:"last_dial_error,omitempty"`
	BytesIn       int64  `json:"bytes_in"`  // from the endpoint to the namespace
	BytesOut      int64  `json:"bytes_out"` // from the namespace to the endpoint
}
