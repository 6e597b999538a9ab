package fsmon

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
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
	_ gofs.NodeOpendirHandler = (*node)(nil)
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

// backingPath is the absolute backing path of a relative path.
func (v *View) backingPath(rel string) string {
	return filepath.Join(v.backing, filepath.FromSlash(rel))
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
func who(ctx context.Context, r *journal.Record) {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return
	}
	r.UID = c.Uid
	r.PID, r.Comm = process(c.Pid)
}

// process maps a thread id to its process id and command name. A thread
// that is gone keeps its id and gets no name.
func process(tid uint32) (uint32, string) {
	if tid == 0 {
		return 0, ""
	}
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return tid, ""
	}
	pid, name := tid, ""
	for _, line := range strings.SplitN(string(b), "\n", 8) {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "Name":
			name = strings.TrimSpace(v)
		case "Tgid":
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
				pid = uint32(n)
			}
		}
	}
	return pid, name
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

// record stamps the caller and result and appends r.
func (n *node) record(ctx context.Context, r journal.Record, errno syscall.Errno) {
	who(ctx, &r)
	r.Result = result(errno)
	n.v.append(r)
}

// refuse journals r as denied with errno and returns errno.
func (n *node) refuse(ctx context.Context, r journal.Record, errno syscall.Errno) syscall.Errno {
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
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return nil, nil, 0, n.refuse(ctx, rec, errno)
	}
	ch, fh, ff, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	rec.Decision = d
	n.record(ctx, rec, errno)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return ch, n.v.newHandle(ctx, fh.(*gofs.LoopbackFile), ch, d), ff, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	writing := flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0
	if !writing {
		fh, ff, errno := n.LoopbackNode.Open(ctx, flags)
		if errno != 0 {
			return nil, 0, errno
		}
		return &readHandle{fh.(*gofs.LoopbackFile)}, ff, 0
	}
	rec := journal.Record{Op: journal.OpOpen, Path: n.rel(), Flags: flags}
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return nil, 0, n.refuse(ctx, rec, errno)
	}
	fh, ff, errno := n.LoopbackNode.Open(ctx, flags)
	rec.Decision = d
	n.record(ctx, rec, errno)
	if errno != 0 {
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		n.record(ctx, journal.Record{Op: journal.OpTruncate, Path: rec.Path, Decision: d}, 0)
	}
	return n.v.newHandle(ctx, fh.(*gofs.LoopbackFile), n.EmbeddedInode(), d), ff, 0
}

// OpendirHandle lets the kernel cache directory listings: fsmon is the
// only writer of the backing tree, and every change it makes goes
// through the kernel, which invalidates the cache itself.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, _, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	return fh, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, errno
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rec := journal.Record{Op: journal.OpMkdir, Path: n.child(name), Mode: mode}
	if mode&setid != 0 {
		return nil, n.refuse(ctx, rec, syscall.EPERM)
	}
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return nil, n.refuse(ctx, rec, errno)
	}
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	rec.Decision = d
	n.record(ctx, rec, errno)
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
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return nil, n.refuse(ctx, rec, errno)
	}
	ch, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return ch, errno
}

// Tmpfile (O_TMPFILE) is refused: an unnamed file could later be linked
// in under any name without a create. Callers fall back to a named file.
func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	rec := journal.Record{Op: journal.OpCreate, Path: n.rel(), Mode: mode, Flags: flags | unix.O_TMPFILE}
	return nil, nil, 0, n.refuse(ctx, rec, syscall.EOPNOTSUPP)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	rec := journal.Record{Op: journal.OpUnlink, Path: n.child(name)}
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return n.refuse(ctx, rec, errno)
	}
	errno = n.LoopbackNode.Unlink(ctx, name)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	rec := journal.Record{Op: journal.OpRmdir, Path: n.child(name)}
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return n.refuse(ctx, rec, errno)
	}
	errno = n.LoopbackNode.Rmdir(ctx, name)
	rec.Decision = d
	n.record(ctx, rec, errno)
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
	d, errno := n.check(paths...)
	if errno != 0 {
		return n.refuse(ctx, rec, errno)
	}
	errno = n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return errno
}

// movedPaths lists the old and new path of everything that a rename of
// from to to moves: from itself and, for a directory, every path below.
func (v *View) movedPaths(from, to string) []string {
	paths := []string{from, to}
	root := v.backingPath(from)
	st, err := os.Lstat(root)
	if err != nil || !st.IsDir() {
		return paths
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		sub, _ := filepath.Rel(root, p)
		sub = filepath.ToSlash(sub)
		paths = append(paths, path.Join(from, sub), path.Join(to, sub))
		return nil
	})
	return paths
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rec := journal.Record{Op: journal.OpSymlink, Path: n.child(name), Target: target}
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return nil, n.refuse(ctx, rec, errno)
	}
	ch, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	rec.Decision = d
	n.record(ctx, rec, errno)
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
	d, errno := n.check(src, rec.Path2)
	if errno != 0 {
		return nil, n.refuse(ctx, rec, errno)
	}
	ch, errno := n.LoopbackNode.Link(ctx, target, name, out)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return ch, errno
}

func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	p := n.rel()
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
		return n.LoopbackNode.Setattr(ctx, unwrap(f), in, out)
	}
	d, errno := n.check(p)
	if errno != 0 {
		for _, r := range recs {
			n.refuse(ctx, r, errno)
		}
		return errno
	}
	errno = n.LoopbackNode.Setattr(ctx, unwrap(f), in, out)
	for _, r := range recs {
		r.Decision = d
		n.record(ctx, r, errno)
	}
	return errno
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	rec := journal.Record{Op: journal.OpSetxattr, Path: n.rel(), Name: attr, Size: int64(len(data)), Flags: flags}
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return n.refuse(ctx, rec, errno)
	}
	errno = n.LoopbackNode.Setxattr(ctx, attr, data, flags)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return errno
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	rec := journal.Record{Op: journal.OpRemovexattr, Path: n.rel(), Name: attr}
	d, errno := n.check(rec.Path)
	if errno != 0 {
		return n.refuse(ctx, rec, errno)
	}
	errno = n.LoopbackNode.Removexattr(ctx, attr)
	rec.Decision = d
	n.record(ctx, rec, errno)
	return errno
}

// CopyFileRange copies between two open files. The output is open for
// writing, so the policy already allowed it at open.
func (n *node) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	outPath, _ := n.v.relOf(out)
	rec := journal.Record{Op: journal.OpCopyFileRange, Path: outPath, Path2: n.rel(), Offset: int64(offOut)}
	d, errno := n.check(outPath)
	if errno != 0 {
		return 0, n.refuse(ctx, rec, errno)
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
