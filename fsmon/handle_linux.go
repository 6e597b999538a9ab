package fsmon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"benchd.dev/fsmon/journal"
)

// readHandle is a file open read-only. Reads go through passthrough or
// the kernel's page cache (see iomode_linux.go); ioctls are refused.
type readHandle struct {
	*gofs.LoopbackFile
	n *node
	// mode is how the kernel does the handle's I/O; a handle read
	// through the page cache uses the node's shared backing file
	// (iomode_linux.go).
	mode ioMode
}

// Release uncounts the open and closes the backing file, or ends its
// use of the node's shared one.
func (h *readHandle) Release(ctx context.Context) syscall.Errno {
	h.n.release(ctx, h.mode)
	if h.mode == viaCache {
		h.n.closeShared()
		return 0
	}
	h.n.v.closeFile(h.LoopbackFile)
	return 0
}

// Ioctl is refused: forwarded to the backing descriptor, an ioctl such
// as FS_IOC_SETFLAGS would change a file that the descriptor may only
// read.
func (h *readHandle) Ioctl(ctx context.Context, cmd uint32, arg uint64, input []byte, output []byte) (int32, syscall.Errno) {
	return 0, syscall.ENOTTY
}

// handle is a file open for writing: its writes (in writes mode), its
// fallocates and its release are journaled.
type handle struct {
	*gofs.LoopbackFile
	v     *View
	inode *gofs.Inode
	n     *node  // the node of inode
	mode  ioMode // how the kernel does the handle's I/O
	// The opener, recorded on the release when the kernel sends it
	// without a caller.
	pid, uid uint32
	comm     string
	// The decision at open, for records of a file no longer in the tree.
	decision journal.Decision

	mu       sync.Mutex
	captured bool
	// closeOnce closes the backing file after the release's capture
	// (finish).
	closeOnce sync.Once
	// stored is set, under View.mu, once the release's capture has
	// counted what it added to the blob store: until then the file's
	// size counts against the budget as pending (View.reserve).
	stored bool
	// size is the file's size last seen, slot the handle's index in
	// View.counted, -1 when it is not there. Guarded by View.mu.
	size int64
	slot int

	nameMu sync.Mutex
	// lastName is the last path the file had in the tree: its path at
	// open, and the name an unlink removed. A record of a file with no
	// name left carries it in Target.
	lastName string
}

// setLastName notes p as the file's last name.
func (h *handle) setLastName(p string) {
	h.nameMu.Lock()
	h.lastName = p
	h.nameMu.Unlock()
}

// newHandle wraps a file of node n just opened for writing in mode m;
// opened is the record of the open (or create), which names the opener
// and the decision. The handle given to the bridge is fileHandle's.
func (v *View) newHandle(lf *gofs.LoopbackFile, n *node, m ioMode, opened journal.Record) *handle {
	h := &handle{LoopbackFile: lf, v: v, inode: n.EmbeddedInode(), n: n, mode: m, decision: opened.Decision, lastName: opened.Path}
	h.pid, h.uid, h.comm = opened.PID, opened.UID, opened.Comm
	var size int64
	if fd, ok := lf.PassthroughFd(); ok {
		size, _ = sizeOfFd(fd)()
	}
	v.mu.Lock()
	v.open[h] = struct{}{}
	if n.open == nil {
		n.open = make(map[*handle]struct{})
	}
	n.open[h] = struct{}{}
	v.countLocked(h, size)
	v.mu.Unlock()
	return h
}

// fileHandle is the handle the bridge gets for h: one without a
// passthrough descriptor when the kernel is to use its page cache.
func (h *handle) fileHandle() gofs.FileHandle {
	if h.mode == viaCache {
		return &cachedWrite{handle: h}
	}
	return h
}

// writeHandle returns the handle of a file open for writing inside f.
func writeHandle(f gofs.FileHandle) (*handle, bool) {
	switch h := f.(type) {
	case *handle:
		return h, true
	case *cachedWrite:
		return h.handle, true
	}
	return nil, false
}

// unwrap returns the loopback file inside one of our handles, which the
// loopback node's methods type-assert.
func unwrap(f gofs.FileHandle) gofs.FileHandle {
	switch h := f.(type) {
	case *handle:
		return h.LoopbackFile
	case *cachedWrite:
		return h.LoopbackFile
	case *readHandle:
		return h.LoopbackFile
	case *cachedRead:
		return h.LoopbackFile
	}
	return f
}

func (h *handle) Ioctl(ctx context.Context, cmd uint32, arg uint64, input []byte, output []byte) (int32, syscall.Errno) {
	return 0, syscall.ENOTTY
}

// path is the file's path in the tree, "" once it has no name left.
func (h *handle) path() string {
	p, ok := h.v.relOf(h.inode)
	if ok {
		h.setLastName(p)
	}
	return p
}

// unnamed fills in the record of an operation on a file with no name
// left: Target is the last name it had.
func (h *handle) unnamed(r *journal.Record) {
	if r.Path != "" {
		return
	}
	h.nameMu.Lock()
	r.Target = h.lastName
	h.nameMu.Unlock()
}

// decide is the policy's decision for a record of this handle: the
// current path's, or the one at open for a file no longer in the tree.
func (h *handle) decide(p string) journal.Decision {
	if p == "" {
		return h.decision
	}
	return h.v.cfg.Policy.Decide(p)
}

func (h *handle) record(ctx context.Context, r journal.Record, errno syscall.Errno) {
	h.v.who(ctx, &r)
	if r.PID == 0 {
		r.PID, r.UID, r.Comm = h.pid, h.uid, h.comm
	}
	r.Result = result(errno)
	if r.Decision == "" {
		r.Decision = h.decide(r.Path)
	}
	h.unnamed(&r)
	h.v.append(r)
}

// capped refuses a write, fallocate (r) that the caps do not let
// through: any at the records cap (ENOSPC), one that grows the file
// to end bytes past the blob budget (EFBIG).
func (h *handle) capped(ctx context.Context, r journal.Record, end int64) syscall.Errno {
	if cap := h.v.journalFull(); cap != "" {
		h.unnamed(&r)
		return h.v.hitCap(ctx, r, cap, syscall.ENOSPC)
	}
	fd, ok := h.LoopbackFile.PassthroughFd()
	if ok && h.v.tooBig(end, h.inode, sizeOfFd(fd)) {
		h.unnamed(&r)
		return h.v.hitCap(ctx, r, journal.CapBlobBytes, syscall.EFBIG)
	}
	return 0
}

// fdOf is the backing descriptor of one of our handles.
func fdOf(f gofs.FileHandle) (int, bool) {
	lf, ok := unwrap(f).(*gofs.LoopbackFile)
	if !ok {
		return 0, false
	}
	return lf.PassthroughFd()
}

// Write is reached only without passthrough (writes mode).
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := h.capped(ctx, journal.Record{Op: journal.OpWrite, Path: h.path(), Offset: off, Size: int64(len(data))}, off+int64(len(data))); errno != 0 {
		return 0, errno
	}
	n, errno := h.LoopbackFile.Write(ctx, data, off)
	h.v.grew(h, off+int64(n))
	h.record(ctx, journal.Record{Op: journal.OpWrite, Path: h.path(), Offset: off, Size: int64(n)}, errno)
	return n, errno
}

func (h *handle) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var total int64
	for _, d := range data {
		total += int64(len(d))
	}
	if errno := h.capped(ctx, journal.Record{Op: journal.OpWrite, Path: h.path(), Offset: off, Size: total}, off+total); errno != 0 {
		return 0, errno
	}
	n, errno := h.LoopbackFile.Writev(ctx, data, off)
	h.v.grew(h, off+int64(n))
	h.record(ctx, journal.Record{Op: journal.OpWrite, Path: h.path(), Offset: off, Size: int64(n)}, errno)
	return n, errno
}

func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	end := int64(off + size)
	if mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE) != 0 {
		end = 0 // the size stays
	}
	if errno := h.capped(ctx, journal.Record{Op: journal.OpFallocate, Path: h.path(), Offset: int64(off), Size: int64(size), Mode: mode}, end); errno != 0 {
		return errno
	}
	errno := h.LoopbackFile.Allocate(ctx, off, size, mode)
	if errno == 0 {
		h.v.grew(h, end)
	}
	h.record(ctx, journal.Record{Op: journal.OpFallocate, Path: h.path(), Offset: int64(off), Size: int64(size), Mode: mode}, errno)
	return errno
}

// Release queues the capture of the file's content, or captures it at
// once when it may not wait (capture_linux.go); the backing file is
// closed after the capture.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.n.release(ctx, h.mode)
	if !h.v.deferCapture(h) {
		h.finish(ctx)
	}
	return 0
}

// capture stores the file's current content as a blob and journals a
// release record with its hash, once per handle. A file unlinked while
// open is recorded with no path and its last name in Target. atUnmount marks the capture of a file
// still open when the view is unmounted (Flags 1).
//
// The path is read after the content, from the backing descriptor and
// under View.renameMu, so that the record names the file as it is
// named at the record's place in the journal even when a rename races
// with the release (the kernel sends RELEASE after close returns).
func (h *handle) capture(ctx context.Context, atUnmount bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.captured {
		return
	}
	h.captured = true
	defer h.v.lockContent(h.inode)()
	rec := journal.Record{Op: journal.OpRelease}
	if atUnmount {
		rec.Flags = 1
	}
	fd, ok := h.LoopbackFile.PassthroughFd()
	if !ok {
		h.v.stored(h, 0)
		rec.Path = h.path()
		h.record(ctx, rec, syscall.EBADF)
		return
	}
	// What this capture adds to the store is counted together with
	// the handle leaving the pending set, so that no open for writing
	// sees the content counted twice or not at all.
	var added int64
	blobs := *h.v.blobs
	blobs.Added = func(_ string, n int64) { added += n }
	sum, size, errno := h.v.storeIn(&blobs, fd)
	h.v.stored(h, added)
	h.v.renameMu.RLock()
	defer h.v.renameMu.RUnlock()
	rec.Path = h.pathOf(fd)
	if errno != 0 {
		h.record(ctx, rec, errno)
		return
	}
	rec.SHA256, rec.Size = sum, size
	h.n.size.Store(size)
	h.record(ctx, rec, 0)
}

// smallBlob is the largest content that capture reads into memory, as
// the blob store does.
const smallBlob = journal.SmallBlob

// store puts the content of the backing file open at fd into the blob
// store. Content up to smallBlob is read into memory and written only
// when the store lacks its blob: most releases are of content stored
// before (the snapshot at mount holds every initial file, and a build or
// test run rewrites many files unchanged). Larger content is streamed.
func (v *View) store(fd int) (string, int64, syscall.Errno) {
	return v.storeIn(v.blobs, fd)
}

// storeIn is store into blobs.
func (v *View) storeIn(blobs *journal.Blobs, fd int) (string, int64, syscall.Errno) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", 0, errnoOf(err)
	}
	if st.Size <= smallBlob {
		// Read with pread, which leaves the descriptor's offset
		// alone. One byte more than the size: a file that grew since
		// is streamed. The view opens every file it writes read-write
		// (readableWrites), so fd can be read.
		buf := make([]byte, max(st.Size, 0)+1)
		n, err := preadFull(fd, buf)
		switch {
		case err == nil && n < len(buf):
			sum, err := blobs.PutBytes(buf[:n])
			if err != nil {
				v.log.Error("unable to capture content", "err", err)
				return "", 0, syscall.EIO
			}
			return sum, int64(n), 0
		case err != nil:
			return "", 0, errnoOf(err)
		}
	}
	// Reopen through /proc: the copy moves the offset.
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0, errnoOf(err)
	}
	f := os.NewFile(uintptr(rfd), "blob")
	defer f.Close()
	sum, size, err := blobs.PutOpenFile(f) // from the start, holes kept
	if err != nil {
		v.log.Error("unable to capture content", "err", err)
		return "", 0, syscall.EIO
	}
	return sum, size, 0
}

// preadFull reads from fd at offset 0 into buf until buf is full or
// the file ends, and returns how much it read.
func preadFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// pathOf is the current path, relative to the workspace, of the backing
// file open at fd: the kernel's name for the descriptor, which a rename
// changes at once (fsmon's tree follows only after the RENAME reply).
// It is "" for a file with no name left.
func (h *handle) pathOf(fd int) string {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && st.Nlink == 0 {
		return ""
	}
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || strings.HasSuffix(target, " (deleted)") {
		// The name opened was removed but another link remains.
		return h.path()
	}
	rel, ok := strings.CutPrefix(target, h.v.backingReal+"/")
	if !ok {
		return h.path()
	}
	return filepath.ToSlash(rel)
}

func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EIO
}

// storePath stores the content of the regular file at rel, relative to
// the backing directory, as store does. The path is resolved through
// no link at any component (openAt), so that a name the agent swapped
// for a link cannot make the view read outside its tree.
func (v *View) storePath(rel string) (string, int64, syscall.Errno) {
	fd, err := v.openAt(rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, errnoOf(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", 0, errnoOf(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", 0, syscall.EINVAL
	}
	return v.store(fd)
}
