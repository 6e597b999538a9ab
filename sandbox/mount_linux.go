package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// base is where the init assembles the new root before pivoting into it.
// Its mount namespace is private by then: the host's /tmp is not touched.
const base = "/tmp"

// stageDir holds, during set-up only, the files bound into the sandbox.
const stageDir = ".benchd-stage"

// devNodes are the host devices bound into the sandbox's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// devLinks are the symbolic links of the sandbox's /dev.
var devLinks = [][2]string{
	{"fd", "/proc/self/fd"},
	{"stdin", "/proc/self/fd/0"},
	{"stdout", "/proc/self/fd/1"},
	{"stderr", "/proc/self/fd/2"},
	{"ptmx", "pts/ptmx"},
}

// buildRoot assembles the sandbox's root and pivots into it. It runs in
// the init, as root, in the new mount and pid namespaces.
func buildRoot(wc *wireConfig) (err error) {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	keep := func(fd int) int { fds = append(fds, fd); return fd }

	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}

	// Clone every source first: once the new root is mounted on base,
	// a source below base would be hidden. Only the allow-listed
	// entries of the host's / and /etc are looked at.
	roAttrs := uint64(unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	var host []hostEntry
	for _, name := range hostRoot {
		e, ok, err := hostItem("/"+name, roAttrs)
		if err != nil {
			return err
		}
		if ok {
			host = append(host, keepEntry(e, keep))
		}
	}
	etcNames, err := etcEntries()
	if err != nil {
		return err
	}
	for _, name := range etcNames {
		e, ok, err := hostItem("/etc/"+name, roAttrs)
		if err != nil {
			return err
		}
		if ok {
			host = append(host, keepEntry(e, keep))
		}
	}
	_, err = os.Stat("/usr/local")
	hideLocal := err == nil
	wsTree := -1
	if wc.Workspace != "" {
		t, err := cloneTree(wc.Workspace, true, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
		if err != nil {
			return err
		}
		wsTree = keep(t)
	}
	bindTrees := make([]int, len(wc.Binds))
	bindDirs := make([]bool, len(wc.Binds))
	for i, b := range wc.Binds {
		attrs := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		if !b.Writable {
			attrs |= unix.MOUNT_ATTR_RDONLY
		}
		fi, err := os.Stat(b.Source)
		if err != nil {
			return fmt.Errorf("bind source: %w", err)
		}
		t, err := cloneTree(b.Source, fi.IsDir(), attrs)
		if err != nil {
			return err
		}
		bindTrees[i], bindDirs[i] = keep(t), fi.IsDir()
	}

	// The new root: a tmpfs that holds the mount points, read-only once
	// built.
	if err := unix.Mount("sandbox", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount new root: %w", err)
	}
	root, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open new root: %w", err)
	}
	keep(root)
	for _, h := range host {
		if h.tree < 0 {
			fd, err := mountPoint(root, path.Dir(h.path), true)
			if err != nil {
				return fmt.Errorf("make %s: %w", path.Dir(h.path), err)
			}
			err = unix.Symlinkat(h.link, fd, path.Base(h.path))
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("link %s: %w", h.path, err)
			}
			continue
		}
		if err := attach(h.tree, root, h.path, h.dir, true); err != nil {
			return err
		}
	}
	if err := writeEtc(root, wc); err != nil {
		return err
	}
	// /usr/local holds what was installed by hand, outside the
	// distribution (other toolchains, tools with their own data): empty
	// unless a Bind names a part of it.
	if hideLocal {
		if err := mountFS(root, "/usr/local", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
			return err
		}
	}

	// /proc, for the new pid namespace: only the sandbox's processes.
	if err := mountFS(root, "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if err := buildDev(root, wc.TmpfsMax); err != nil {
		return err
	}
	if err := mountFS(root, "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%d", wc.TmpfsMax)); err != nil {
		return err
	}
	// The host's /run holds its daemons' sockets (a read-only mount does
	// not stop connect), namespaces and FUSE views: none of it is shown.
	if err := mountFS(root, "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return err
	}
	if err := mountFS(root, wc.Home, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("mode=0700,uid=%d,gid=%d,size=%d", wc.UID, wc.GID, wc.TmpfsMax)); err != nil {
		return err
	}
	if wsTree >= 0 {
		if err := attach(wsTree, root, WorkspacePath, true, true); err != nil {
			return err
		}
	}
	for i, b := range wc.Binds {
		if err := attach(bindTrees[i], root, b.Target, bindDirs[i], true); err != nil {
			return err
		}
	}

	// Files and the empty file that masks files come from a staging
	// directory in the new root, removed before the agent starts.
	if err := unix.Mkdirat(root, stageDir, 0o700); err != nil {
		return fmt.Errorf("make staging directory: %w", err)
	}
	stage, err := unix.Openat(root, stageDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open staging directory: %w", err)
	}
	keep(stage)
	staged := []string{"empty"}
	if err := writeAt(stage, "empty", nil, 0o444); err != nil {
		return err
	}
	for i, f := range wc.Files {
		name := "f" + strconv.Itoa(i)
		staged = append(staged, name)
		if err := writeAt(stage, name, f.Data, uint32(f.Mode.Perm())); err != nil {
			return err
		}
		t, err := cloneTreeAt(stage, name, false, roAttrs)
		if err != nil {
			return err
		}
		keep(t)
		if err := attach(t, root, f.Path, false, true); err != nil {
			return err
		}
	}

	if err := applyMasks(root, stage, wc.Masks); err != nil {
		return err
	}
	for _, name := range staged {
		if err := unix.Unlinkat(stage, name, 0); err != nil {
			return fmt.Errorf("remove staged file: %w", err)
		}
	}
	if err := unix.Unlinkat(root, stageDir, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("remove staging directory: %w", err)
	}

	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// it leaves the new root alone, with nothing of the host's tree
	// reachable but what was bound in.
	if err := unix.Fchdir(root); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	ro := []string{"/", "/dev"}
	if hideLocal {
		ro = append(ro, "/usr/local")
	}
	for _, p := range ro {
		if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	return nil
}

// applyMasks covers every place of the assembled tree (below base, as
// mountinfo shows it) where a masked path's content is visible. It also
// detaches any procfs of the host that came along with a bound tree: it
// would show the host's processes and, through /proc/PID/root, their
// unmasked view.
func applyMasks(root, stage int, masks []wireMask) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mounts: %w", err)
	}
	ms, err := parseMountinfo(f)
	f.Close()
	if err != nil {
		return err
	}
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.FSType == "proc" && within(m.Point, base) && m.Point != base+"/proc" {
			if err := unix.Unmount(m.Point, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
				return fmt.Errorf("detach host procfs at %s: %w", m.Point, err)
			}
		}
	}
	seen := map[string]bool{}
	for _, mk := range masks {
		for _, p := range exposures(ms, mk.ID, base) {
			inner := "/" + rel(p, base)
			if seen[inner] || inner == "/" {
				continue
			}
			seen[inner] = true
			if err := maskAt(root, stage, inner); err != nil {
				return fmt.Errorf("mask %s at %s: %w", mk.Path, inner, err)
			}
		}
	}
	return nil
}

// maskAt covers the path p of the new root: a directory with an empty
// read-only tmpfs, anything else with an empty read-only file.
func maskAt(root, stage int, p string) error {
	fd, err := unix.Openat2(root, strings.TrimPrefix(p, "/"), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOENT) {
		return nil // covered by another mount already: not visible
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.Mount("masked", procFD(fd), "tmpfs",
			unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0555,size=4k")
	}
	t, err := cloneTreeAt(stage, "empty", false, uint64(unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC))
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return unix.MoveMount(t, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// buildDev makes a minimal /dev: a few host devices, the usual links, a
// private devpts and /dev/shm of at most shmMax bytes.
func buildDev(root int, shmMax int64) error {
	if err := mountFS(root, "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return err
	}
	dev, err := unix.Openat(root, "dev", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev: %w", err)
	}
	defer unix.Close(dev)
	for _, n := range devNodes {
		if err := writeAt(dev, n, nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+n, base+"/dev/"+n, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	for _, l := range devLinks {
		if err := unix.Symlinkat(l[1], dev, l[0]); err != nil {
			return fmt.Errorf("link /dev/%s: %w", l[0], err)
		}
	}
	if err := mountFS(root, "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	return mountFS(root, "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%d", shmMax))
}

// cloneTree makes a detached copy of the mount tree at the host path p
// (recursive for a directory) with the given mount attributes set on
// every mount of the copy.
func cloneTree(p string, recursive bool, attrs uint64) (int, error) {
	return cloneTreeAt(unix.AT_FDCWD, p, recursive, attrs)
}

func cloneTreeAt(dirfd int, p string, recursive bool, attrs uint64) (int, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
	setFlags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
		setFlags |= unix.AT_RECURSIVE
	}
	fd, err := unix.OpenTree(dirfd, p, flags)
	if err != nil {
		return -1, fmt.Errorf("clone mount of %s: %w", p, err)
	}
	if err := unix.MountSetattr(fd, "", setFlags, &unix.MountAttr{Attr_set: attrs}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("set attributes of %s: %w", p, err)
	}
	return fd, nil
}

// attach mounts the detached tree at p in the new root, making the mount
// point (a directory or a file) when it is missing. With resolve, p is
// looked up inside the new root (its symbolic links cannot lead out).
func attach(tree, root int, p string, dir, resolve bool) error {
	var fd int
	var err error
	if resolve {
		fd, err = mountPoint(root, p, dir)
	} else {
		fd, err = makeAt(root, strings.TrimPrefix(p, "/"), dir)
	}
	if err != nil {
		return fmt.Errorf("mount point %s: %w", p, err)
	}
	defer unix.Close(fd)
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount at %s: %w", p, err)
	}
	return nil
}

// mountFS mounts a new filesystem at p of the new root, making the
// directory when it is missing.
func mountFS(root int, p, fstype string, flags uintptr, data string) error {
	fd, err := mountPoint(root, p, true)
	if err != nil {
		return fmt.Errorf("mount point %s: %w", p, err)
	}
	defer unix.Close(fd)
	if err := unix.Mount(fstype, procFD(fd), fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s at %s: %w", fstype, p, err)
	}
	return nil
}

// mountPoint opens p inside the new root (O_PATH), creating it and its
// missing parents as directories (the last as a file unless dir). Making
// one inside a read-only host tree fails with EROFS.
func mountPoint(root int, p string, dir bool) (int, error) {
	rp := strings.TrimPrefix(p, "/")
	fd, err := openIn(root, rp)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	parent, err := mountPoint(root, path.Dir(p), true)
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	return makeAt(parent, path.Base(p), dir)
}

// makeAt creates name in dirfd (a directory, or an empty file) if it is
// missing and opens it O_PATH.
func makeAt(dirfd int, name string, dir bool) (int, error) {
	var err error
	if dir {
		err = unix.Mkdirat(dirfd, name, 0o755)
	} else {
		var fd int
		fd, err = unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
	}
	if err != nil && err != unix.EEXIST {
		return -1, err
	}
	return unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

func openIn(root int, p string) (int, error) {
	if p == "" {
		p = "."
	}
	return unix.Openat2(root, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// writeAt creates the file name in dirfd with data and mode.
func writeAt(dirfd int, name string, data []byte, mode uint32) error {
	fd, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	defer unix.Close(fd)
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		data = data[n:]
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", name, err)
	}
	return nil
}

func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }
