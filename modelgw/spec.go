package modelgw

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Sentinel errors. ErrInvalid: a gateway spec or price table is
// malformed. ErrUpstream: the upstream could not be reached (a dial or a
// TLS handshake failed): the harness's failure, never the agent's.
var (
	ErrInvalid  = errors.New("invalid model gateway")
	ErrUpstream = errors.New("model gateway upstream unreachable")
)

// DefaultListenPort is the port an HTTP gateway listens on inside the
// namespace when its URL names none: plain HTTP's, so that the agent's
// base URL is http://HOST whatever the upstream's scheme.
const DefaultListenPort = 80

// Upstream is an HTTP gateway, written NAME=http://HOST[:PORT][/PATH] or
// NAME=https://HOST[:PORT][/PATH].
type Upstream struct {
	Name   string
	Scheme string // "http" or "https"
	Host   string // lower case, no trailing dot; an IPv6 literal without brackets
	Port   int    // the URL's port, else 80 or 443
	// Path is the upstream's base path ("" or "/a/b", clean, no trailing
	// slash): a request for /X inside the namespace goes to PATH/X.
	Path string
	// ListenPort is where the gateway serves plain HTTP inside the
	// namespace: the URL's port when it names one, else
	// DefaultListenPort.
	ListenPort int
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// IsHTTPSpec reports whether spec is an HTTP gateway's form (its value
// starts with http:// or https://) rather than the raw NAME=HOST:PORT.
func IsHTTPSpec(spec string) bool {
	_, v, ok := strings.Cut(spec, "=")
	v = strings.ToLower(v)
	return ok && (strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://"))
}

// ParseUpstream reads NAME=http(s)://HOST[:PORT][/PATH]. The name is as
// a raw gateway's (1 to 63 of [a-z0-9_.-]); the URL has no user, query
// or fragment, and its path no dot segments or encoded slashes. The
// host's own rules (a DNS name or an IP literal) are netns's, which the
// caller applies too.
func ParseUpstream(spec string) (Upstream, error) {
	bad := func(format string, a ...any) (Upstream, error) {
		return Upstream{}, fmt.Errorf("gateway %q: %s: %w", spec, fmt.Sprintf(format, a...), ErrInvalid)
	}
	name, raw, ok := strings.Cut(spec, "=")
	if !ok || !IsHTTPSpec(spec) {
		return bad("want NAME=http://HOST[:PORT][/PATH] or NAME=https://...")
	}
	if !nameRE.MatchString(name) {
		return bad("bad name %q", name)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("%v", err)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return bad("the URL may have no user, query or fragment")
	}
	up := Upstream{Name: name, Scheme: strings.ToLower(u.Scheme), Host: strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")}
	if up.Host == "" {
		return bad("no host")
	}
	if a, err := netip.ParseAddr(up.Host); err == nil && a.Zone() != "" {
		return bad("an address with a zone")
	}
	switch p := u.Port(); {
	case p != "":
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("bad port %q", p)
		}
		up.Port, up.ListenPort = n, n
	case up.Scheme == "https":
		up.Port, up.ListenPort = 443, DefaultListenPort
	default:
		up.Port, up.ListenPort = 80, DefaultListenPort
	}
	if u.RawPath != "" && strings.Contains(strings.ToLower(u.RawPath), "%2f") {
		return bad("an encoded slash in the path")
	}
	p := strings.TrimSuffix(u.Path, "/")
	if p != "" {
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
			return bad("path %q is not clean", u.Path)
		}
		for _, seg := range strings.Split(p[1:], "/") {
			if seg == "." || seg == ".." {
				return bad("path %q is not clean", u.Path)
			}
		}
	}
	up.Path = p
	return up, nil
}

// HostPort is the upstream's host:port, what is dialed.
func (u Upstream) HostPort() string { return net.JoinHostPort(u.Host, strconv.Itoa(u.Port)) }

// URL is the upstream's base URL, the port left out when the spec left
// it out (the scheme's, and ListenPort the default).
func (u Upstream) URL() string {
	h := u.HostPort()
	def := (u.Scheme == "https" && u.Port == 443) || (u.Scheme == "http" && u.Port == 80)
	if def && u.ListenPort == DefaultListenPort {
		h = u.Host
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
	}
	return u.Scheme + "://" + h + u.Path
}

// String gives the gateway in the syntax ParseUpstream reads.
func (u Upstream) String() string { return u.Name + "=" + u.URL() }
