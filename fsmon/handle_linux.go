package fsmon

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"benchd.dev/fsmon/journal"
)

// readHandle is a file open read-only. Reads go through passthrough (or
// the loopback); ioctls are refused.
type readHandle struct {
	*gofs.LoopbackFile
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
	// The opener, recorded on the release when the kernel sends it
	// without a caller.
	pid, uid uint32
	comm     string
	// The decision at open, for records of a file no longer in the tree.
	decision journal.Decision

	mu       sync.Mutex
	captured bool
}

func (v *View) newHandle(ctx context.Context, lf *gofs.LoopbackFile, in *gofs.Inode, d journal.Decision) *handle {
	h := &handle{LoopbackFile: lf, v: v, inode: in, decision: d}
	var r journal.Record
	who(ctx, &r)
	h.pid, h.uid, h.comm = r.PID, r.UID, r.Comm
	v.mu.Lock()
	v.open[h] = struct{}{}
	v.mu.Unlock()
	return h
}

// unwrap returns the loopback file inside one of our handles, which the
// loopback node's methods type-assert.
func unwrap(f gofs.FileHandle) gofs.FileHandle {
	switch h := f.(type) {
	case *handle:
		return h.LoopbackFile
	case *readHandle:
		return h.LoopbackFile
	}
	return f
}

func (h *handle) Ioctl(ctx context.Context, cmd uint32, arg uint64, input []byte, output []byte) (int32, syscall.Errno) {
	return 0, syscall.ENOTTY
}

func (h *handle) path() string {
	p, _ := h.v.relOf(h.inode)
	return p
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
	who(ctx, &r)
	if r.PID == 0 {
		r.PID, r.UID, r.Comm = h.pid, h.uid, h.comm
	}
	r.Result = result(errno)
	if r.Decision == "" {
		r.Decision = h.decide(r.Path)
	}
	h.v.append(r)
}

// Write is reached only without passthrough (writes mode).
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, errno := h.LoopbackFile.Write(ctx, data, off)
	h.record(ctx, journal.Record{Op: journal.OpWrite, Path: h.path(), Offset: off, Size: int64(n)}, errno)
	return n, errno
}

func (h *handle) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	n, errno := h.LoopbackFile.Writev(ctx, data, off)
	h.record(ctx, journal.Record{Op: journal.OpWrite, Path: h.path(), Offset: off, Size: int64(n)}, errno)
	return n, errno
}

func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	errno := h.LoopbackFile.Allocate(ctx, off, size, mode)
	h.record(ctx, journal.Record{Op: journal.OpFallocate, Path: h.path(), Offset: int64(off), Size: int64(size), Mode: mode}, errno)
	return errno
}

// Release captures the file's content, then closes the backing file.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.capture(ctx, false)
	h.v.mu.Lock()
	delete(h.v.open, h)
	h.v.mu.Unlock()
	return h.LoopbackFile.Release(ctx)
}

// capture stores the file's current content as a blob and journals a
// release record with its hash, once per handle. A file unlinked while
// open is recorded with no path. atUnmount marks the capture of a file
// still open when the view is unmounted (Flags 1).
func (h *handle) capture(ctx context.Context, atUnmount bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.captured {
		return
	}
	h.captured = true
	rec := journal.Record{Op: journal.OpRelease, Path: h.path()}
	if atUnmount {
		rec.Flags = 1
	}
	fd, ok := h.LoopbackFile.PassthroughFd()
	if !ok {
		h.record(ctx, rec, syscall.EBADF)
		return
	}
	// Reopen through /proc: the descriptor may be write-only.
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		h.record(ctx, rec, errnoOf(err))
		return
	}
	defer f.Close()
	sum, size, err := h.v.cfg.Journal.Blobs().Put(f)
	if err != nil {
		h.v.log.Error("unable to capture content", "path", rec.Path, "err", err)
		h.record(ctx, rec, syscall.EIO)
		return
	}
	rec.SHA256, rec.Size = sum, size
	h.record(ctx, rec, 0)
}

func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EIO
}
