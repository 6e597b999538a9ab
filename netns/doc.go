// Package netns gives each attempt a network namespace and records its
// network use: every outbound connection attempt, every DNS question, the
// bytes through each gateway, and (open mode) the bytes in and out.
//
// # Modes
//
// A Closed namespace has only lo, up, and routes every address to it
// ("local 0.0.0.0/0" and "local ::/0" in table local). An outbound TCP
// connection therefore meets no listener and is refused at once
// (ECONNREFUSED), a UDP datagram gets port unreachable: nothing hangs and
// no packet leaves the namespace.
//
// An Open namespace gets real connectivity: a veth pair whose host end
// is bdn<slot> and whose inner end is eth0, addressed from a /30 of
// Config.Pool (10.213.0.0/16 by default) that no other namespace of this
// process, host address or host route uses; a default route via the host
// end; and an nft table benchd_bdn<slot> that masquerades the /30 and
// rejects (ICMP "administratively prohibited": connect fails at once with
// EHOSTUNREACH) new connections from it to the host itself, to other open
// namespaces and to the host's neighbourhood: the Neighbourhood list
// (RFC 1918, CGNAT, link-local with the cloud metadata address
// 169.254.169.254, multicast, "this network", reserved and broadcast),
// the pool, and Config.Neighbourhood, where benchd names the host's own
// connected subnets (HostSubnets) so that the machines on the host's
// links are out of reach whatever their addresses. Each such connection
// is still recorded, with Attempt.Refused set. IPv4 forwarding is turned on for the first open
// namespace and net.ipv4.ip_forward and every interface's forwarding
// setting are restored after the last one (a process-wide count). IPv6 is
// disabled on the veth, so IPv6 connections fail at once (ENETUNREACH):
// ULA, link-local and multicast IPv6 with the rest.
// Open mode needs the nft command (Debian package nftables).
//
// # Records
//
// An AF_PACKET socket on lo (closed) or eth0 (open), made inside the
// namespace, sees each outgoing IPv4 or IPv6 TCP SYN and UDP datagram
// through a BPF filter. Each new flow to a destination that is not
// loopback (127.0.0.0/8, ::1) becomes an Attempt with its time, protocol,
// address and port: traffic to loopback, which includes the DNS stub and
// the gateways, never leaves the namespace and is not network use. A
// datagram to port 53 of any other address also yields a Query with
// Answer "direct".
//
// Every namespace has a DNS stub at 127.0.0.53:53 (UDP and TCP), which
// ResolvConf names. It records each question; answers localhost and
// Config.Hostname with loopback, and a gateway's host name with the
// gateway's loopback address; and answers anything else with NXDOMAIN at
// once (closed) or by relaying the question to Config.Resolvers, by
// default the host's nameservers, from the host's namespace (open).
//
// Report.NetworkUsed is the test a grader applies: any attempt, or any
// question for a name that is not localhost, Config.Hostname or a
// gateway's.
//
// Records are capped (10,000 attempts and 10,000 questions); beyond the
// cap only the Dropped counts grow.
//
// # Gateways
//
// A gateway, written name=host:port (ParseGateway), is an endpoint the
// namespace may reach. Each distinct host gets a loopback address
// 127.0.1.N (N from 1, in the order of Config.Gateways); a proxy listens
// there on the gateway's port inside the namespace, dials host:port from
// the host's namespace, and copies bytes both ways untouched (TLS passes
// through), counting connections and bytes. Hosts gives the /etc/hosts
// that maps each host name to its address; a gateway whose host is an IP
// literal is reached at GatewayAddr instead (ListenAddrs gives the
// addresses before the namespace exists).
//
// A gateway given a Handler (an http.Handler) is an HTTP gateway: its
// listener serves plain HTTP with that handler, on Gateway.ListenPort
// (default the gateway's port), and the proxy dials nothing itself; what
// the handler does with a request (package modelgw forwards it to a
// model API and records it) is no concern of this package, which only
// bounds the connections, counts them and their bytes, and on Close
// closes them and waits for the handler's requests to return.
//
// A gateway takes at most MaxGatewayConns connections open at once, and
// dials at most MaxGatewayDials of them to the endpoint at a time; a
// connection past the bound is closed at once and counted as Refused.
// A failed dial to the endpoint while the namespace is open is counted in
// DialErrors, with the last error in LastDialError (a dial cut short by
// Close is not). The bounds are there so that the agent cannot make
// dials fail by the number of connections it opens: a dial error is the
// endpoint's failure, never the agent's, and its caller may say so.
//
// Probe dials each gateway's endpoint once from the host's namespace, with
// a timeout: called before an attempt starts, it finds a dead endpoint
// (an error wrapping ErrUpstream naming the gateway, its endpoint and the
// dial error) before the agent can waste its time on it.
//
// # Lifetime and threads
//
// New makes the namespace with unshare(CLONE_NEWNET) on a locked OS
// thread that then returns to the host's namespace (or, if it cannot,
// exits locked so the thread dies). Every socket that must live in the
// namespace is made in one pass on a thread that joined it, and is then
// served by ordinary goroutines: no goroutine ever runs in the namespace.
//
// Path is a bind mount of the namespace's nsfs file at RunDir/Name
// (RunDir is /run/benchd/netns by default), for setns(2) or
// `nsenter --net=PATH`; FD is an open descriptor of it. A state file in
// RunDir/.state records the owner, the veth, the nft table and the
// forwarding settings to restore, so that Cleanup can undo what a crashed
// process left. Close stops every goroutine, closes every socket,
// deletes the veth and nft table, unmounts and removes the file, and
// keeps the final Report.
//
// Only one process should use a run dir; namespaces of different
// processes never share a veth name or an address, but the forwarding
// count is per process.
package netns
