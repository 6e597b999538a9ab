package fsmon

import (
	"context"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
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

// A file read through the page cache needs a backing descriptor only
// for the READ requests of pages the kernel lacks, and none for pages it
// holds. The node's read-only handles share one, opened at the first of
// them and kept after the last while the view holds fewer than
// maxShared: a file read again costs its OPEN and RELEASE no system
// call. The descriptor names the file itself, so a rename or an unlink
// changes nothing for it; it is closed when the kernel forgets the
// node (OnForget) and at unmount.

// sharedRead is a node's shared read-only backing file.
type sharedRead struct {
	mu   sync.Mutex
	file *gofs.LoopbackFile // nil: none open
	refs int                // handles using it
}

// openShared returns the node's shared read-only backing file, opening
// it if none is open, for a handle to use until closeShared.
func (n *node) openShared(ctx context.Context) (*gofs.LoopbackFile, syscall.Errno) {
	s := &n.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		f, errno := n.openFile(ctx, syscall.O_RDONLY)
		if errno != 0 {
			return nil, errno
		}
		s.file = f
		n.v.sharedOpened(n)
	}
	s.refs++
	return s.file, 0
}

// closeShared ends a handle's use of the node's shared backing file,
// which is closed with the last one when the view holds too many.
func (n *node) closeShared() {
	s := &n.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs--
	if s.refs == 0 && n.v.tooManyShared() {
		n.dropSharedLocked()
	}
}

// dropSharedLocked closes the shared backing file, which no handle
// uses. Called with n.shared.mu held.
func (n *node) dropSharedLocked() {
	if n.shared.file == nil || n.shared.refs > 0 {
		return
	}
	n.v.closeFile(n.shared.file)
	n.shared.file = nil
	n.v.sharedClosed(n)
}

// OnForget closes the shared backing file of a node the kernel forgot.
func (n *node) OnForget() {
	n.shared.mu.Lock()
	n.dropSharedLocked()
	n.shared.mu.Unlock()
}

// sharedFiles counts the nodes with a shared backing file open, for
// maxShared and for closing them at unmount.
type sharedFiles struct {
	mu    sync.Mutex
	nodes map[*node]struct{}
	max   int
}

func (v *View) sharedOpened(n *node) {
	v.shared.mu.Lock()
	if v.shared.nodes == nil {
		v.shared.nodes = make(map[*node]struct{})
	}
	v.shared.nodes[n] = struct{}{}
	v.shared.mu.Unlock()
}

func (v *View) sharedClosed(n *node) {
	v.shared.mu.Lock()
	delete(v.shared.nodes, n)
	v.shared.mu.Unlock()
}

func (v *View) tooManyShared() bool {
	v.shared.mu.Lock()
	defer v.shared.mu.Unlock()
	return len(v.shared.nodes) > v.shared.max
}

// closeShared closes the shared backing files no handle uses: at
// unmount, when no request comes any more.
func (v *View) closeShared() {
	v.shared.mu.Lock()
	nodes := make([]*node, 0, len(v.shared.nodes))
	for n := range v.shared.nodes {
		nodes = append(nodes, n)
	}
	v.shared.mu.Unlock()
	for _, n := range nodes {
		n.OnForget()
	}
}

// maxSharedFiles is how many shared backing files a view keeps open
// with no handle using them: an eighth of the descriptors the process
// may open, at most 4096.
func maxSharedFiles() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 256
	}
	return int(min(max(rl.Cur/8, 64), 4096))
}
