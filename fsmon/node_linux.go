package fsmon

import (
	"context"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"benchd.dev/fsmon/journal"
)

// node is a loopback node that journals and enforces the policy. Every
// node of the tree is one: the root wraps its children (NodeWrapChilder),
// and they wrap theirs.
type node struct {
	*gofs.LoopbackNode
	v *View
	// modes counts the node's open handles by how the kernel does
	// their I/O (iomode_linux.go).
	modes openModes
	// size is the file's size when the view last saw it: it picks
	// how a read-only open reads (cachedMax).
	size atomic.Int64
	// shared is the backing file the node's handles that read
	// through the page cache share (iomode_linux.go).
	shared sharedRead
	// writers counts the node's handles open for writing and holds
	// its releases whose capture waits (capture_linux.go);
	// waitingBytes is their size (View.waiting).
	writers      writers
	waitingBytes atomic.Int64
	// openBytes is the sum of the sizes counted for the node's handles
	// open for writing (View.openBytes).
	openBytes atomic.Int64
	// open holds the node's handles of View.open, under View.mu: an
	// unlink visits them, not every handle of the view.
	open map[*handle]struct{}
	// capsUnset is set when the file is known to have no
	// security.capability xattr: the view created it, and set no xattr
	// on it since. The kernel asks for that xattr before the first
	// write to a file (to drop file capabilities), so every file an
	// agent writes anew costs a GETXATTR round trip; the view answers
	// it without reading the backing file.
	capsUnset atomic.Bool
}

var (
	_ gofs.NodeWrapChilder    = (*node)(nil)
	_ gofs.NodeCreater        = (*node)(nil)
	_ gofs.NodeOpener         = (*node)(nil)
	_ gofs.NodeMkdirer        = (*node)(nil)
	_ gofs.NodeMknoder        = (*node)(nil)
	_ gofs.NodeRenamer        = (*node)(nil)
	_ gofs.NodeUnlinker       = (*node)(nil)
	_ gofs.NodeRmdirer        = (*node)(nil)
	_ gofs.NodeSymlinker      = (*node)(nil)
	_ gofs.NodeLinker         = (*node)(nil)
	_ gofs.NodeSetattrer      = (*node)(nil)
	_ gofs.NodeSetxattrer     = (*node)(nil)
	_ gofs.NodeRemovexattrer  = (*node)(nil)
	_ gofs.NodeCopyFileRanger = (*node)(nil)
	_ gofs.NodeFlusher        = (*node)(nil)
	_ gofs.NodeTmpfiler       = (*node)(nil)
)

func (n *node) WrapChild(ctx context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*gofs.LoopbackNode), v: n.v}
}

// rel is the node's path relative to the workspace root ("" for the root).
func (n *node) rel() string {
	p, _ := n.v.relOf(n.EmbeddedInode())
	return p
}

// child is the relative path of name in this directory.
func (n *node) child(name string) string {
	return path.Join(n.rel(), name)
}

// relOf walks an inode's parents to the root. It reports false for an
// inode that is no longer in the tree (unlinked while open).
func (v *View) relOf(in *gofs.Inode) (string, bool) {
	root := v.root.EmbeddedInode()
	var segs []string
	for p := in; p != root; {
		name, parent := p.Parent()
		if parent == nil {
			return "", false
		}
		segs = append(segs, name)
		p = parent
	}
	for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
		segs[i], segs[j] = segs[j], segs[i]
	}
	return strings.Join(segs, "/"), true
}

// who fills the caller fields of r from the request. FUSE names the
// calling thread; the record names its process (the thread group) and
// the thread's command name, both read from /proc when the request
// arrives.
func (v *View) who(ctx context.Context, r *journal.Record) {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return
	}
	r.UID = c.Uid
	r.PID, r.Comm = v.callers.process(c.Pid)
}

func result(errno syscall.Errno) string {
	if errno == 0 {
		return "ok"
	}
	if name := unix.ErrnoName(errno); name != "" {
		return name
	}
	return "errno " + strconv.Itoa(int(errno))
}

// record stamps the caller and result, appends r and returns it as
// stamped.
func (n *node) record(ctx context.Context, r journal.Record, errno syscall.Errno) journal.Record {
	n.v.who(ctx, &r)
	r.Result = result(errno)
	n.v.append(r)
	return r
}

// refuse journals r as denied with errno and returns errno. At the
// records cap nothing more is journaled: the refusal is ENOSPC (hitCap).
func (n *node) refuse(ctx context.Context, r journal.Record, errno syscall.Errno) syscall.Errno {
	if cap := n.v.journalFull(); cap != "" {
		return n.v.hitCap(ctx, r, cap, syscall.ENOSPC)
	}
	r.Decision = journal.Denied
	n.record(ctx, r, errno)
	return errno
}

// check decides a change to the given paths: denied when any is denied,
// ignored when all are ignored, allowed otherwise. After a journal error
// every change is refused with EIO, since it could not be recorded.
func (n *node) check(paths ...string) (journal.Decision, syscall.Errno) {
	if n.v.journalBroken() {
		return journal.Denied, syscall.EIO
	}
	d := journal.Ignored
	for _, p := range paths {
		switch n.v.cfg.Policy.Decide(p) {
		case journal.Denied:
			return journal.Denied, syscall.EACCES
		case journal.Allowed:
			d = journal.Allowed
		}
	}
	return d, 0
}

const setid = syscall.S_ISUID | syscall.S_ISGID

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	rec := journal.Record{Op: journal.OpCreate, Path: n.child(name), Mode: mode, Flags: flags}
	if mode&setid != 0 {
		return nil, nil, 0, n.refuse(ctx, rec, syscall.EPERM)
	}
	// CREATE may open a file that exists (without O_EXCL): only a new
	// one is an entry more. With O_EXCL it fails on one that exists,
	// and gives its entry back.
	var entries int64
	if flags&syscall.O_EXCL != 0 || !n.v.exists(rec.Path) {
		entries = 1
	}
	d, errno := n.admit(ctx, rec, cost{entries: entries, writing: true}, rec.Path)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if entries == 0 {
		// An existing file (O_TRUNC may empty it) whose node the
		// bridge replaces: none of its captures may wait.
		n.v.flushAll()
	}
	ch, fh, errno := n.createFile(ctx, name, flags, mode, out)
	if errno == 0 && entries == 1 {
		if fd, ok := fh.PassthroughFd(); ok {
			errno = exactMode(&out.Attr, mode, func(m uint32) error { return unix.Fchmod(fd, m) })
		}
		if errno != 0 {
			n.v.closeFile(fh)
			n.unlinkAt(rec.Path, 0)
		}
	}
	rec.Decision = d
	rec = n.record(ctx, rec, errno)
	if errno != 0 {
		n.v.addFiles(-entries)
		return nil, nil, 0, errno
	}
	// The bridge registers ch as the node of the new file (a create
	// replaces any node of the same identity), so its counts are the
	// kernel's inode's.
	cn := ch.Operations().(*node)
	if entries == 1 {
		// A new file has no xattrs (capsUnset).
		cn.capsUnset.Store(true)
	}
	cn.beginWrite()
	iom, fl := cn.openWrite()
	return ch, n.v.newHandle(fh, cn, iom, rec).fileHandle(), fl, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	writing := flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
	if !writing {
		mode, fl := n.openRead()
		if mode == viaCache {
			fh, errno := n.openShared(ctx)
			if errno != 0 {
				n.closed(mode)
				return nil, 0, errno
			}
			return &cachedRead{readHandle: &readHandle{LoopbackFile: fh, n: n, mode: mode}}, fl, 0
		}
		fh, errno := n.openFile(ctx, flags)
		if errno != 0 {
			n.closed(mode)
			return nil, 0, errno
		}
		return &readHandle{LoopbackFile: fh, n: n, mode: mode}, fl, 0
	}
	rec := journal.Record{Op: journal.OpOpen, Path: n.rel(), Flags: flags}
	d, errno := n.admit(ctx, rec, cost{writing: true}, rec.Path)
	if errno != 0 {
		return nil, 0, errno
	}
	n.beginWrite()
	mode, fl := n.openWrite()
	fh, errno := n.openFile(ctx, flags)
	rec.Decision = d
	rec = n.record(ctx, rec, errno)
	if errno != 0 {
		n.closed(mode)
		n.endWrite()
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		tr := journal.Record{Op: journal.OpTruncate, Path: rec.Path, Decision: d, PID: rec.PID, UID: rec.UID, Comm: rec.Comm, Result: "ok"}
		n.v.append(tr)
	}
	return n.v.newHandle(fh, n, mode, rec).fileHandle(), fl, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rec := journal.Record{Op: journal.OpMkdir, Path: n.child(name), Mode: mode}
	if mode&setid != 0 {
		return nil, n.refuse(ctx, rec, syscall.EPERM)
	}
	d, errno := n.admit(ctx, rec, cost{entries: 1}, rec.Path)
	if errno != 0 {
		return nil, errno
	}
	ch, errno := n.made(ctx, rec.Path, true, unix.AT_REMOVEDIR, func(dirfd int, name string) error {
		return unix.Mkdirat(dirfd, name, mode)
	}, out)
	if errno == 0 {
		errno = exactMode(&out.Attr, mode, n.chmodChild(rec.Path))
		if errno != 0 {
			n.unlinkAt(rec.Path, unix.AT_REMOVEDIR)
			ch = nil
		}
	}
	rec.Decision = d
	n.record(ctx, rec, errno)
	n.v.failed(errno, 1)
	return ch, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rec := journal.Record{Op: journal.OpMknod, Path: n.child(name), Mode: mode}
	switch mode & syscall.S_IFMT {
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return nil, n.refuse(ctx, rec, syscall.EPERM)
	}
	if mode&setid != 0 {
		return nil, n.refuse(ctx, rec, syscall.EPERM)
	}
	d, errno := n.admit(ctx, rec, cost{entries: 1}, rec.Path)
	if errno != 0 {
		return nil, errno
	}
	ch, errno := n.made(ctx, rec.Path, true, 0, func(dirfd int, name string) error {
		return unix.Mknodat(dirfd, name, mode, int(rdev))
	}, out)
	if errno == 0 {
		errno = exactMode(&out.Attr, mode, n.chmodChild(rec.Path))
		if errno != 0 {
			n.unlinkAt(rec.Path, 0)
			ch = nil
		}
	}
	rec.Decision = d
	n.record(ctx, rec, errno)
	n.v.failed(errno, 1)
	return ch, errno
}

// exactMode gives a new file the permission bits the kernel asked for
// (the caller's umask already applied), which the backing file system
// narrowed by the serving process's own umask, and os.Mkdir by dropping
// the sticky bit. attr, the new entry's attributes, is kept in step.
func exactMode(attr *fuse.Attr, mode uint32, chmod func(uint32) error) syscall.Errno {
	want := mode & 0o7777
	if attr.Mode&0o7777 == want {
		return 0
	}
	if err := chmod(want); err != nil {
		return gofs.ToErrno(err)
	}
	attr.Mode = attr.Mode&^0o7777 | want
	return 0
}

// chmodChild changes the mode of the entry rel of the backing tree, not
// following a symlink.
func (n *node) chmodChild(rel string) func(uint32) error {
	return func(m uint32) error {
		if errno := n.v.inParent(rel, func(dirfd int, name string) error {
			return chmodNoFollow(dirfd, name, m)
		}); errno != 0 {
			return errno
		}
		return nil
	}
}

// unlinkAt removes the entry rel of the backing tree (a directory with
// flags AT_REMOVEDIR).
func (n *node) unlinkAt(rel string, flags int) syscall.Errno {
	return n.v.inParent(rel, func(dirfd int, name string) error {
		return unix.Unlinkat(dirfd, name, flags)
	})
}

// exists reports whether the backing tree has an entry rel.
func (v *View) exists(rel string) bool {
	return v.inParent(rel, func(dirfd int, name string) error {
		var st unix.Stat_t
		return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}) == 0
}

// Tmpfile (O_TMPFILE) is refused: an unnamed file could later be linked
// in under any name without a create. Callers fall back to a named file.
func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	rec := journal.Record{Op: journal.OpCreate, Path: n.rel(), Mode: mode, Flags: flags | unix.O_TMPFILE}
	return nil, nil, 0, n.refuse(ctx, rec, syscall.EOPNOTSUPP)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	rec := journal.Record{Op: journal.OpUnlink, Path: n.child(name)}
	d, errno := n.admit(ctx, rec, cost{}, rec.Path)
	if errno != 0 {
		return errno
	}
	child := n.GetChild(name)
	if child != nil {
		child.Operations().(*node).flushCaptures()
	}
	n.v.renameMu.Lock()
	defer n.v.renameMu.Unlock()
	errno = n.unlinkAt(rec.Path, 0)
	rec.Decision = d
	n.record(ctx, rec, errno)
	if errno == 0 {
		n.v.addFiles(-1)
		n.v.unlinked(child, rec.Path)
	}
	return errno
}

// failed gives back the entries an operation reserved when it failed.
func (v *View) failed(errno syscall.Errno, entries int64) {
	if errno != 0 {
		v.addFiles(-entries)
	}
}

// unlinked notes, on every handle open for writing on in, the name p
// an unlink just removed: if it was the file's last, records of the
// file name it in Target.
func (v *View) unlinked(in *gofs.Inode, p string) {
	if in == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for h := range in.Operations().(*node).open {
		h.setLastName(p)
	}
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	rec := journal.Record{Op: journal.OpRmdir, Path: n.child(name)}
	d, errno := n.admit(ctx, rec, cost{}, rec.Path)
	if errno != 0 {
		return errno
	}
	errno = n.unlinkAt(rec.Path, unix.AT_REMOVEDIR)
	rec.Decision = d
	n.record(ctx, rec, errno)
	if errno == 0 {
		n.v.addFiles(-1)
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	from, to := n.child(name), np.child(newName)
	rec := journal.Record{Op: journal.OpRename, Path: from, Path2: to, Flags: flags}
	// Everything below a renamed directory moves too, and with
	// RENAME_EXCHANGE the target moves back to the source's name.
	paths := n.v.movedPaths(from, to)
	if flags&unix.RENAME_EXCHANGE != 0 {
		paths = append(paths, n.v.movedPaths(to, from)...)
	}
	d, errno := n.admit(ctx, rec, cost{}, paths...)
	if errno != 0 {
		return errno
	}
	if target := np.GetChild(newName); target != nil {
		// The name's file loses it.
		target.Operations().(*node).flushCaptures()
	}
	n.v.renameMu.Lock()
	defer n.v.renameMu.Unlock()
	// A rename that replaces an entry leaves one entry fewer (the
	// kernel holds both directories locked, so the target cannot
	// change before the rename).
	replaces := flags&unix.RENAME_EXCHANGE == 0 && n.v.exists(to)
	errno = n.v.inParent(from, func(fromDir int, fromName string) error {
		if errno := n.v.inParent(to, func(toDir int, toName string) error {
			return unix.Renameat2(fromDir, fromName, toDir, toName, uint(flags))
		}); errno != 0 {
			return errno
		}
		return nil
	})
	rec.Decision = d
	n.record(ctx, rec, errno)
	if errno == 0 && replaces {
		n.v.addFiles(-1)
	}
	return errno
}

// movedPaths lists the old and new path of everything that a rename of
// from to to moves: from itself and, for a directory, every path below.
func (v *View) movedPaths(from, to string) []string {
	paths := []string{from, to}
	fd, err := v.openAt(from, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return paths // not a directory
	}
	walkBelow(fd, "", func(sub string) {
		paths = append(paths, path.Join(from, sub), path.Join(to, sub))
	})
	return paths
}

// walkBelow calls fn with the path, relative to the directory open at
// dir, of every entry below it, directories before what they hold. It
// closes dir. Each directory is opened relative to its parent's
// descriptor, so that no path is longer than one name.
func walkBelow(dir int, prefix string, fn func(sub string)) {
	f := os.NewFile(uintptr(dir), "")
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	for _, name := range names {
		sub := path.Join(prefix, name)
		fn(sub)
		var st unix.Stat_t
		if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		if fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			walkBelow(fd, sub, fn)
		}
	}
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rec := journal.Record{Op: journal.OpSymlink, Path: n.child(name), Target: target}
	d, errno := n.admit(ctx, rec, cost{entries: 1}, rec.Path)
	if errno != 0 {
		return nil, errno
	}
	ch, errno := n.made(ctx, rec.Path, true, 0, func(dirfd int, name string) error {
		return unix.Symlinkat(target, dirfd, name)
	}, out)
	rec.Decision = d
	n.record(ctx, rec, errno)
	n.v.failed(errno, 1)
	return ch, errno
}

// Link refuses to give a protected file a second name: through it the
// protected content could be changed.
func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	src, ok := n.v.relOf(target.EmbeddedInode())
	rec := journal.Record{Op: journal.OpLink, Path: src, Path2: n.child(name)}
	if !ok {
		return nil, n.refuse(ctx, rec, syscall.EXDEV)
	}
	d, errno := n.admit(ctx, rec, cost{entries: 1}, src, rec.Path2)
	if errno != 0 {
		return nil, errno
	}
	ch, errno := n.made(ctx, rec.Path2, false, 0, func(dirfd int, name string) error {
		if errno := n.v.inParent(src, func(srcDir int, srcName string) error {
			return unix.Linkat(srcDir, srcName, dirfd, name, 0)
		}); errno != 0 {
			return errno
		}
		return nil
	}, out)
	rec.Decision = d
	n.record(ctx, rec, errno)
	n.v.failed(errno, 1)
	return ch, errno
}

func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.flushCaptures()
	p, named := n.v.relOf(n.EmbeddedInode())
	var recs []journal.Record
	if sz, ok := in.GetSize(); ok {
		recs = append(recs, journal.Record{Op: journal.OpTruncate, Path: p, Size: int64(sz)})
	}
	if m, ok := in.GetMode(); ok {
		rec := journal.Record{Op: journal.OpChmod, Path: p, Mode: m}
		if m&setid != 0 {
			return n.refuse(ctx, rec, syscall.EPERM)
		}
		recs = append(recs, rec)
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		rec := journal.Record{Op: journal.OpChown, Path: p}
		if uok {
			rec.Mode = uid // the new uid, for the record
		}
		if gok {
			rec.Flags = gid // the new gid, for the record
		}
		recs = append(recs, rec)
	}
	_, mok := in.GetMTime()
	_, aok := in.GetATime()
	if mok || aok {
		recs = append(recs, journal.Record{Op: journal.OpUtimens, Path: p})
	}
	if len(recs) == 0 {
		return n.setattr(ctx, f, in, out)
	}
	if cap := n.v.journalFull(); cap != "" {
		return n.v.hitCap(ctx, recs[0], cap, syscall.ENOSPC)
	}
	var (
		d     journal.Decision
		errno syscall.Errno
	)
	if h, ok := writeHandle(f); ok && !named {
		// A file with no name left, changed through a descriptor open
		// for writing: the policy decided at open.
		d = h.decision
		if n.v.journalBroken() {
			d, errno = journal.Denied, syscall.EIO
		}
		for i := range recs {
			h.unnamed(&recs[i])
		}
	} else {
		d, errno = n.check(p)
	}
	if errno != 0 {
		n.recordAll(ctx, recs, journal.Denied, errno)
		return errno
	}
	sz, sized := in.GetSize()
	if sized {
		size := n.v.sizeOfPath(p)
		if fd, ok := fdOf(f); ok {
			size = sizeOfFd(fd)
		}
		if n.v.tooBig(int64(sz), n.EmbeddedInode(), size) {
			return n.v.hitCap(ctx, recs[0], journal.CapBlobBytes, syscall.EFBIG)
		}
	}
	if _, viaHandle := writeHandle(f); sized && sz > 0 && named && !viaHandle {
		// A truncate by path (truncate(2)) to a size other than 0: no
		// release of a handle follows with the content it leaves, so
		// its record carries that content. Renames wait, so the path
		// is the file's until the record is in; releases of the file
		// wait, so their records keep the order of their reads.
		defer n.v.lockContent(n.EmbeddedInode())()
		n.v.renameMu.RLock()
		defer n.v.renameMu.RUnlock()
		errno = n.setattr(ctx, f, in, out)
		if errno == 0 {
			if sum, size, cerr := n.v.storePath(p); cerr == 0 {
				recs[0].SHA256, recs[0].Size = sum, size
			} else {
				errno = cerr
			}
		}
		n.recordAll(ctx, recs, d, errno)
		return errno
	}
	errno = n.setattr(ctx, f, in, out)
	n.recordAll(ctx, recs, d, errno)
	return errno
}

// setattr performs a setattr. The bridge leaves the attribute timeout of
// the reply at zero, which would make the next stat of the file a
// GETATTR round trip (after every utimensat of tar, for one); fsmon is
// the only writer, so the reply is cached as long as a lookup's.
func (n *node) setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var errno syscall.Errno
	if fsa, ok := unwrap(f).(gofs.FileSetattrer); ok && f != nil {
		errno = fsa.Setattr(ctx, in, out)
	} else {
		errno = n.setattrPath(in, out)
	}
	if errno == 0 {
		out.SetTimeout(n.v.cfg.CacheTimeout)
		n.size.Store(int64(out.Size))
	}
	return errno
}

// recordAll journals the records of one operation with decision d and
// the result of errno; the caller is read once for all of them.
func (n *node) recordAll(ctx context.Context, recs []journal.Record, d journal.Decision, errno syscall.Errno) {
	var caller journal.Record
	n.v.who(ctx, &caller)
	for _, r := range recs {
		r.Decision = d
		r.PID, r.UID, r.Comm = caller.PID, caller.UID, caller.Comm
		r.Result = result(errno)
		n.v.append(r)
	}
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	n.flushCaptures()
	n.capsUnset.Store(false)
	rec := journal.Record{Op: journal.OpSetxattr, Path: n.rel(), Name: attr, Size: int64(len(data)), Flags: flags}
	d, errno := n.admit(ctx, rec, cost{}, rec.Path)
	if errno != 0 {
		return errno
	}
	errno = n.setxattr(attr, data, flags)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return errno
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	n.flushCaptures()
	rec := journal.Record{Op: journal.OpRemovexattr, Path: n.rel(), Name: attr}
	d, errno := n.admit(ctx, rec, cost{}, rec.Path)
	if errno != 0 {
		return errno
	}
	errno = n.removexattr(attr)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return errno
}

// CopyFileRange copies between two open files. The output is open for
// writing, so the policy already allowed it at open.
func (n *node) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	outPath, named := n.v.relOf(out)
	rec := journal.Record{Op: journal.OpCopyFileRange, Path: outPath, Path2: n.rel(), Offset: int64(offOut)}
	var (
		d     journal.Decision
		errno syscall.Errno
	)
	h, isHandle := writeHandle(fhOut)
	if isHandle && !named {
		// The output has no name left: the policy decided at its open.
		d = h.decision
		if n.v.journalBroken() {
			d, errno = journal.Denied, syscall.EIO
		}
		h.unnamed(&rec)
		if errno != 0 {
			return 0, n.refuse(ctx, rec, errno)
		}
		if cap := n.v.journalFull(); cap != "" {
			return 0, n.v.hitCap(ctx, rec, cap, syscall.ENOSPC)
		}
	} else if d, errno = n.admit(ctx, rec, cost{}, outPath); errno != 0 {
		return 0, errno
	}
	size := n.v.sizeOfPath(outPath)
	if fd, ok := fdOf(fhOut); ok {
		size = sizeOfFd(fd)
	}
	if n.v.tooBig(int64(offOut+length), out, size) {
		return 0, n.v.hitCap(ctx, rec, journal.CapBlobBytes, syscall.EFBIG)
	}
	count, errno := n.LoopbackNode.CopyFileRange(ctx, unwrap(fhIn), offIn, out, unwrap(fhOut), offOut, length, flags)
	rec.Size = int64(count)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return count, errno
}

// Flush answers ENOSYS, which tells the kernel never to send FLUSH
// again: it would be a round trip on every close for nothing, since
// content is captured at release.
func (n *node) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno {
	return syscall.ENOSYS
}
