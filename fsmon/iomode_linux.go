package fsmon

import (
	"context"
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// In content mode the view picks, at each open, how the kernel does the
// open file's reads and writes (see "Modes" in the package doc):
//
//   - passthrough (FOPEN_PASSTHROUGH): straight to the backing file.
//     Nothing reaches the view, but every read makes the kernel forget
//     the file's atime, so the next stat of the file is a GETATTR
//     round trip.
//   - the kernel's page cache: a read of pages the kernel holds reaches
//     nothing, not even a GETATTR; a read of pages it lacks is a READ
//     request; a write is a WRITE request the view performs.
//
// Read-only opens of small files use the page cache, every other open
// passthrough: a source tree read again and again (grep, a test run's
// imports) then costs an OPEN and a RELEASE per file, the RELEASE after
// close has returned.
//
// The kernel refuses (EIO) to have one inode open both ways at once
// (fs/fuse/iomode.c), so the view counts each node's opens of each kind
// and chooses the kind already in use: a read-only open of a file open
// for writing is passthrough, and an open for writing of a file open
// through the page cache uses the page cache too (its writes are then
// WRITE requests, journaled in content mode as well). The kernel
// counts an open after the OPEN reply and uncounts it before it sends
// the RELEASE; the view counts before replying and uncounts on the
// RELEASE, so its counts are never below the kernel's and its choice
// never conflicts with an open the kernel still has.
//
// go-fuse's bridge keeps one backing file per node for passthrough,
// counted by the node's passthrough opens, and drops a count after a
// handle's Release returns, for every handle, passthrough or not. So
// that it never drops the count of a passthrough open that another
// handle still needs (the kernel refuses an open with another backing
// file while the inode has one), an open is uncounted only after the
// bridge has finished its RELEASE (rawView.Release), and no open of the
// other kind is granted until then.
//
// The kernel keeps a file's pages from one open to the next
// (FOPEN_KEEP_CACHE) unless the file may have changed behind them: an
// open for writing with passthrough writes to the backing file and not
// to those pages, so the next open through the page cache drops them.
// Every other change of content goes through the kernel, which updates
// or drops its pages itself.

// cachedMax is the largest file a read-only open reads through the
// kernel's page cache: one READ request when its pages are not there
// (the kernel reads ahead 128 KiB). Larger files are read with
// passthrough, which reads them at the backing file system's speed.
const cachedMax = 128 << 10

// ioMode is how the kernel does an open file's I/O.
type ioMode uint8

const (
	viaPassthrough ioMode = iota
	viaCache
)

// openModes counts a node's open handles by ioMode.
type openModes struct {
	mu          sync.Mutex
	passthrough int
	cached      int
	// stale is set when the backing file may have been written behind
	// the kernel's pages of it: the next open through the page cache
	// drops them.
	stale bool
}

// openRead picks the ioMode of a read-only open of a file of size
// bytes, counts the open, and returns the open's flags.
func (o *openModes) openRead(size int64) (ioMode, uint32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.passthrough > 0 || (o.cached == 0 && size > cachedMax) {
		o.passthrough++
		return viaPassthrough, 0
	}
	o.cached++
	if o.stale {
		o.stale = false
		return viaCache, 0
	}
	return viaCache, fuse.FOPEN_KEEP_CACHE
}

// openWrite picks the ioMode of an open for writing, counts it, and
// returns the open's flags. The kernel's pages of a file open through
// the page cache are current (no passthrough handle can be open), so
// they are kept.
func (o *openModes) openWrite() (ioMode, uint32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cached > 0 {
		o.cached++
		return viaCache, fuse.FOPEN_KEEP_CACHE
	}
	o.passthrough++
	o.stale = true
	return viaPassthrough, 0
}

// close uncounts an open of mode m: at the RELEASE, or when the open
// failed.
func (o *openModes) close(m ioMode) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m == viaCache {
		o.cached--
	} else {
		o.passthrough--
	}
}

// cachedRead is a read-only handle whose I/O goes through the kernel's
// page cache. The field PassthroughFd hides the method of that name of
// the embedded handle: go-fuse's bridge gives passthrough to a handle
// that has the method (fs.FilePassthroughFder).
type cachedRead struct {
	*readHandle
	PassthroughFd struct{}
}

// cachedWrite is a handle open for writing whose I/O goes through the
// kernel's page cache (see cachedRead).
type cachedWrite struct {
	*handle
	PassthroughFd struct{}
}

// openRead picks the ioMode of a read-only open of the node, counts it
// and returns the open's flags. In writes mode there is no passthrough:
// every write goes through the kernel, which keeps its pages current.
func (n *node) openRead() (ioMode, uint32) {
	if n.v.cfg.Mode != ModeContent {
		return viaCache, fuse.FOPEN_KEEP_CACHE
	}
	return n.modes.openRead(n.size.Load())
}

// openWrite picks the ioMode of an open of the node for writing, counts
// it and returns the open's flags.
func (n *node) openWrite() (ioMode, uint32) {
	if n.v.cfg.Mode != ModeContent {
		return viaCache, 0
	}
	return n.modes.openWrite()
}

// closed uncounts an open of the node in mode m that failed.
func (n *node) closed(m ioMode) {
	if n.v.cfg.Mode == ModeContent {
		n.modes.close(m)
	}
}

// release uncounts the open of a handle of the node in mode m, which
// the RELEASE in ctx ends, once the bridge has finished that RELEASE
// (View.released).
func (n *node) release(ctx context.Context, m ioMode) {
	if n.v.cfg.Mode != ModeContent {
		return
	}
	if c, ok := ctx.(*fuse.Context); ok && c.Cancel != nil {
		n.v.releasing.Store(c.Cancel, releasing{n, m})
		return
	}
	n.modes.close(m)
}

// releasing is an open to uncount when its RELEASE is finished.
type releasing struct {
	n *node
	m ioMode
}

// released uncounts the open whose RELEASE the bridge just finished;
// cancel, the request's cancel channel, names the RELEASE.
func (v *View) released(cancel <-chan struct{}) {
	if r, ok := v.releasing.LoadAndDelete(cancel); ok {
		r := r.(releasing)
		r.n.modes.close(r.m)
	}
}
