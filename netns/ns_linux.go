package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"benchd.dev/internal/undo"
)

// Config describes one namespace.
type Config struct {
	// Mode is Closed (the zero value means Closed) or Open.
	Mode Mode
	// Gateways are the endpoints reachable from inside, each on its own
	// loopback address. Names and host:port pairs must be unique.
	Gateways []Gateway
	// Name names the namespace in logs and in RunDir (1 to 64 characters
	// of [A-Za-z0-9_.-], starting with a letter or digit). Empty: a
	// random name.
	Name string
	// RunDir holds the bind mount (RunDir/Name) and the state file used by
	// Cleanup. Empty: DefaultRunDir.
	RunDir string
	// Pool is the IPv4 range open namespaces take their /30 from (a /16
	// to a /30). Empty: DefaultPool.
	Pool netip.Prefix
	// Resolvers are the upstream DNS servers the open-mode stub relays to,
	// dialed from the host's namespace. Empty: the nameservers of the
	// host's /etc/resolv.conf.
	Resolvers []netip.AddrPort
	// Hostname is the sandbox's host name, if it has one: Hosts maps it
	// to 127.0.0.1 and the DNS stub answers it with loopback, so that a
	// process looking up its own name does not count as network use.
	Hostname string
	// Neighbourhood are IPv4 prefixes an open namespace refuses beyond
	// the fixed Neighbourhood list: benchd passes the host's connected
	// subnets (HostSubnets), so that the machines on the host's own
	// links are out of reach whatever their addresses.
	Neighbourhood []netip.Prefix
	// Logger gets warnings; nil discards them.
	Logger *slog.Logger
}

// Namespace is one network namespace with its recorder, DNS stub and
// gateways. Its methods may be called from any goroutine.
type Namespace struct {
	name    string
	mode    Mode
	path    string
	fd      int
	log     *slog.Logger
	rec     *recorder
	cap     *capture
	stub    *dnsStub
	proxies []*gatewayProxy
	hosts   map[string]netip.Addr // gateway host name -> loopback address
	self    string                // Config.Hostname
	link    *openLink             // open mode only
	cancel  context.CancelFunc
	undo    undo.Stack

	closeOnce sync.Once
	closeErr  error

	mu    sync.Mutex
	final *Report // set by Close
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func (cfg *Config) validate() error {
	switch cfg.Mode {
	case "":
		cfg.Mode = Closed
	case Closed, Open:
	default:
		return fmt.Errorf("mode %q: %w", cfg.Mode, ErrInvalid)
	}
	if cfg.Name == "" {
		var b [6]byte
		rand.Read(b[:])
		cfg.Name = "ns-" + hex.EncodeToString(b[:])
	}
	if !nameRE.MatchString(cfg.Name) {
		return fmt.Errorf("name %q: %w", cfg.Name, ErrInvalid)
	}
	if cfg.RunDir == "" {
		cfg.RunDir = DefaultRunDir
	}
	if !filepath.IsAbs(cfg.RunDir) {
		return fmt.Errorf("run dir %q is not absolute: %w", cfg.RunDir, ErrInvalid)
	}
	if !cfg.Pool.IsValid() {
		cfg.Pool = DefaultPool
	}
	if !cfg.Pool.Addr().Is4() || cfg.Pool.Bits() < 16 || cfg.Pool.Bits() > 30 {
		return fmt.Errorf("pool %s: want an IPv4 /16 to /30: %w", cfg.Pool, ErrInvalid)
	}
	cfg.Pool = cfg.Pool.Masked()
	var err error
	if cfg.Neighbourhood, err = checkNeighbourhood(cfg.Neighbourhood); err != nil {
		return err
	}
	if cfg.Hostname != "" {
		cfg.Hostname = strings.TrimSuffix(strings.ToLower(cfg.Hostname), ".")
		if (Gateway{Host: cfg.Hostname}).validHost() != nil || (Gateway{Host: cfg.Hostname}).isIP() {
			return fmt.Errorf("host name %q: %w", cfg.Hostname, ErrInvalid)
		}
	}
	gws, err := CheckGateways(cfg.Gateways, cfg.Hostname)
	if err != nil {
		return err
	}
	cfg.Gateways = gws
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// New creates the namespace and starts its recorder, DNS stub and
// gateways. ctx bounds the set-up only; the namespace lives until Close.
func New(ctx context.Context, cfg Config) (_ *Namespace, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Namespace{
		name: cfg.Name,
		mode: cfg.Mode,
		path: filepath.Join(cfg.RunDir, cfg.Name),
		fd:   -1,
		log:  cfg.Logger.With("component", "netns", "netns", cfg.Name),
		rec:  newRecorder(),
		self: cfg.Hostname,
	}
	defer func() {
		if err != nil {
			if uerr := n.undo.Run(); uerr != nil {
				n.log.Warn("unable to undo a failed set-up", "err", uerr)
			}
		}
	}()

	st := &state{Name: cfg.Name, Mode: cfg.Mode, Pid: os.Getpid(), Start: procStart(os.Getpid())}
	sf, err := createState(cfg.RunDir, st)
	if err != nil {
		return nil, err
	}
	registerLive(sf.path)
	n.undo.Push("unable to unregister", func() error { unregisterLive(sf.path); return nil })
	n.undo.Push("unable to remove state file", func() error { return sf.remove() })

	if cfg.Mode == Open {
		n.link, err = allocLink(cfg.Pool)
		if err != nil {
			return nil, err
		}
		n.link.refused = newNeighbourhood(cfg.Neighbourhood, cfg.Pool, n.link.hostAddr)
		n.rec.refused = n.link.refused
		n.undo.Push("unable to release address", func() error { n.link.release(); return nil })
		saved, err := forwardingRef()
		if err != nil {
			return nil, err
		}
		n.undo.Push("unable to restore forwarding", forwardingUnref)
		st.HostIf, st.Table, st.Forwarding = n.link.hostIf, n.link.table(), saved
		if err := sf.write(st); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	n.fd, err = newNetns()
	if err != nil {
		return nil, err
	}
	n.undo.Push("unable to close namespace fd", func() error { return unix.Close(n.fd) })

	if err := os.WriteFile(n.path, nil, 0o444); err != nil {
		return nil, fmt.Errorf("unable to create mount point: %w", err)
	}
	n.undo.Push("unable to remove mount point", func() error { return removeIfExists(n.path) })
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", n.fd), n.path, "", unix.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("unable to bind mount namespace at %s: %w", n.path, err)
	}
	n.undo.Push("unable to unmount namespace", func() error { return unmount(n.path) })

	if cfg.Mode == Open {
		if err := n.link.create(ctx, n.fd); err != nil {
			return nil, err
		}
		n.undo.Push("unable to delete veth", n.link.delete)
		n.undo.Push("unable to read veth counters", func() error { n.link.snapshot(); n.keepReport(); return nil })
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Everything that must exist inside the namespace is made on one
	// thread that joined it: sockets belong to the namespace they were
	// made in, and keep working from any goroutine afterwards.
	n.hosts = map[string]netip.Addr{}
	listen := hostAddrs(cfg.Gateways)
	for _, g := range cfg.Gateways {
		if !g.isIP() {
			n.hosts[g.Host] = listen[g.Host]
		}
	}
	var (
		lnUDP net.PacketConn
		lnTCP net.Listener
		lns   []net.Listener
	)
	err = inNetns(n.fd, func() error {
		ifindex, err := n.setupInside()
		if err != nil {
			return err
		}
		if n.cap, err = openCapture(ifindex, n.rec); err != nil {
			return err
		}
		if lnUDP, err = net.ListenPacket("udp4", StubResolver.String()); err != nil {
			return fmt.Errorf("unable to listen for DNS: %w", err)
		}
		if lnTCP, err = net.Listen("tcp4", StubResolver.String()); err != nil {
			return fmt.Errorf("unable to listen for DNS: %w", err)
		}
		for _, g := range cfg.Gateways {
			ap := netip.AddrPortFrom(listen[g.Host], uint16(g.listenPort()))
			ln, err := net.Listen("tcp4", ap.String())
			if err != nil {
				return fmt.Errorf("unable to listen for gateway %s: %w", g.Name, err)
			}
			lns = append(lns, ln)
		}
		return nil
	})
	if err != nil {
		if n.cap != nil {
			n.cap.f.Close()
		}
		if lnUDP != nil {
			lnUDP.Close()
		}
		if lnTCP != nil {
			lnTCP.Close()
		}
		for _, ln := range lns {
			ln.Close()
		}
		return nil, fmt.Errorf("unable to set up namespace: %w", err)
	}

	sctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.cap.start()
	local := map[string]bool{"localhost": true}
	if n.self != "" {
		local[n.self] = true
	}
	n.stub = &dnsStub{rec: n.rec, gateways: n.hosts, local: local, udp: lnUDP, tcp: lnTCP, ctx: sctx}
	if cfg.Mode == Open {
		servers := cfg.Resolvers
		if len(servers) == 0 {
			conf, _ := os.ReadFile("/etc/resolv.conf")
			servers = hostResolvers(conf)
		}
		n.stub.forward = &forwarder{servers: servers, timeout: 2 * time.Second}
	}
	n.stub.serve()
	for i, g := range cfg.Gateways {
		p := &gatewayProxy{gw: g, listen: netip.AddrPortFrom(listen[g.Host], uint16(g.listenPort())), ln: lns[i], ctx: sctx, log: n.log}
		p.serve()
		n.proxies = append(n.proxies, p)
	}
	n.undo.Push("unable to stop services", func() error {
		cancel()
		n.stub.close()
		for _, p := range n.proxies {
			p.close()
		}
		err := n.cap.close()
		n.keepReport()
		return err
	})
	n.log.Debug("network namespace ready", "mode", n.mode, "path", n.path)
	return n, nil
}

// setupInside runs on a thread inside the namespace: it brings lo up,
// routes every address to lo (closed mode) or configures eth0 and the
// default route (open mode), and returns the interface to capture on.
func (n *Namespace) setupInside() (int, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return 0, fmt.Errorf("unable to open netlink: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return 0, fmt.Errorf("unable to find lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return 0, fmt.Errorf("unable to bring lo up: %w", err)
	}
	if n.mode == Closed {
		// Every address is local: a SYN to anywhere meets no listener and
		// gets a RST at once, a datagram gets port unreachable.
		for _, dst := range []string{"0.0.0.0/0", "::/0"} {
			if _, err := os.Stat("/proc/sys/net/ipv6"); dst == "::/0" && err != nil {
				continue // IPv6 disabled on this kernel: nothing to route
			}
			_, ipnet, _ := net.ParseCIDR(dst)
			r := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: ipnet, Table: unix.RT_TABLE_LOCAL, Type: unix.RTN_LOCAL, Scope: netlink.SCOPE_HOST}
			if err := h.RouteAdd(r); err != nil {
				return 0, fmt.Errorf("unable to add local route %s: %w", dst, err)
			}
		}
		return lo.Attrs().Index, nil
	}
	return n.link.setupInside(h)
}

// Path is a file that names the namespace for setns(2) or
// `nsenter --net=PATH`: a bind mount of its nsfs file in the run dir.
func (n *Namespace) Path() string { return n.path }

// FD is an open file descriptor of the namespace, valid until Close.
func (n *Namespace) FD() int { return n.fd }

// Name is the namespace's name in the run dir.
func (n *Namespace) Name() string { return n.name }

// Mode is the namespace's mode.
func (n *Namespace) Mode() Mode { return n.mode }

// GatewayAddr gives the address inside the namespace at which the
// gateway called name listens.
func (n *Namespace) GatewayAddr(name string) (netip.AddrPort, bool) {
	for _, p := range n.proxies {
		if p.gw.Name == name {
			return p.listen, true
		}
	}
	return netip.AddrPort{}, false
}

// Hosts is the /etc/hosts for the sandbox: localhost (and
// Config.Hostname), and each gateway's host name on its loopback address.
func (n *Namespace) Hosts() []byte {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost")
	if n.self != "" {
		b.WriteString(" " + n.self)
	}
	b.WriteString("\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	names := make([]string, 0, len(n.hosts))
	for h := range n.hosts {
		names = append(names, h)
	}
	slices.SortFunc(names, func(a, b string) int { return n.hosts[a].Compare(n.hosts[b]) })
	for _, h := range names {
		fmt.Fprintf(&b, "%s\t%s\n", n.hosts[h], h)
	}
	return []byte(b.String())
}

// ResolvConf is the /etc/resolv.conf for the sandbox: the stub resolver
// and no search domains.
func (n *Namespace) ResolvConf() []byte {
	return []byte("nameserver " + StubResolver.Addr().String() + "\noptions timeout:2 attempts:2\n")
}

// Report gives what the namespace saw so far (after Close, the final
// report).
func (n *Namespace) Report() Report {
	n.mu.Lock()
	final := n.final
	n.mu.Unlock()
	if final != nil {
		r := *final
		r.Attempts = slices.Clone(r.Attempts)
		r.DNS = slices.Clone(r.DNS)
		r.Gateways = slices.Clone(r.Gateways)
		return r
	}
	n.cap.drain()
	return n.report()
}

func (n *Namespace) report() Report {
	r := Report{Mode: n.mode}
	n.rec.snapshot(&r)
	r.Gateways = []GatewayUse{}
	for _, p := range n.proxies {
		r.Gateways = append(r.Gateways, p.use())
	}
	if n.link != nil {
		r.BytesIn, r.BytesOut = n.link.counters()
	}
	return r
}

// Close stops the recorder, the stub and the gateways, deletes the veth
// and NAT rules (open mode), unmounts and removes the namespace's file,
// and restores the host's forwarding settings when it was the last open
// namespace. The report stays readable. Close is idempotent.
func (n *Namespace) Close() error {
	n.closeOnce.Do(func() {
		// The services stop first so that the report is final, and
		// the counters are read before the veth goes away: each of
		// those steps keeps the report (keepReport).
		n.closeErr = n.undo.Run()
		if n.closeErr != nil {
			n.log.Warn("network namespace closed with errors", "err", n.closeErr)
		}
	})
	return n.closeErr
}

// keepReport keeps the report as it is now as the final one, which
// Report returns once the namespace is closed.
func (n *Namespace) keepReport() {
	r := n.report()
	n.mu.Lock()
	n.final = &r
	n.mu.Unlock()
}

// newNetns makes a network namespace on a locked thread that then goes
// back to the original namespace, and returns an fd of the new one.
func newNetns() (int, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("unable to open own network namespace: %w", err)}
			return
		}
		defer unix.Close(orig)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("unable to create network namespace: %w", err)}
			return
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			err = fmt.Errorf("unable to open new network namespace: %w", err)
		}
		// A thread that cannot go back stays locked and dies with this
		// goroutine.
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{fd, err}
	}()
	r := <-ch
	return r.fd, r.err
}

// inNetns runs f on a locked thread that joined the namespace fd, then
// puts the thread back (or lets it die, if that fails).
func inNetns(fd int, f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("unable to open own network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("unable to join network namespace: %w", err)
			return
		}
		err = f()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// unmount detaches a bind mount; a path that is not mounted is fine.
func unmount(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
