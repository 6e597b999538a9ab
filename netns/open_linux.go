package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

const (
	vethPrefix  = "bdn"     // host end of an open namespace's veth: bdn<slot>
	tablePrefix = "benchd_" // its nft table: benchd_bdn<slot>
	ipForward   = "/proc/sys/net/ipv4/ip_forward"
)

// openLink is the veth pair of an open namespace: the host end bdn<slot>
// with the first address of the slot's /30, eth0 inside with the second,
// and an nft table that masquerades the /30 and keeps it from the host's
// own services and from other open namespaces.
type openLink struct {
	slot     int
	hostIf   string
	subnet   netip.Prefix
	hostAddr netip.Addr
	nsAddr   netip.Addr
	refused  neighbourhood
	index    int  // host end
	nft      bool // the table exists

	mu    sync.Mutex
	final *[2]uint64 // counters read before the veth went away
}

// slots holds the host-end names in use by this process.
var slots struct {
	mu   sync.Mutex
	used map[string]bool
	next int
}

// allocLink picks a /30 of pool that no namespace of this process uses,
// whose veth name is free on the host, and that overlaps no address or
// route of the host.
func allocLink(pool netip.Prefix) (*openLink, error) {
	var taken []netip.Prefix
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("unable to list host addresses: %w", err)
	}
	for _, a := range addrs {
		if p, ok := prefixOf(a.IPNet); ok {
			taken = append(taken, p)
		}
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("unable to list host routes: %w", err)
	}
	for _, r := range routes {
		if p, ok := prefixOf(r.Dst); ok && p.Bits() > 0 {
			taken = append(taken, p)
		}
	}
	n := 1 << (30 - pool.Bits())
	slots.mu.Lock()
	defer slots.mu.Unlock()
	if slots.used == nil {
		slots.used = map[string]bool{}
	}
	base := pool.Addr().As4()
	for i := range n {
		slot := (slots.next + i) % n
		name := fmt.Sprintf("%s%d", vethPrefix, slot)
		if slots.used[name] {
			continue
		}
		if _, err := netlink.LinkByName(name); err == nil {
			continue
		}
		a := base
		v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) + uint32(slot)*4
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), 30)
		if overlapsAny(subnet, taken) {
			continue
		}
		slots.used[name] = true
		slots.next = slot + 1
		host := subnet.Addr().Next()
		return &openLink{slot: slot, hostIf: name, subnet: subnet, hostAddr: host, nsAddr: host.Next()}, nil
	}
	return nil, fmt.Errorf("pool %s: %w", pool, ErrBusy)
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), bits).Masked(), true
}

func overlapsAny(p netip.Prefix, taken []netip.Prefix) bool {
	for _, t := range taken {
		if p.Overlaps(t) {
			return true
		}
	}
	return false
}

func (l *openLink) release() {
	slots.mu.Lock()
	defer slots.mu.Unlock()
	delete(slots.used, l.hostIf)
}

func (l *openLink) table() string { return tablePrefix + l.hostIf }

// create makes the veth pair with its peer in the namespace nsfd,
// configures the host end, and adds the nft table. On failure it leaves
// nothing behind.
func (l *openLink) create(ctx context.Context, nsfd int) (err error) {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return fmt.Errorf("open mode needs nft (Debian package nftables): %w", err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: l.hostIf}, PeerName: "eth0", PeerNamespace: netlink.NsFd(nsfd)}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("unable to create veth %s: %w", l.hostIf, err)
	}
	defer func() {
		if err != nil {
			l.delete()
		}
	}()
	link, err := netlink.LinkByName(l.hostIf)
	if err != nil {
		return fmt.Errorf("unable to find veth %s: %w", l.hostIf, err)
	}
	l.index = link.Attrs().Index
	// No IPv6 on the link: no router solicitations or DAD on it.
	os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", l.hostIf, "disable_ipv6"), []byte("1"), 0)
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: l.hostAddr.AsSlice(), Mask: net.CIDRMask(30, 32)}}
	if err := netlink.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("unable to address veth %s: %w", l.hostIf, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("unable to bring veth %s up: %w", l.hostIf, err)
	}
	t := l.table()
	script := fmt.Sprintf(`table ip %[1]s
delete table ip %[1]s
table ip %[1]s {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr %[2]s oifname != "%[3]s" masquerade
	}
	chain input {
		type filter hook input priority filter; policy accept;
		iifname "%[3]s" ct state established,related accept
		iifname "%[3]s" reject with icmp type admin-prohibited
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "%[3]s" oifname "%[4]s*" reject with icmp type admin-prohibited
		iifname "%[3]s" ip daddr %[5]s reject with icmp type admin-prohibited
	}
}
`, t, l.subnet, l.hostIf, vethPrefix, l.refused.nftSet())
	cmd := exec.CommandContext(ctx, nft, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	l.nft = true // a failed run may still have left the table
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("unable to add nft table %s: %v: %s", t, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// setupInside configures eth0 and the default route; it runs on a
// thread inside the namespace with a netlink handle made there.
func (l *openLink) setupInside(h *netlink.Handle) (int, error) {
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return 0, fmt.Errorf("unable to find eth0: %w", err)
	}
	// /proc/sys/net follows the calling thread's namespace.
	os.WriteFile("/proc/sys/net/ipv6/conf/eth0/disable_ipv6", []byte("1"), 0)
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: l.nsAddr.AsSlice(), Mask: net.CIDRMask(30, 32)}}
	if err := h.AddrAdd(eth0, addr); err != nil {
		return 0, fmt.Errorf("unable to address eth0: %w", err)
	}
	if err := h.LinkSetUp(eth0); err != nil {
		return 0, fmt.Errorf("unable to bring eth0 up: %w", err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: l.hostAddr.AsSlice()}); err != nil {
		return 0, fmt.Errorf("unable to add default route: %w", err)
	}
	return eth0.Attrs().Index, nil
}

// delete removes the nft table and the veth (both ends).
func (l *openLink) delete() error {
	var errs []error
	if l.nft {
		cmd := exec.Command("nft", "delete", "table", "ip", l.table())
		if out, err := cmd.CombinedOutput(); err != nil && !bytes.Contains(out, []byte("No such file")) {
			errs = append(errs, fmt.Errorf("unable to delete nft table %s: %v: %s", l.table(), err, bytes.TrimSpace(out)))
		}
		l.nft = false
	}
	if link, err := netlink.LinkByName(l.hostIf); err == nil {
		if err := netlink.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("unable to delete veth %s: %w", l.hostIf, err))
		}
	}
	return errors.Join(errs...)
}

// snapshot keeps the counters so they outlive the veth.
func (l *openLink) snapshot() {
	in, out := l.counters()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.final = &[2]uint64{in, out}
}

// counters gives the bytes received and sent by the namespace: the host
// end's transmit and receive counters.
func (l *openLink) counters() (in, out uint64) {
	l.mu.Lock()
	f := l.final
	l.mu.Unlock()
	if f != nil {
		return f[0], f[1]
	}
	link, err := netlink.LinkByIndex(l.index)
	if err != nil || link.Attrs().Name != l.hostIf || link.Attrs().Statistics == nil {
		return 0, 0
	}
	s := link.Attrs().Statistics
	return s.TxBytes, s.RxBytes
}

// fwd counts this process's open namespaces, which need forwarding on.
var fwd struct {
	mu    sync.Mutex
	refs  int
	saved map[string]string
}

// forwardingRef turns IPv4 forwarding on for the first open namespace,
// and gives the settings to restore after the last.
func forwardingRef() (map[string]string, error) {
	fwd.mu.Lock()
	defer fwd.mu.Unlock()
	if fwd.refs == 0 {
		saved, err := readForwarding()
		if err != nil {
			return nil, err
		}
		if saved[ipForward] != "1" {
			if err := os.WriteFile(ipForward, []byte("1"), 0); err != nil {
				return nil, fmt.Errorf("unable to turn forwarding on: %w", err)
			}
		}
		fwd.saved = saved
	}
	fwd.refs++
	return maps.Clone(fwd.saved), nil
}

// forwardingUnref restores the forwarding settings after the last open
// namespace.
func forwardingUnref() error {
	fwd.mu.Lock()
	defer fwd.mu.Unlock()
	fwd.refs--
	if fwd.refs > 0 {
		return nil
	}
	err := writeForwarding(fwd.saved)
	fwd.saved = nil
	return err
}

func forwardingRefs() int {
	fwd.mu.Lock()
	defer fwd.mu.Unlock()
	return fwd.refs
}

// readForwarding reads net.ipv4.ip_forward and the forwarding setting of
// every interface (turning ip_forward on changes them all).
func readForwarding() (map[string]string, error) {
	m := map[string]string{}
	b, err := os.ReadFile(ipForward)
	if err != nil {
		return nil, fmt.Errorf("unable to read forwarding: %w", err)
	}
	m[ipForward] = strings.TrimSpace(string(b))
	files, _ := filepath.Glob("/proc/sys/net/ipv4/conf/*/forwarding")
	for _, f := range files {
		if filepath.Base(filepath.Dir(f)) == "all" {
			continue // the same setting as ip_forward
		}
		if b, err := os.ReadFile(f); err == nil {
			m[f] = strings.TrimSpace(string(b))
		}
	}
	return m, nil
}

// writeForwarding restores what readForwarding read: ip_forward first,
// then each interface still present whose value differs.
func writeForwarding(m map[string]string) error {
	v, ok := m[ipForward]
	if !ok {
		return nil
	}
	var errs []error
	if err := writeIfChanged(ipForward, v); err != nil {
		errs = append(errs, err)
	}
	for f, v := range m {
		if f == ipForward || !strings.HasPrefix(f, "/proc/sys/net/ipv4/conf/") || !strings.HasSuffix(f, "/forwarding") {
			continue
		}
		if err := writeIfChanged(f, v); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func writeIfChanged(path, v string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(b)) == v {
		return nil
	}
	if err := os.WriteFile(path, []byte(v), 0); err != nil {
		return fmt.Errorf("unable to restore %s: %w", path, err)
	}
	return nil
}

// HostSubnets returns the IPv4 subnets of the host's own addresses (each
// address with its prefix length, masked), loopback and the host ends of
// open namespaces left out: the machines on the host's links, which an
// open namespace must not reach (Config.Neighbourhood).
func HostSubnets() ([]netip.Prefix, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("unable to list host addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if strings.HasPrefix(a.Label, vethPrefix) || a.IPNet == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || ip.Unmap().IsLoopback() {
			continue
		}
		bits, _ := a.Mask.Size()
		p := netip.PrefixFrom(ip.Unmap(), bits).Masked()
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
