package fsmon

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// callers maps thread ids to processes and command names. Every
// journaled operation names its caller, so this is on the path of every
// create, open for writing, setattr, rename and unlink.
//
// The first operation of a thread opens its /proc/TID directory and,
// through it, its comm file, kept open, and its status file, read once
// for the thread group id. Later operations of the thread read the comm
// file again (one pread; a thread may rename itself or exec). The
// descriptors name the thread itself, not its id: once the thread is
// gone they fail (ESRCH), even if the id names another thread by then,
// and the entry is made again.
type callers struct {
	mu sync.Mutex
	m  map[uint32]caller
	// closed is set by close: entries are no longer kept.
	closed bool
}

// caller is a thread seen before: its comm file, open, and its thread
// group.
type caller struct {
	comm int
	tgid uint32
}

// maxCallers bounds the table (and its descriptors); it is emptied when
// full.
const maxCallers = 512

// process maps a thread id to its process id and command name. A thread
// that is gone keeps its id and gets no name.
func (c *callers) process(tid uint32) (uint32, string) {
	if tid == 0 {
		return 0, ""
	}
	var buf [64]byte
	c.mu.Lock()
	e, ok := c.m[tid]
	c.mu.Unlock()
	if ok {
		if name, ok := readComm(e.comm, buf[:]); ok {
			return e.tgid, name
		}
		c.mu.Lock()
		if cur, ok := c.m[tid]; ok && cur == e {
			delete(c.m, tid)
			unix.Close(e.comm)
		}
		c.mu.Unlock()
	}
	e, ok = openCaller(tid)
	if !ok {
		return tid, ""
	}
	name, ok := readComm(e.comm, buf[:])
	if !ok {
		unix.Close(e.comm)
		return tid, ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		unix.Close(e.comm)
		return e.tgid, name
	}
	if c.m == nil || len(c.m) >= maxCallers {
		c.closeLocked()
		c.m = make(map[uint32]caller)
	}
	if old, ok := c.m[tid]; ok {
		unix.Close(old.comm)
	}
	c.m[tid] = e
	return e.tgid, name
}

// close closes the table's descriptors.
func (c *callers) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
	c.m = nil
	c.closed = true
}

func (c *callers) closeLocked() {
	for _, e := range c.m {
		unix.Close(e.comm)
	}
}

// openCaller opens the comm file of thread tid and reads its thread
// group from its status file, both through one descriptor of the
// thread's /proc directory.
func openCaller(tid uint32) (caller, bool) {
	dir, err := unix.Open("/proc/"+strconv.FormatUint(uint64(tid), 10), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return caller{}, false
	}
	defer unix.Close(dir)
	comm, err := unix.Openat(dir, "comm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return caller{}, false
	}
	tgid, ok := readTgid(dir)
	if !ok {
		unix.Close(comm)
		return caller{}, false
	}
	return caller{comm: comm, tgid: tgid}, true
}

// readTgid reads the Tgid line of the status file in the /proc
// directory open at dir.
func readTgid(dir int) (uint32, bool) {
	fd, err := unix.Openat(dir, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	// Tgid is the fourth line, after Name (at most 64 bytes escaped),
	// Umask and State.
	var buf [512]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			return uint32(id), err == nil
		}
	}
	return 0, false
}

// readComm reads the comm file open at fd: the thread's command name
// now.
func readComm(fd int, buf []byte) (string, bool) {
	n, err := unix.Pread(fd, buf, 0)
	if err != nil || n == 0 {
		return "", false
	}
	return string(bytes.TrimSuffix(buf[:n], []byte("\n"))), true
}
