package netns

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Neighbourhood are the IPv4 destinations an open namespace never
// reaches, whatever the host's routes say: the addresses that name
// machines near the host rather than on the internet. A connection to
// one is rejected by the host end of the veth with ICMP "administratively
// prohibited" (connect fails at once with EHOSTUNREACH) and its Attempt is
// Refused. Config.Neighbourhood adds more, such as the host's own
// connected subnets (HostSubnets). IPv6 is off on the veth altogether, so
// ULA (fc00::/7), link-local (fe80::/10) and multicast (ff00::/8) are
// refused with the rest of IPv6 (ENETUNREACH, no packet leaves).
var Neighbourhood = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network" (RFC 791)
	netip.MustParsePrefix("10.0.0.0/8"),     // private (RFC 1918)
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("127.0.0.0/8"),    // loopback, should a packet claim it
	netip.MustParsePrefix("169.254.0.0/16"), // link-local: cloud metadata at 169.254.169.254 (RFC 3927)
	netip.MustParsePrefix("172.16.0.0/12"),  // private (RFC 1918)
	netip.MustParsePrefix("192.168.0.0/16"), // private (RFC 1918)
	netip.MustParsePrefix("224.0.0.0/4"),    // multicast (RFC 5771)
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the limited broadcast 255.255.255.255
}

// neighbourhood is one open namespace's refused set: Neighbourhood, the
// pool the open namespaces take their addresses from (the others are
// refused), the host end of its veth (the host itself is refused by the
// input chain) and the prefixes of Config.Neighbourhood.
type neighbourhood []netip.Prefix

func newNeighbourhood(extra []netip.Prefix, pool netip.Prefix, hostAddr netip.Addr) neighbourhood {
	n := slices.Clone(Neighbourhood)
	if pool.IsValid() {
		n = append(n, pool)
	}
	if hostAddr.IsValid() {
		n = append(n, netip.PrefixFrom(hostAddr, 32))
	}
	return append(n, extra...)
}

// refuses reports whether a connection to addr is refused.
func (n neighbourhood) refuses(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.Is4() {
		return false // IPv6 never leaves an open namespace
	}
	return slices.ContainsFunc(n, func(p netip.Prefix) bool { return p.Contains(addr) })
}

// nftSet writes the refused prefixes as an nft anonymous set.
func (n neighbourhood) nftSet() string {
	parts := make([]string, len(n))
	for i, p := range n {
		parts[i] = p.Masked().String()
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// checkNeighbourhood validates Config.Neighbourhood: IPv4 prefixes only.
func checkNeighbourhood(ps []netip.Prefix) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		if !p.IsValid() || !p.Addr().Unmap().Is4() {
			return nil, fmt.Errorf("neighbourhood prefix %s: want an IPv4 prefix: %w", p, ErrInvalid)
		}
		out = append(out, netip.PrefixFrom(p.Addr().Unmap(), p.Bits()).Masked())
	}
	return out, nil
}
