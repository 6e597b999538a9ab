package netns

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Classic BPF ancillary offsets (linux/filter.h).
const (
	skfAdOff      = 0xfffff000 // SKF_AD_OFF, -0x1000
	skfAdProtocol = skfAdOff + 0
	skfAdPktType  = skfAdOff + 4
	captureSnap   = 512 // enough for the headers and a DNS question
)

// captureFilter keeps outgoing IPv4 and IPv6 packets that are TCP SYNs
// without ACK or UDP datagrams, to destinations other than 127.0.0.0/8
// and ::1; the socket is SOCK_DGRAM, so offset 0 is the network header.
// Each packet on lo is seen twice (sent, then received): only the sent
// copy passes.
var captureFilter = assemble([]insn{
	{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: skfAdPktType},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: unix.PACKET_OUTGOING, jf: "drop"},
	{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: skfAdProtocol},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: unix.ETH_P_IP, jf: "ipv6"},
	{op: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, k: 16}, // first byte of the destination
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: 127, jt: "drop"},
	{op: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, k: 9}, // protocol
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: protoUDP, jt: "accept"},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: protoTCP, jf: "drop"},
	{op: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, k: 6}, // flags and fragment offset
	{op: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: 0x1fff, jt: "drop"},
	{op: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, k: 0}, // X = header length
	{op: unix.BPF_LD | unix.BPF_B | unix.BPF_IND, k: 13}, // TCP flags
	{op: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: tcpSYN | tcpACK},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: tcpSYN, jt: "accept", jf: "drop"},
	{label: "ipv6", op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: unix.ETH_P_IPV6, jf: "drop"},
	{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: 24}, // destination: ::1?
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: 0, jf: "proto6"},
	{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: 28},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: 0, jf: "proto6"},
	{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: 32},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: 0, jf: "proto6"},
	{op: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: 36},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: 1, jt: "drop"},
	{label: "proto6", op: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, k: 6}, // next header
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: protoUDP, jt: "accept"},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: protoTCP, jf: "drop"},
	{op: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, k: 40 + 13}, // TCP flags
	{op: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: tcpSYN | tcpACK},
	{op: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: tcpSYN, jt: "accept", jf: "drop"},
	{label: "accept", op: unix.BPF_RET | unix.BPF_K, k: captureSnap},
	{label: "drop", op: unix.BPF_RET | unix.BPF_K, k: 0},
})

// insn is a classic BPF instruction whose jumps name their targets.
type insn struct {
	label  string
	op     uint16
	k      uint32
	jt, jf string // "" falls through
}

// assemble resolves the labels of prog into forward jump offsets.
func assemble(prog []insn) []unix.SockFilter {
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	off := func(i int, label string) uint8 {
		if label == "" {
			return 0
		}
		t, ok := at[label]
		if !ok || t <= i || t-i-1 > 255 {
			panic("bad jump to " + label)
		}
		return uint8(t - i - 1)
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		out[i] = unix.SockFilter{Code: in.op, K: in.k, Jt: off(i, in.jt), Jf: off(i, in.jf)}
	}
	return out
}

// capture reads the outbound SYNs and datagrams of one interface from an
// AF_PACKET socket into a recorder. The socket belongs to the network
// namespace of the thread that made it (openCapture must run inside the
// namespace); it may then be read from any goroutine.
type capture struct {
	f    *os.File
	rc   syscall.RawConn
	rec  *recorder
	done chan struct{}

	mu  sync.Mutex // serializes reads, so packets are recorded in order
	buf []byte
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// openCapture opens the packet socket on interface ifindex of the
// calling thread's network namespace.
func openCapture(ifindex int, rec *recorder) (*capture, error) {
	// Protocol 0 receives nothing until bind, so no packet passes
	// unfiltered.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("unable to open packet socket: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(captureFilter)), Filter: &captureFilter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("unable to attach packet filter: %w", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20) // best effort
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("unable to bind packet socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "packet")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("unable to poll packet socket: %w", err)
	}
	return &capture{f: f, rc: rc, rec: rec, done: make(chan struct{}), buf: make([]byte, captureSnap)}, nil
}

// start reads packets until close.
func (c *capture) start() {
	go func() {
		defer close(c.done)
		for {
			err := c.rc.Read(func(fd uintptr) bool {
				c.drainFD(int(fd))
				return false // wait until readable again
			})
			if err != nil {
				return // closed
			}
		}
	}()
}

// drain records every packet already queued: after it, Report reflects
// every packet sent before the call.
func (c *capture) drain() {
	c.rc.Control(func(fd uintptr) { c.drainFD(int(fd)) })
}

func (c *capture) drainFD(fd int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Packets the kernel dropped (a full receive buffer) are attempts
	// that could not be recorded; reading the statistics resets them.
	if st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil && st.Drops > 0 {
		c.rec.addDropped(int64(st.Drops))
	}
	for {
		n, err := unix.Read(fd, c.buf)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return // EAGAIN: nothing left
		}
		c.rec.addPacket(time.Now(), c.buf[:n])
	}
}

// close drains what is queued, closes the socket and waits for the reader.
func (c *capture) close() error {
	c.drain()
	err := c.f.Close()
	<-c.done
	return err
}
