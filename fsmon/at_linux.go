package fsmon

import (
	"context"
	"math/bits"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The view reaches the backing tree only through the descriptor of its
// root (View.rootFd), opened once at mount, with paths relative to it:
// the *at system calls and openat2. A path of the view is then as long
// in the backing tree as in the view, so that a path the kernel accepts
// in the view is one the backing file system accepts; go-fuse's
// loopback joins the backing directory's own path in front and fails
// paths near PATH_MAX with ENAMETOOLONG. A path of the tree may be
// longer than PATH_MAX (a process whose working directory is deep in
// the view names it relative to that): openAt walks it in pieces.
//
// A path is resolved beneath the root and through no symlink
// (beneath): the kernel resolves the view's symlinks itself, so a path
// of the tree never goes through one, and a link that a race put in
// its way fails the operation (ELOOP) instead of leading it out of the
// backing tree. The last component is never followed either: the calls
// take AT_SYMLINK_NOFOLLOW, O_NOFOLLOW or act on a link itself.

// The node serves every operation of the loopback that takes a path
// itself (with node_linux.go): none reaches go-fuse's path-based code.
var (
	_ gofs.NodeLookuper       = (*node)(nil)
	_ gofs.NodeGetattrer      = (*node)(nil)
	_ gofs.NodeStatxer        = (*node)(nil)
	_ gofs.NodeStatfser       = (*node)(nil)
	_ gofs.NodeReadlinker     = (*node)(nil)
	_ gofs.NodeOpendirHandler = (*node)(nil)
	_ gofs.NodeReaddirer      = (*node)(nil)
	_ gofs.NodeGetxattrer     = (*node)(nil)
	_ gofs.NodeListxattrer    = (*node)(nil)
)

// beneath is how the view's paths are resolved by openat2.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openAt opens rel, relative to the backing root ("" is the root),
// resolved beneath it and through no symlink. With O_PATH|O_NOFOLLOW a
// symlink at rel is opened itself; without, it fails with ELOOP. A rel
// of PATH_MAX bytes or more (a process whose working directory is deep
// in the view reaches such paths with short relative ones) is walked
// in pieces shorter than that, each from the directory the last one
// opened.
func (v *View) openAt(rel string, flags int, mode uint32) (int, error) {
	if rel == "" {
		rel = "."
	}
	dir := v.rootFd
	done := func() {
		if dir != v.rootFd {
			unix.Close(dir)
		}
	}
	defer func() { done() }()
	for len(rel) >= unix.PathMax {
		i := strings.LastIndexByte(rel[:unix.PathMax-1], '/')
		if i <= 0 {
			return -1, unix.ENAMETOOLONG
		}
		next, err := openBeneath(dir, rel[:i], unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return -1, err
		}
		done()
		dir, rel = next, rel[i+1:]
	}
	return openBeneath(dir, rel, flags, mode)
}

// openBeneath opens rel relative to dirfd, beneath it and through no
// symlink.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode & 0o7777), Resolve: beneath}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err != unix.EAGAIN && err != unix.EINTR {
			// EAGAIN: a rename elsewhere raced with the walk.
			return fd, err
		}
	}
}

// parentAt opens the directory holding rel (not the root) and returns
// its descriptor, rel's last name and the function that closes the
// descriptor. The root's own entries need no open.
func (v *View) parentAt(rel string) (int, string, func(), error) {
	dir, name := path.Split(rel)
	if dir == "" {
		return v.rootFd, name, func() {}, nil
	}
	fd, err := v.openAt(dir[:len(dir)-1], unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", nil, err
	}
	return fd, name, func() { unix.Close(fd) }, nil
}

// inParent runs fn with the directory holding rel and rel's last name.
func (v *View) inParent(rel string, fn func(dirfd int, name string) error) syscall.Errno {
	dirfd, name, done, err := v.parentAt(rel)
	if err != nil {
		return gofs.ToErrno(err)
	}
	defer done()
	return gofs.ToErrno(fn(dirfd, name))
}

// procPath names the file open at fd (an O_PATH descriptor works) for
// the calls that take no descriptor of that kind (xattrs, truncate).
// The magic link leads to the descriptor's file itself, also when that
// is a symlink, and is not resolved further.
func procPath(fd int) string {
	return "/proc/self/fd/" + strconv.Itoa(fd)
}

// chmodNoFollow sets the mode of name in dirfd, never through a
// symlink (whose mode Linux does not change: EOPNOTSUPP). fchmodat2,
// which takes AT_SYMLINK_NOFOLLOW, is Linux 6.6's; before it (the
// syscall missing, which x/sys reports as EOPNOTSUPP) the file is opened
// O_PATH without following and changed through its magic link.
func chmodNoFollow(dirfd int, name string, mode uint32) error {
	err := fchmodat(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW)
	if err != unix.EOPNOTSUPP {
		return err
	}
	fd, oerr := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		return oerr
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if serr := unix.Fstat(fd, &st); serr != nil {
		return serr
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.EOPNOTSUPP
	}
	return unix.Chmod(procPath(fd), mode)
}

// fchmodat is unix.Fchmodat; a test makes it the call of a kernel
// without fchmodat2.
var fchmodat = unix.Fchmodat

// withPathFd runs fn with an O_PATH descriptor of rel, a symlink at rel
// not followed.
func (v *View) withPathFd(rel string, fn func(fd int) error) syscall.Errno {
	fd, err := v.openAt(rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return gofs.ToErrno(err)
	}
	defer unix.Close(fd)
	return gofs.ToErrno(fn(fd))
}

// stat is the attributes of name in dirfd (name "" with AT_EMPTY_PATH:
// dirfd's own), a symlink not followed, and its birth time (zero when
// the file system has none).
func stat(dirfd int, name string, flags int) (syscall.Stat_t, syscall.Timespec, error) {
	var x unix.Statx_t
	var st syscall.Stat_t
	if err := unix.Statx(dirfd, name, flags|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &x); err != nil {
		return st, syscall.Timespec{}, err
	}
	st.Dev = unix.Mkdev(x.Dev_major, x.Dev_minor)
	st.Ino = x.Ino
	st.Nlink = uint64(x.Nlink)
	st.Mode = uint32(x.Mode)
	st.Uid, st.Gid = x.Uid, x.Gid
	st.Rdev = unix.Mkdev(x.Rdev_major, x.Rdev_minor)
	st.Size = int64(x.Size)
	st.Blksize = int64(x.Blksize)
	st.Blocks = int64(x.Blocks)
	st.Atim = timespec(x.Atime)
	st.Mtim = timespec(x.Mtime)
	st.Ctim = timespec(x.Ctime)
	var btime syscall.Timespec
	if x.Mask&unix.STATX_BTIME != 0 {
		btime = timespec(x.Btime)
	}
	return st, btime, nil
}

func timespec(t unix.StatxTimestamp) syscall.Timespec {
	return syscall.Timespec{Sec: t.Sec, Nsec: int64(t.Nsec)}
}

// stableAttr identifies a backing file to the node tree: its inode
// number (mixed with its device's when it is not the root's, so that
// files of two file systems do not collide) and, as generation, its
// birth time, so that an inode number reused by a new file names a new
// node.
func (v *View) stableAttr(st *syscall.Stat_t, btime syscall.Timespec) gofs.StableAttr {
	ino := st.Ino
	if st.Dev != v.dev {
		ino ^= bits.RotateLeft64(st.Dev^v.dev, 32)
	}
	gen := uint64(btime.Sec)*1e9 + uint64(btime.Nsec)
	if gen == 0 {
		gen = 1
	}
	return gofs.StableAttr{Mode: st.Mode, Ino: ino, Gen: gen}
}

// newChild makes the node of the entry name of this directory, whose
// attributes were just read, and fills out with them.
func (n *node) newChild(ctx context.Context, st *syscall.Stat_t, btime syscall.Timespec, out *fuse.EntryOut) *gofs.Inode {
	out.Attr.FromStat(st)
	ops := &gofs.LoopbackNode{RootData: n.RootData}
	ch := n.NewInode(ctx, ops, n.v.stableAttr(st, btime))
	ch.Operations().(*node).size.Store(st.Size)
	return ch
}

// path is the node's path relative to the root; a node no longer in
// the tree has none (ENOENT).
func (n *node) path() (string, syscall.Errno) {
	p, ok := n.v.relOf(n.EmbeddedInode())
	if !ok {
		return "", syscall.ENOENT
	}
	return p, 0
}

// childPath is the path of name in this directory.
func (n *node) childPath(name string) (string, syscall.Errno) {
	p, errno := n.path()
	if errno != 0 {
		return "", errno
	}
	return path.Join(p, name), 0
}

// owner gives the entry name of dirfd, just made, the caller's uid and
// gid, as a file system makes its callers' files (the view serves as
// root).
func owner(ctx context.Context, dirfd int, name string) error {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return nil
	}
	return unix.Fchownat(dirfd, name, int(c.Uid), int(c.Gid), unix.AT_SYMLINK_NOFOLLOW)
}

// made finishes the entry rel that mk just made in its directory
// (mkdir, mknod, symlink, link): the caller's ownership (with own),
// attributes, node. When that fails the entry is removed again (with
// unlinkat's flags rm).
func (n *node) made(ctx context.Context, rel string, own bool, rm int, mk func(dirfd int, name string) error, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	var ch *gofs.Inode
	errno := n.v.inParent(rel, func(dirfd int, name string) error {
		if err := mk(dirfd, name); err != nil {
			return err
		}
		var err error
		if own {
			err = owner(ctx, dirfd, name)
		}
		var st syscall.Stat_t
		var btime syscall.Timespec
		if err == nil {
			st, btime, err = stat(dirfd, name, 0)
		}
		if err != nil {
			unix.Unlinkat(dirfd, name, rm)
			return err
		}
		ch = n.newChild(ctx, &st, btime, out)
		return nil
	})
	return ch, errno
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	rel, errno := n.childPath(name)
	if errno != 0 {
		return nil, errno
	}
	var ch *gofs.Inode
	errno = n.v.inParent(rel, func(dirfd int, name string) error {
		st, btime, err := stat(dirfd, name, 0)
		if err != nil {
			return err
		}
		ch = n.newChild(ctx, &st, btime, out)
		return nil
	})
	return ch, errno
}

// attr fills out with the attributes of the node's backing file (the
// root's is followed if the backing directory is a link).
func (n *node) attr(out *fuse.AttrOut) syscall.Errno {
	rel, errno := n.path()
	if errno != 0 {
		return errno
	}
	if rel == "" {
		st, _, err := stat(n.v.rootFd, "", unix.AT_EMPTY_PATH)
		if err != nil {
			return gofs.ToErrno(err)
		}
		out.FromStat(&st)
		return 0
	}
	return n.v.inParent(rel, func(dirfd int, name string) error {
		st, _, err := stat(dirfd, name, 0)
		if err == nil {
			out.FromStat(&st)
		}
		return err
	})
}

func (n *node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var errno syscall.Errno
	if g, ok := unwrap(f).(gofs.FileGetattrer); ok && f != nil {
		errno = g.Getattr(ctx, out)
	} else {
		errno = n.attr(out)
	}
	if errno == 0 {
		n.size.Store(int64(out.Size))
	}
	return errno
}

func (n *node) Statx(ctx context.Context, f gofs.FileHandle, flags uint32, mask uint32, out *fuse.StatxOut) syscall.Errno {
	if s, ok := unwrap(f).(gofs.FileStatxer); ok && f != nil {
		return s.Statx(ctx, flags, mask, out)
	}
	rel, errno := n.path()
	if errno != 0 {
		return errno
	}
	sync := int(flags) & (unix.AT_STATX_FORCE_SYNC | unix.AT_STATX_DONT_SYNC)
	statx := func(dirfd int, name string, at int) error {
		var x unix.Statx_t
		if err := unix.Statx(dirfd, name, at|sync|unix.AT_SYMLINK_NOFOLLOW, int(mask), &x); err != nil {
			return err
		}
		out.FromStatx(&x)
		return nil
	}
	if rel == "" {
		return gofs.ToErrno(statx(n.v.rootFd, "", unix.AT_EMPTY_PATH))
	}
	return n.v.inParent(rel, func(dirfd int, name string) error { return statx(dirfd, name, 0) })
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var s syscall.Statfs_t
	if err := syscall.Fstatfs(n.v.rootFd, &s); err != nil {
		return gofs.ToErrno(err)
	}
	out.FromStatfsT(&s)
	return 0
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	rel, errno := n.path()
	if errno != 0 {
		return nil, errno
	}
	var target []byte
	errno = n.v.inParent(rel, func(dirfd int, name string) error {
		for size := 256; ; size *= 2 {
			buf := make([]byte, size)
			m, err := unix.Readlinkat(dirfd, name, buf)
			if err != nil {
				return err
			}
			if m < size {
				target = buf[:m]
				return nil
			}
		}
	})
	return target, errno
}

// openFile opens the node's backing file as the kernel asked (O_APPEND
// dropped: the kernel sends the offsets), a symlink not followed.
func (n *node) openFile(ctx context.Context, flags uint32) (*gofs.LoopbackFile, syscall.Errno) {
	rel, errno := n.path()
	if errno != 0 {
		return nil, errno
	}
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	if errno := n.v.takeFile(ctx, rel); errno != 0 {
		return nil, errno
	}
	fd, err := n.v.openAt(rel, readableWrites(flags), 0)
	if err != nil {
		n.v.holdFile(nil)
		return nil, gofs.ToErrno(err)
	}
	lf := gofs.NewLoopbackFileFromOS(os.NewFile(uintptr(fd), ""))
	n.v.holdFile(lf)
	return lf, 0
}

// readableWrites is the flags of the view's own open of a backing file
// the kernel asked to open with flags: write-only becomes read-write,
// so that the capture at release reads the file through the view's
// descriptor (the kernel opens its own backing file for passthrough,
// with the caller's flags). Only regular files are opened.
func readableWrites(flags uint32) int {
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return int(flags)
}

// createFile creates (or, without O_EXCL, opens) the entry name of this
// directory and makes its node. The kernel sends CREATE only for a name
// it found absent, so a symlink there (ELOOP) is a race and not followed.
func (n *node) createFile(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, *gofs.LoopbackFile, syscall.Errno) {
	rel, errno := n.childPath(name)
	if errno != 0 {
		return nil, nil, errno
	}
	flags &^= syscall.O_APPEND
	if errno := n.v.takeFile(ctx, rel); errno != 0 {
		return nil, nil, errno
	}
	fd, err := n.v.openAt(rel, readableWrites(flags)|unix.O_CREAT, mode)
	if err != nil {
		n.v.holdFile(nil)
		return nil, nil, gofs.ToErrno(err)
	}
	if c, ok := fuse.FromContext(ctx); ok {
		unix.Fchown(fd, int(c.Uid), int(c.Gid))
	}
	st, btime, err := stat(fd, "", unix.AT_EMPTY_PATH)
	if err != nil {
		unix.Close(fd)
		n.v.holdFile(nil)
		return nil, nil, gofs.ToErrno(err)
	}
	ch := n.newChild(ctx, &st, btime, out)
	out.FromStat(&st)
	lf := gofs.NewLoopbackFileFromOS(os.NewFile(uintptr(fd), ""))
	n.v.holdFile(lf)
	return ch, lf, 0
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	ds, errno := n.Readdir(ctx)
	if errno != 0 {
		return nil, 0, errno
	}
	return ds, 0, 0
}

func (n *node) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	rel, errno := n.path()
	if errno != 0 {
		return nil, errno
	}
	fd, err := n.v.openAt(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, gofs.ToErrno(err)
	}
	return gofs.NewLoopbackDirStreamFd(fd)
}

// setattrPath changes the attributes of the node's backing file by
// path, for a setattr without a file handle: mode, owner, size, then
// times (an explicit mtime is not clobbered by the truncate); out gets
// the attributes it leaves.
func (n *node) setattrPath(in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	rel, errno := n.path()
	if errno != 0 {
		return errno
	}
	if rel == "" {
		// The root: its backing directory is named by the root's
		// descriptor.
		rel = "."
	}
	return n.v.inParent(rel, func(dirfd int, name string) error {
		if m, ok := in.GetMode(); ok {
			if err := chmodNoFollow(dirfd, name, m); err != nil {
				return err
			}
		}
		uid, uok := in.GetUID()
		gid, gok := in.GetGID()
		if uok || gok {
			u, g := -1, -1
			if uok {
				u = int(uid)
			}
			if gok {
				g = int(gid)
			}
			if err := unix.Fchownat(dirfd, name, u, g, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return err
			}
		}
		if sz, ok := in.GetSize(); ok {
			fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			err = unix.Truncate(procPath(fd), int64(sz))
			unix.Close(fd)
			if err != nil {
				return err
			}
		}
		mtime, mok := in.GetMTime()
		atime, aok := in.GetATime()
		if mok || aok {
			ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
			var err error
			if aok {
				if ts[0], err = unix.TimeToTimespec(atime); err != nil {
					return err
				}
			}
			if mok {
				if ts[1], err = unix.TimeToTimespec(mtime); err != nil {
					return err
				}
			}
			if err := unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return err
			}
		}
		st, _, err := stat(dirfd, name, 0)
		if err == nil {
			out.FromStat(&st)
		}
		return err
	})
}

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if attr == "security.capability" && n.capsUnset.Load() {
		return 0, syscall.ENODATA
	}
	rel, errno := n.path()
	if errno != 0 {
		return 0, errno
	}
	var size int
	errno = n.v.withPathFd(rel, func(fd int) (err error) {
		size, err = unix.Getxattr(procPath(fd), attr, dest)
		return err
	})
	return uint32(size), errno
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	rel, errno := n.path()
	if errno != 0 {
		return 0, errno
	}
	var size int
	errno = n.v.withPathFd(rel, func(fd int) (err error) {
		size, err = unix.Listxattr(procPath(fd), dest)
		return err
	})
	return uint32(size), errno
}

// setxattr and removexattr change the node's backing file's xattrs.
func (n *node) setxattr(attr string, data []byte, flags uint32) syscall.Errno {
	rel, errno := n.path()
	if errno != 0 {
		return errno
	}
	return n.v.withPathFd(rel, func(fd int) error {
		return unix.Setxattr(procPath(fd), attr, data, int(flags))
	})
}

func (n *node) removexattr(attr string) syscall.Errno {
	rel, errno := n.path()
	if errno != 0 {
		return errno
	}
	return n.v.withPathFd(rel, func(fd int) error {
		return unix.Removexattr(procPath(fd), attr)
	})
}
