package netns

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// requireNetns skips unless the test can make namespaces, and registers
// the checks that nothing of the test is left when it ends: no file or
// mount in the run dir, no veth or nft table of ours, no goroutine of
// this package, and the host's forwarding settings as they were.
func requireNetns(t *testing.T) (runDir string) {
	t.Helper()
	testenv.Require(t, testenv.Root, testenv.Netns)
	runDir = t.TempDir()
	before, err := readForwarding()
	if err != nil {
		t.Fatal(err)
	}
	linksBefore := ourLinks(t)
	t.Cleanup(func() {
		if t.Failed() {
			return // the failure says more than the leftovers
		}
		if ents, _ := os.ReadDir(runDir); len(ents) > 1 || (len(ents) == 1 && ents[0].Name() != stateDir) {
			t.Errorf("run dir not empty after the test: %v", ents)
		}
		if ents, _ := os.ReadDir(filepath.Join(runDir, stateDir)); len(ents) > 0 {
			t.Errorf("state files left after the test: %v", ents)
		}
		if mi, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(mi, []byte(runDir)) {
			t.Errorf("mounts left under %s", runDir)
		}
		if got := ourLinks(t); !slices.Equal(got, linksBefore) {
			t.Errorf("links after the test: %v, before: %v", got, linksBefore)
		}
		if out, err := exec.Command("nft", "list", "tables").CombinedOutput(); err == nil && bytes.Contains(out, []byte(tablePrefix)) {
			t.Errorf("nft tables left: %s", out)
		}
		after, err := readForwarding()
		if err != nil {
			t.Error(err)
		}
		for k, v := range before {
			if after[k] != v {
				t.Errorf("%s = %s after the test, want %s", k, after[k], v)
			}
		}
		checkNoGoroutines(t)
	})
	return runDir
}

// ourLinks lists the host's links made by this package or its tests.
func ourLinks(t *testing.T) []string {
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		if n := l.Attrs().Name; strings.HasPrefix(n, vethPrefix) || strings.HasPrefix(n, "bdt") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// checkNoGoroutines fails if a goroutine still runs code of this package
// outside a test function.
func checkNoGoroutines(t *testing.T) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		left = nil
		for _, g := range strings.Split(string(buf), "\n\n")[1:] {
			if strings.Contains(g, "benchd.dev/netns.") && !strings.Contains(g, "testing.tRunner") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("%d goroutines left, the first:\n%s", len(left), left[0])
}

func newNamespace(t *testing.T, cfg Config) *Namespace {
	t.Helper()
	n, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

// probe is run inside a namespace: each argument is proto:host:port; it
// prints, per target, the errno name (or "ok") and the milliseconds taken.
const probe = `
import errno, socket, sys, time
for arg in sys.argv[2:]:
    proto, rest = arg.split(":", 1)
    host, port = rest.rsplit(":", 1)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
    s = socket.socket(fam, kind)
    s.settimeout(float(sys.argv[1]))
    t = time.monotonic()
    try:
        s.connect((host.strip("[]"), int(port)))
        if proto == "udp":
            s.send(b"x")
            s.recv(1)
        res = "ok"
    except OSError as e:
        res = errno.errorcode.get(e.errno, "timeout") if e.errno else "timeout"
    print(arg, res, int((time.monotonic() - t) * 1000))
`

type probeResult struct {
	res string
	ms  int
}

// runProbe runs probe inside the namespace at path; a target that does
// not answer within timeout gives "timeout".
func runProbe(t *testing.T, path string, timeout time.Duration, targets ...string) map[string]probeResult {
	t.Helper()
	testenv.Require(t, testenv.Python)
	args := append([]string{"--net=" + path, "/usr/bin/python3", "-c", probe, fmt.Sprint(timeout.Seconds())}, targets...)
	out, err := exec.Command("nsenter", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v: %s", err, out)
	}
	got := map[string]probeResult{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r probeResult
		var target string
		if _, err := fmt.Sscan(line, &target, &r.res, &r.ms); err != nil {
			t.Fatalf("probe output %q: %v", line, err)
		}
		got[target] = r
	}
	return got
}

func hasAttempt(r Report, proto, dst string, port uint16) bool {
	return slices.ContainsFunc(r.Attempts, func(a Attempt) bool {
		return a.Proto == proto && a.Dst == netip.MustParseAddr(dst) && a.Port == port
	})
}

func TestClosedRefusesAndRecords(t *testing.T) {
	runDir := requireNetns(t)
	n := newNamespace(t, Config{Mode: Closed, Name: "closed-1", RunDir: runDir})
	if got, want := n.Path(), filepath.Join(runDir, "closed-1"); got != want {
		t.Fatalf("Path() = %s, want %s", got, want)
	}
	start := time.Now()
	got := runProbe(t, n.Path(), 3*time.Second, "tcp:192.0.2.1:80", "tcp:198.18.0.2:8080", "tcp:[2001:db8::1]:443", "udp:192.0.2.1:123")
	t.Logf("four probes in %v", time.Since(start))
	tests := []struct {
		target, proto, dst string
		port               uint16
	}{
		{"tcp:192.0.2.1:80", "tcp", "192.0.2.1", 80},
		{"tcp:198.18.0.2:8080", "tcp", "198.18.0.2", 8080},
		{"tcp:[2001:db8::1]:443", "tcp", "2001:db8::1", 443},
		{"udp:192.0.2.1:123", "udp", "192.0.2.1", 123},
	}
	rep := n.Report()
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			r := got[tt.target]
			if r.res != "ECONNREFUSED" || r.ms > 500 {
				t.Errorf("got %s after %d ms, want ECONNREFUSED in under 500 ms", r.res, r.ms)
			}
			if !hasAttempt(rep, tt.proto, tt.dst, tt.port) {
				t.Errorf("no attempt %s %s:%d in %+v", tt.proto, tt.dst, tt.port, rep.Attempts)
			}
		})
	}
	if len(rep.Attempts) != len(tests) {
		t.Errorf("got %d attempts, want %d: %+v", len(rep.Attempts), len(tests), rep.Attempts)
	}
	if !rep.NetworkUsed() {
		t.Error("NetworkUsed() = false, want true")
	}

	// Nothing left the namespace: lo is its only link, and 192.0.2.1 is
	// routed to it as a local address.
	err := inNetns(n.FD(), func() error {
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		if len(links) != 1 || links[0].Attrs().Name != "lo" {
			return fmt.Errorf("links in the namespace: %d, want only lo", len(links))
		}
		routes, err := netlink.RouteGet(net.ParseIP("192.0.2.1"))
		if err != nil {
			return err
		}
		if len(routes) != 1 || routes[0].Type != unix.RTN_LOCAL || routes[0].LinkIndex != links[0].Attrs().Index {
			return fmt.Errorf("route to 192.0.2.1: %+v, want local via lo", routes)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// sandboxFiles writes the namespace's hosts and resolv.conf to a temp dir.
func sandboxFiles(t *testing.T, n *Namespace) (hosts, resolv string) {
	dir := t.TempDir()
	hosts, resolv = filepath.Join(dir, "hosts"), filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(hosts, n.Hosts(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resolv, n.ResolvConf(), 0o644); err != nil {
		t.Fatal(err)
	}
	return hosts, resolv
}

// getent runs `getent hosts name` in the namespace with the sandbox's
// /etc/hosts and /etc/resolv.conf bound in a private mount namespace.
func getent(t *testing.T, n *Namespace, name string) (string, int, time.Duration) {
	t.Helper()
	hosts, resolv := sandboxFiles(t, n)
	script := fmt.Sprintf("mount --bind %s /etc/hosts && mount --bind %s /etc/resolv.conf && exec getent hosts %s", hosts, resolv, name)
	start := time.Now()
	cmd := exec.Command("nsenter", "--net="+n.Path(), "unshare", "--mount", "sh", "-c", script)
	out, err := cmd.Output()
	took := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("getent: %v", err)
	}
	return strings.TrimSpace(string(out)), cmd.ProcessState.ExitCode(), took
}

// stubQuery asks the stub of n over proto from inside the namespace.
func stubQuery(t *testing.T, n *Namespace, proto, name string, qtype uint16) (int, []netip.Addr) {
	t.Helper()
	var out []byte
	err := inNetns(n.FD(), func() error {
		c, err := net.DialTimeout(proto, StubResolver.String(), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		msg := dnsQuery(4242, name, qtype)
		if proto == "tcp" {
			msg = append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...)
		}
		if _, err := c.Write(msg); err != nil {
			return err
		}
		if proto == "tcp" {
			out, err = readTCPMsg(c)
			return err
		}
		buf := make([]byte, 4096)
		k, err := c.Read(buf)
		out = buf[:k]
		return err
	})
	if err != nil {
		t.Fatalf("query %s over %s: %v", name, proto, err)
	}
	return dnsAnswer(t, out, 4242)
}

func TestClosedDNS(t *testing.T) {
	runDir := requireNetns(t)
	testenv.Require(t, testenv.Userns) // getent runs in a mount namespace
	gw := Gateway{Name: "model", Host: "api.example.test", Port: 443}
	n := newNamespace(t, Config{Name: "dns", RunDir: runDir, Gateways: []Gateway{gw}})

	out, code, took := getent(t, n, "example.invalid")
	if code != 2 || out != "" || took > time.Second {
		t.Errorf("getent hosts example.invalid: exit %d, %q after %v; want exit 2, no output, under 1 s", code, out, took)
	}
	out, code, _ = getent(t, n, "api.example.test")
	if code != 0 || !strings.HasPrefix(out, "127.0.1.1 ") {
		t.Errorf("getent hosts api.example.test: exit %d, %q; want 127.0.1.1", code, out)
	}

	tests := []struct {
		name, proto, qname string
		qtype              uint16
		wantRcode          int
		wantAddr           string
		wantAnswer         string
	}{
		{"gateway over udp", "udp", "API.example.test", typeA, rcodeOK, "127.0.1.1", AnswerGateway},
		{"gateway over tcp", "tcp", "api.example.test", typeA, rcodeOK, "127.0.1.1", AnswerGateway},
		{"other over tcp", "tcp", "pypi.org", typeAAAA, rcodeNX, "", AnswerNXDomain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, addrs := stubQuery(t, n, tt.proto, tt.qname, tt.qtype)
			if rc != tt.wantRcode || (tt.wantAddr == "") != (len(addrs) == 0) || (len(addrs) > 0 && addrs[0].String() != tt.wantAddr) {
				t.Fatalf("got rcode %d, %v; want %d, %q", rc, addrs, tt.wantRcode, tt.wantAddr)
			}
			rep := n.Report()
			last := rep.DNS[len(rep.DNS)-1]
			if last.Name != strings.ToLower(tt.qname) || last.Type != typeName(tt.qtype) || last.Answer != tt.wantAnswer {
				t.Fatalf("last query recorded %+v, want %s %s %s", last, tt.qname, typeName(tt.qtype), tt.wantAnswer)
			}
		})
	}

	rep := n.Report()
	var invalid []string
	for _, q := range rep.DNS {
		if q.Name == "example.invalid" {
			invalid = append(invalid, q.Type+" "+q.Answer)
		}
	}
	slices.Sort(invalid)
	if !slices.Contains(invalid, "A nxdomain") {
		t.Errorf("queries for example.invalid: %q, want an A answered nxdomain", invalid)
	}
	if len(rep.Attempts) != 0 {
		t.Errorf("attempts: %+v, want none (the stub is on loopback)", rep.Attempts)
	}
	if !rep.NetworkUsed() {
		t.Error("NetworkUsed() = false after a lookup of example.invalid")
	}

	// A query sent straight to a server other than the stub is refused at
	// once and recorded as a query and an attempt.
	got := runProbeDNS(t, n.Path(), "192.0.2.1", "direct.example")
	if got != "ECONNREFUSED" {
		t.Errorf("direct query: %s, want ECONNREFUSED", got)
	}
	rep = n.Report()
	if !hasAttempt(rep, "udp", "192.0.2.1", 53) {
		t.Errorf("no attempt udp 192.0.2.1:53 in %+v", rep.Attempts)
	}
	if !slices.ContainsFunc(rep.DNS, func(q Query) bool {
		return q.Name == "direct.example" && q.Answer == AnswerDirect && q.Server == netip.MustParseAddrPort("192.0.2.1:53")
	}) {
		t.Errorf("no direct query for direct.example in %+v", rep.DNS)
	}
}

// runProbeDNS sends a DNS query for name straight to server:53 from
// inside the namespace and gives the errno name of the answer.
func runProbeDNS(t *testing.T, path, server, name string) string {
	t.Helper()
	testenv.Require(t, testenv.Python)
	q := dnsQuery(1, name, typeA)
	script := fmt.Sprintf(`
import errno, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
s.connect((%q, 53))
s.send(bytes.fromhex(%q))
try:
    s.recv(512)
    print("ok")
except OSError as e:
    print(errno.errorcode.get(e.errno, "timeout") if e.errno else "timeout")
`, server, fmt.Sprintf("%x", q))
	out, err := exec.Command("nsenter", "--net="+path, "/usr/bin/python3", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// echoServer serves TCP echo on ln until the test ends. Each connection
// first gets a line with the peer's address when greet is set.
func echoServer(t *testing.T, ln net.Listener, greet bool) {
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if greet {
					fmt.Fprintf(c, "peer %s\n", c.RemoteAddr().(*net.TCPAddr).IP)
				}
				io.Copy(c, c)
			}()
		}
	}()
}

// echoClient is run inside a namespace: it connects to argv[1]:argv[2],
// sends argv[3] bytes, half-closes, and prints every byte it got back.
const echoClient = `
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(b"z" * int(sys.argv[3]))
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
sys.stdout.write(data.decode())
`

func runEcho(t *testing.T, path string, addr netip.AddrPort, size int) string {
	t.Helper()
	testenv.Require(t, testenv.Python)
	out, err := exec.Command("nsenter", "--net="+path, "/usr/bin/python3", "-c", echoClient,
		addr.Addr().String(), fmt.Sprint(addr.Port()), fmt.Sprint(size)).CombinedOutput()
	if err != nil {
		t.Fatalf("echo client: %v: %s", err, out)
	}
	return string(out)
}

func TestGateway(t *testing.T) {
	runDir := requireNetns(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, ln, false)
	port := ln.Addr().(*net.TCPAddr).Port
	gws := []Gateway{
		{Name: "echo", Host: "127.0.0.1", Port: port},
		{Name: "model", Host: "api.example.test", Port: 443},
		{Name: "model-alt", Host: "api.example.test", Port: 8443},
	}
	n := newNamespace(t, Config{Name: "gw", RunDir: runDir, Gateways: gws, Hostname: "box"})

	wantHosts := "127.0.0.1\tlocalhost box\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.2\tapi.example.test\n"
	if got := string(n.Hosts()); got != wantHosts {
		t.Errorf("Hosts() = %q, want %q", got, wantHosts)
	}
	addrs := map[string]string{"echo": "127.0.1.1:" + fmt.Sprint(port), "model": "127.0.1.2:443", "model-alt": "127.0.1.2:8443"}
	for name, want := range addrs {
		if got, ok := n.GatewayAddr(name); !ok || got.String() != want {
			t.Errorf("GatewayAddr(%s) = %v, %v; want %s", name, got, ok, want)
		}
	}

	addr, _ := n.GatewayAddr("echo")
	const size = 100000
	for range 2 {
		if got := runEcho(t, n.Path(), addr, size); len(got) != size || strings.Trim(got, "z") != "" {
			t.Fatalf("echo through the gateway: got %d bytes, want %d", len(got), size)
		}
	}
	// The real endpoint is not reachable from inside the namespace.
	if r := runProbe(t, n.Path(), 3*time.Second, fmt.Sprintf("tcp:127.0.0.1:%d", port))[fmt.Sprintf("tcp:127.0.0.1:%d", port)]; r.res != "ECONNREFUSED" {
		t.Errorf("direct connection to the endpoint: %s, want ECONNREFUSED", r.res)
	}

	rep := n.Report()
	var use GatewayUse
	for _, g := range rep.Gateways {
		if g.Name == "echo" {
			use = g
		}
	}
	if use.Conns != 2 || use.BytesOut != 2*size || use.BytesIn != 2*size || use.DialErrors != 0 {
		t.Errorf("echo gateway use %+v, want 2 conns, %d bytes each way", use, 2*size)
	}
	if rep.NetworkUsed() {
		t.Errorf("NetworkUsed() = true for gateway traffic only: %+v", rep)
	}
	if len(rep.Gateways) != 3 {
		t.Errorf("got %d gateways in the report, want 3", len(rep.Gateways))
	}
}

// serverHost is the test's stand-in for a server on the internet:
// 198.18.0.2:8080 (a benchmarking range, never refused), an echo server
// that first says whom it sees as its peer.
func serverHost(t *testing.T) netip.AddrPort {
	return testHost(t, "", netip.MustParseAddr("198.18.0.1"), netip.MustParseAddrPort("198.18.0.2:8080"))
}

// testHost makes a host only this test reaches: a network namespace of
// its own whose eth0 has peer's address in a /30 whose other address,
// hostEnd, is the host end of a veth bdt<pid><tag> in the host's
// namespace; on peer it serves serverHost's greeting echo.
func testHost(t *testing.T, tag string, hostEnd netip.Addr, peer netip.AddrPort) netip.AddrPort {
	t.Helper()
	fd, err := newNetns()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	name := fmt.Sprintf("bdt%d%s", os.Getpid()%100000, tag)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			netlink.LinkDel(l)
		}
	})
	host, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
	if err := netlink.AddrAdd(host, &netlink.Addr{IPNet: &net.IPNet{IP: hostEnd.AsSlice(), Mask: net.CIDRMask(30, 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	err = inNetns(fd, func() error {
		os.WriteFile("/proc/sys/net/ipv6/conf/eth0/disable_ipv6", []byte("1"), 0)
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(eth0, &netlink.Addr{IPNet: &net.IPNet{IP: peer.Addr().AsSlice(), Mask: net.CIDRMask(30, 32)}}); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(eth0); err != nil {
			return err
		}
		ln, err = net.Listen("tcp4", peer.String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, ln, true)
	return peer
}

// fakeResolver answers every A question on 127.0.0.1 (UDP) with
// 192.0.2.7.
func fakeResolver(t *testing.T) netip.AddrPort {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q, err := parseQuestion(buf[:k])
			if err != nil {
				continue
			}
			pc.WriteTo(reply(buf[:k], q, rcodeOK, []netip.Addr{netip.MustParseAddr("192.0.2.7")}), from)
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// requireNft skips (fails in CI) without the nft command open mode needs.
func requireNft(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		if testenv.InCI() {
			t.Fatalf("open mode needs nft: %v", err)
		}
		t.Skipf("skipping: open mode needs nft: %v", err)
	}
}

func TestOpen(t *testing.T) {
	runDir := requireNetns(t)
	requireNft(t)
	testenv.Require(t, testenv.Python)
	fwdBefore, _ := os.ReadFile(ipForward)
	server := serverHost(t)
	resolver := fakeResolver(t)

	var nss []*Namespace
	for i := range 2 {
		nss = append(nss, newNamespace(t, Config{Mode: Open, Name: fmt.Sprintf("open-%d", i), RunDir: runDir, Resolvers: []netip.AddrPort{resolver}}))
	}
	if a, b := nss[0].link.subnet, nss[1].link.subnet; a.Overlaps(b) {
		t.Fatalf("two open namespaces share addresses: %v and %v", a, b)
	}
	if fwd, _ := os.ReadFile(ipForward); strings.TrimSpace(string(fwd)) != "1" {
		t.Fatalf("ip_forward = %s with open namespaces, want 1", fwd)
	}

	sizes := []int{30000, 70000}
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i, n := range nss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command("nsenter", "--net="+n.Path(), "/usr/bin/python3", "-c", echoClient,
				server.Addr().String(), fmt.Sprint(server.Port()), fmt.Sprint(sizes[i])).CombinedOutput()
			if err != nil {
				out = append(out, []byte(err.Error())...)
			}
			outs[i] = string(out)
		}()
	}
	wg.Wait()
	for i, n := range nss {
		t.Run(n.Name(), func(t *testing.T) {
			greeting, rest, _ := strings.Cut(outs[i], "\n")
			if greeting != "peer 198.18.0.1" {
				t.Errorf("server saw %q, want peer 198.18.0.1 (the host, after NAT)", greeting)
			}
			if len(rest) != sizes[i] {
				t.Errorf("echoed %d bytes, want %d", len(rest), sizes[i])
			}
			rep := n.Report()
			if !hasAttempt(rep, "tcp", "198.18.0.2", 8080) || len(rep.Attempts) != 1 {
				t.Errorf("attempts %+v, want one to tcp 198.18.0.2:8080", rep.Attempts)
			}
			// The link counts headers too; the other namespace's traffic
			// must not show here.
			lo, hi := uint64(sizes[i]), uint64(sizes[i])+60000
			if rep.BytesOut < lo || rep.BytesOut > hi || rep.BytesIn < lo || rep.BytesIn > hi {
				t.Errorf("bytes in %d, out %d; want each in [%d, %d]", rep.BytesIn, rep.BytesOut, lo, hi)
			}
		})
	}

	// IPv6 fails at once; the host itself and the other namespace are
	// refused at once.
	hostEnd := fmt.Sprintf("tcp:%s:22", nss[0].link.hostAddr)
	other := fmt.Sprintf("tcp:%s:22", nss[1].link.nsAddr)
	got := runProbe(t, nss[0].Path(), 5*time.Second, "tcp:[2001:db8::1]:443", hostEnd, other)
	probes := []struct{ target, want string }{
		{"tcp:[2001:db8::1]:443", "ENETUNREACH"},
		{hostEnd, "EHOSTUNREACH"},
		{other, "EHOSTUNREACH"},
	}
	for _, p := range probes {
		if got[p.target].res != p.want {
			t.Errorf("%s: got %s, want %s", p.target, got[p.target].res, p.want)
		}
	}

	// DNS is relayed to the configured resolver and recorded.
	rc, addrs := stubQuery(t, nss[0], "udp", "files.example.test", typeA)
	if rc != rcodeOK || len(addrs) != 1 || addrs[0].String() != "192.0.2.7" {
		t.Errorf("relayed query: rcode %d, %v; want 0, 192.0.2.7", rc, addrs)
	}
	rep := nss[0].Report()
	if len(rep.DNS) != 1 || rep.DNS[0].Name != "files.example.test" || rep.DNS[0].Answer != AnswerForwarded {
		t.Errorf("queries %+v, want files.example.test forwarded", rep.DNS)
	}
	if len(nss[1].Report().DNS) != 0 {
		t.Errorf("the other namespace recorded queries: %+v", nss[1].Report().DNS)
	}

	// Closing one keeps forwarding on for the other.
	if err := nss[0].Close(); err != nil {
		t.Fatal(err)
	}
	if fwd, _ := os.ReadFile(ipForward); strings.TrimSpace(string(fwd)) != "1" {
		t.Errorf("ip_forward = %s with one open namespace left, want 1", fwd)
	}
	final := nss[0].Report()
	if final.BytesOut < uint64(sizes[0]) || !hasAttempt(final, "tcp", "198.18.0.2", 8080) {
		t.Errorf("report after Close lost its records: %+v", final)
	}
	if err := nss[1].Close(); err != nil {
		t.Fatal(err)
	}
	if fwd, _ := os.ReadFile(ipForward); !bytes.Equal(fwd, fwdBefore) {
		t.Errorf("ip_forward = %s after the last Close, want %s", fwd, fwdBefore)
	}
}

// TestOpenRefusesNeighbourhood puts test hosts at a link-local, a
// private (RFC 1918) and a CGNAT address, and one on a subnet named by
// Config.Neighbourhood (as benchd names the host's own subnets), each
// reachable from the host's namespace; from an open namespace every one
// is refused at once and recorded as refused, while the internet's
// stand-in is reached and recorded as not.
func TestOpenRefusesNeighbourhood(t *testing.T) {
	runDir := requireNetns(t)
	requireNft(t)
	testenv.Require(t, testenv.Python)
	internet := serverHost(t)
	near := []struct {
		name       string
		tag        string
		host, peer string
	}{
		{"link-local", "a", "169.254.213.1", "169.254.213.2:80"},
		{"private", "b", "172.31.213.1", "172.31.213.2:80"},
		{"cgnat", "c", "100.64.213.1", "100.64.213.2:80"},
		{"host subnet", "d", "198.19.213.1", "198.19.213.2:80"},
	}
	targets := []string{"tcp:" + internet.String()}
	for _, h := range near {
		peer := testHost(t, h.tag, netip.MustParseAddr(h.host), netip.MustParseAddrPort(h.peer))
		// The control: the host itself reaches each one.
		c, err := net.DialTimeout("tcp", peer.String(), 10*time.Second)
		if err != nil {
			t.Fatalf("%s test host %s not reachable from the host: %v", h.name, peer, err)
		}
		greeting, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || !strings.HasPrefix(greeting, "peer ") {
			t.Fatalf("%s test host %s: greeting %q, %v", h.name, peer, greeting, err)
		}
		targets = append(targets, "tcp:"+peer.String())
	}
	// A datagram to a multicast group: it goes no further than the host
	// end of the test's own veth, and is recorded as refused.
	// (It meets no listener and no error comes back: its own short
	// probe, whose result is not checked.)
	group := "udp:239.255.213.1:9"

	n := newNamespace(t, Config{Mode: Open, Name: "near", RunDir: runDir,
		Neighbourhood: []netip.Prefix{netip.MustParsePrefix("198.19.213.0/30")}})
	got := runProbe(t, n.Path(), 5*time.Second, targets...)
	runProbe(t, n.Path(), 200*time.Millisecond, group)
	targets = append(targets, group)
	if r := got[targets[0]]; r.res != "ok" {
		t.Errorf("the internet's stand-in %s: %s, want ok", internet, r.res)
	}
	for i, h := range near {
		if r := got[targets[i+1]]; r.res != "EHOSTUNREACH" {
			t.Errorf("%s host %s: %s after %d ms, want EHOSTUNREACH at once", h.name, h.peer, r.res, r.ms)
		}
	}
	rep := n.Report()
	for _, target := range targets {
		proto, rest, _ := strings.Cut(target, ":")
		ap := netip.MustParseAddrPort(rest)
		i := slices.IndexFunc(rep.Attempts, func(a Attempt) bool {
			return a.Proto == proto && a.Dst == ap.Addr() && a.Port == ap.Port()
		})
		if i < 0 {
			t.Errorf("no attempt recorded for %s: %+v", target, rep.Attempts)
			continue
		}
		if want := target != targets[0]; rep.Attempts[i].Refused != want {
			t.Errorf("%s recorded with refused %v, want %v", target, rep.Attempts[i].Refused, want)
		}
	}
}

// TestHostSubnets checks that the host's subnets include a test link's
// and leave loopback out.
func TestHostSubnets(t *testing.T) {
	requireNetns(t)
	testHost(t, "e", netip.MustParseAddr("198.19.214.1"), netip.MustParseAddrPort("198.19.214.2:80"))
	got, err := HostSubnets()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, netip.MustParsePrefix("198.19.214.0/30")) {
		t.Errorf("HostSubnets() = %v, want 198.19.214.0/30 among them", got)
	}
	for _, p := range got {
		if p.Addr().IsLoopback() {
			t.Errorf("HostSubnets() has loopback %v", p)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"bad mode", Config{Mode: "half", RunDir: "/nonexistent"}, ErrInvalid},
		{"bad name", Config{Name: "../x", RunDir: "/nonexistent"}, ErrInvalid},
		{"relative run dir", Config{RunDir: "run"}, ErrInvalid},
		{"pool too big", Config{Pool: netip.MustParsePrefix("10.0.0.0/8"), RunDir: "/nonexistent"}, ErrInvalid},
		{"ipv6 pool", Config{Pool: netip.MustParsePrefix("fd00::/64"), RunDir: "/nonexistent"}, ErrInvalid},
		{"same gateway name", Config{RunDir: "/nonexistent", Gateways: []Gateway{{Name: "a", Host: "h", Port: 1}, {Name: "a", Host: "h", Port: 2}}}, ErrInvalid},
		{"same endpoint", Config{RunDir: "/nonexistent", Gateways: []Gateway{{Name: "a", Host: "h", Port: 1}, {Name: "b", Host: "h", Port: 1}}}, ErrInvalid},
		{"bad gateway", Config{RunDir: "/nonexistent", Gateways: []Gateway{{Name: "a", Host: "h h", Port: 1}}}, ErrInvalid},
		{"same endpoint but a dot", Config{RunDir: "/nonexistent", Gateways: []Gateway{{Name: "a", Host: "h", Port: 1}, {Name: "b", Host: "h.", Port: 1}}}, ErrInvalid},
		{"same listen port, HTTP and raw", Config{RunDir: "/nonexistent", Gateways: []Gateway{{Name: "a", Host: "h", Port: 80}, {Name: "b", Host: "h", Port: 443, ListenPort: 80, Handler: http.NotFoundHandler()}}}, ErrInvalid},
		{"bad listen port", Config{RunDir: "/nonexistent", Gateways: []Gateway{{Name: "a", Host: "h", Port: 443, ListenPort: 70000, Handler: http.NotFoundHandler()}}}, ErrInvalid},
		{"gateway to localhost", Config{RunDir: "/nonexistent", Gateways: []Gateway{{Name: "a", Host: "localhost", Port: 1}}}, ErrInvalid},
		{"gateway to own name", Config{RunDir: "/nonexistent", Hostname: "box", Gateways: []Gateway{{Name: "a", Host: "box", Port: 1}}}, ErrInvalid},
		{"bad host name", Config{RunDir: "/nonexistent", Hostname: "a b"}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := New(t.Context(), tt.cfg)
			if !errors.Is(err, tt.want) {
				if n != nil {
					n.Close()
				}
				t.Fatalf("New: got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNameConflict(t *testing.T) {
	runDir := requireNetns(t)
	newNamespace(t, Config{Name: "same", RunDir: runDir})
	n, err := New(t.Context(), Config{Name: "same", RunDir: runDir})
	if !errors.Is(err, ErrConflict) {
		if n != nil {
			n.Close()
		}
		t.Fatalf("second New with the same name: got %v, want ErrConflict", err)
	}
}

func TestCleanupAfterCrash(t *testing.T) {
	runDir := requireNetns(t)
	requireNft(t)
	live := newNamespace(t, Config{Name: "alive", RunDir: runDir})
	crashed := newNamespace(t, Config{Mode: Open, Name: "crashed", RunDir: runDir})
	// Make the second look like the namespace of a process that died.
	statePath := filepath.Join(runDir, stateDir, "crashed.json")
	unregisterLive(statePath)

	if err := Cleanup(runDir); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if _, err := os.Stat(crashed.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed namespace's file is still there: %v", err)
	}
	if _, err := os.Stat(statePath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed namespace's state is still there: %v", err)
	}
	if _, err := netlink.LinkByName(crashed.link.hostIf); err == nil {
		t.Errorf("veth %s is still there", crashed.link.hostIf)
	}
	if exec.Command("nft", "list", "table", "ip", crashed.link.table()).Run() == nil {
		t.Errorf("nft table %s is still there", crashed.link.table())
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); !bytes.Contains(mi, []byte(live.Path())) {
		t.Errorf("Cleanup unmounted the live namespace %s", live.Path())
	}
	if _, err := os.Stat(filepath.Join(runDir, stateDir, "alive.json")); err != nil {
		t.Errorf("Cleanup removed the live namespace's state: %v", err)
	}
	// Close after Cleanup finds nothing left to undo and does not fail.
	if err := crashed.Close(); err != nil {
		t.Errorf("Close after Cleanup: %v", err)
	}
}

func TestCleanupMissingDir(t *testing.T) {
	if err := Cleanup(filepath.Join(t.TempDir(), "none")); err != nil {
		t.Fatalf("Cleanup of a missing run dir: %v", err)
	}
}

// TestSetupLeavesThreadsClean checks that no thread of the process is
// left in a namespace: every thread's netns is the process's own.
func TestSetupLeavesThreadsClean(t *testing.T) {
	runDir := requireNetns(t)
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		n, err := New(context.Background(), Config{Name: fmt.Sprintf("t%d", i), RunDir: runDir})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		ns, err := os.Readlink(filepath.Join("/proc/self/task", task.Name(), "ns/net"))
		if err != nil {
			continue // the thread exited
		}
		if ns != own {
			t.Errorf("thread %s is in %s, want %s", task.Name(), ns, own)
		}
	}
}

func benchmarkNewClose(b *testing.B, mode Mode) {
	testenv.Require(b, testenv.Root, testenv.Netns)
	runDir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		n, err := New(context.Background(), Config{Mode: mode, Name: fmt.Sprintf("b%d", i), RunDir: runDir})
		if err != nil {
			b.Fatal(err)
		}
		if err := n.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewCloseClosed(b *testing.B) { benchmarkNewClose(b, Closed) }

func BenchmarkNewCloseOpen(b *testing.B) {
	requireNft(b)
	benchmarkNewClose(b, Open)
}

// TestCaptureFilter reads the packet socket directly, under the
// recorder: only outgoing SYNs and datagrams to non-loopback
// destinations may pass the kernel filter, each once.
func TestCaptureFilter(t *testing.T) {
	requireNetns(t)
	fd, err := newNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var c *capture
	err = inNetns(fd, func() error {
		idx, err := (&Namespace{mode: Closed}).setupInside()
		if err != nil {
			return err
		}
		if c, err = openCapture(idx, newRecorder()); err != nil {
			return err
		}
		send := func(network, addr string) {
			conn, err := net.DialTimeout(network, addr, time.Second)
			if err == nil {
				conn.Write([]byte("x"))
				conn.Close()
			}
		}
		for range 3 {
			send("udp", "127.0.0.1:9")
		}
		send("udp", "[::1]:9")
		send("tcp", "127.0.0.1:9")
		send("tcp", "[::1]:9")
		send("tcp", "192.0.2.1:80")
		send("udp", "192.0.2.1:53")
		send("udp", "[2001:db8::1]:9")
		send("tcp", "[2001:db8::1]:80")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.f.Close()
	var got []string
	c.rc.Control(func(fd uintptr) {
		buf := make([]byte, 2048)
		for {
			n, err := unix.Read(int(fd), buf)
			if err != nil {
				return
			}
			p, ok := parsePacket(buf[:n])
			if !ok {
				got = append(got, fmt.Sprintf("unparsed %x", buf[:min(n, 24)]))
				continue
			}
			got = append(got, fmt.Sprintf("%d %s", p.proto, p.dst))
		}
	})
	want := []string{"6 192.0.2.1:80", "17 192.0.2.1:53", "17 [2001:db8::1]:9", "6 [2001:db8::1]:80"}
	if !slices.Equal(got, want) {
		t.Fatalf("packets through the filter: got %q, want %q", got, want)
	}
}
