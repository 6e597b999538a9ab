package fsmon

import (
	"runtime"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The view's CPU time (Stats.CPU) is measured per request: the goroutine
// that serves a request is locked to its OS thread for the request, and
// the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID, user and system time
// of that thread alone) is read before and after. Each view's requests
// are served by its own go-fuse server, so the sum is the view's and no
// other's. What it leaves out: go-fuse's reading of /dev/fuse and
// writing of replies (a few microseconds a request, the same for every
// request), data a Read reply splices after the handler returned, and
// the garbage collector's share of the view's allocations. Requests
// without a wrapper below (locks, ioctl, forget batches) are not counted.
// The timing costs about 0.5 µs a request (the thread lock and two
// clock_gettime system calls).

// threadCPU returns the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// timed locks the goroutine to its thread and returns the function that
// charges the thread's CPU time since to the view and unlocks it.
func (r *rawView) timed() func() {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		if d := threadCPU() - start; d > 0 {
			r.v.cpu.Add(int64(d))
		}
		runtime.UnlockOSThread()
	}
}

func (r *rawView) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Lookup(cancel, h, name, out)
}

func (r *rawView) Forget(nodeid, nlookup uint64) {
	defer r.timed()()
	r.RawFileSystem.Forget(nodeid, nlookup)
}

func (r *rawView) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.GetAttr(cancel, in, out)
}

func (r *rawView) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.SetAttr(cancel, in, out)
}

func (r *rawView) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Statx(cancel, in, out)
}

func (r *rawView) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Mknod(cancel, in, name, out)
}

func (r *rawView) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (r *rawView) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Unlink(cancel, h, name)
}

func (r *rawView) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Rmdir(cancel, h, name)
}

func (r *rawView) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (r *rawView) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Link(cancel, in, name, out)
}

func (r *rawView) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Symlink(cancel, h, target, name, out)
}

func (r *rawView) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	defer r.timed()()
	return r.RawFileSystem.Readlink(cancel, h)
}

func (r *rawView) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Access(cancel, in)
}

func (r *rawView) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	defer r.timed()()
	return r.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (r *rawView) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	defer r.timed()()
	return r.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (r *rawView) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (r *rawView) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (r *rawView) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Create(cancel, in, name, out)
}

func (r *rawView) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Open(cancel, in, out)
}

func (r *rawView) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	defer r.timed()()
	return r.RawFileSystem.Read(cancel, in, buf)
}

func (r *rawView) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Lseek(cancel, in, out)
}

func (r *rawView) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer r.timed()()
	return r.RawFileSystem.Write(cancel, in, data)
}

func (r *rawView) CopyFileRange(cancel <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	defer r.timed()()
	return r.RawFileSystem.CopyFileRange(cancel, in)
}

func (r *rawView) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Flush(cancel, in)
}

func (r *rawView) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Fsync(cancel, in)
}

func (r *rawView) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.Fallocate(cancel, in)
}

func (r *rawView) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	defer r.timed()()
	return r.RawFileSystem.StatFs(cancel, h, out)
}
