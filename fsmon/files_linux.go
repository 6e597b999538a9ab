package fsmon

import (
	"context"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"benchd.dev/fsmon/journal"
)

// Every file the agent opens through the view costs benchd a backing
// descriptor (a handle's own, or a node's shared read-only one). The
// view holds at most Config.MaxOpenFiles of them: an open past that
// fails with EMFILE and is counted under journal.CapOpenFiles, so that
// one attempt cannot take the descriptors its neighbours' views and
// benchd itself need. Every backing descriptor is registered in
// View.fds from its open to its close, so that the view closes those
// the kernel never released (RELEASE requests still queued when the
// mount goes) before Unmount returns.

// openFiles is the backing descriptors a view holds open.
type openFiles struct {
	mu sync.Mutex
	// n counts the descriptors held and those being opened.
	n    int
	held map[*gofs.LoopbackFile]struct{}
	// ended is set at teardown: no descriptor is opened after it.
	ended bool
}

// DefaultMaxOpenFiles is the per-view bound on backing descriptors when
// Config.MaxOpenFiles is 0: MaxOpenFilesFor(SharedViews).
func DefaultMaxOpenFiles() int { return MaxOpenFilesFor(SharedViews) }

// MaxOpenFilesFor is the per-view bound when views views at most share
// the process: three quarters of its RLIMIT_NOFILE split evenly across
// them, at least 256, so that views that each hold their whole share
// still leave the process a quarter for itself (benchd's sockets, store
// and gradings). benchd passes its concurrency.
func MaxOpenFilesFor(views int) int {
	views = max(views, 1)
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 256
	}
	return int(max(rl.Cur/4*3/uint64(views), 256))
}

// SharedViews is how many views DefaultMaxOpenFiles assumes run at once
// in one process.
const SharedViews = 16

// takeFile reserves a backing descriptor for an open of rel; past the
// bound the open is refused with EMFILE (hitCap). A reservation ends
// with holdFile: of the file opened, or of nil when the open failed.
func (v *View) takeFile(ctx context.Context, rel string) syscall.Errno {
	f := &v.fds
	f.mu.Lock()
	switch {
	case f.ended:
		f.mu.Unlock()
		return syscall.EIO
	case f.n >= v.cfg.MaxOpenFiles:
		f.mu.Unlock()
		return v.hitCap(ctx, journal.Record{Path: rel}, journal.CapOpenFiles, syscall.EMFILE)
	}
	f.n++
	f.mu.Unlock()
	return 0
}

// holdFile registers lf, opened on a reservation (takeFile); lf is nil
// when the open failed.
func (v *View) holdFile(lf *gofs.LoopbackFile) {
	f := &v.fds
	f.mu.Lock()
	defer f.mu.Unlock()
	if lf == nil {
		f.n--
		return
	}
	if f.held == nil {
		f.held = make(map[*gofs.LoopbackFile]struct{})
	}
	f.held[lf] = struct{}{}
}

// closeFile closes a backing file the view holds and frees its place.
// Closing one closeAll closed already does nothing.
func (v *View) closeFile(lf *gofs.LoopbackFile) {
	f := &v.fds
	f.mu.Lock()
	if _, ok := f.held[lf]; ok {
		delete(f.held, lf)
		f.n--
	}
	f.mu.Unlock()
	lf.Release(context.Background())
}

// closeAll closes every backing file the view still holds: those whose
// RELEASE the kernel never sent. Called once no request is served.
func (v *View) closeAll() {
	f := &v.fds
	f.mu.Lock()
	f.ended = true
	held := f.held
	f.held, f.n = nil, 0
	f.mu.Unlock()
	for lf := range held {
		lf.Release(context.Background())
	}
}

// openFilesHeld is how many backing descriptors the view holds (or is
// opening).
func (v *View) openFilesHeld() int {
	v.fds.mu.Lock()
	defer v.fds.mu.Unlock()
	return v.fds.n
}
