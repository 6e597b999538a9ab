package fsmon_test

import (
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"benchd.dev/fsmon"
	"benchd.dev/fsmon/journal"
)

// TestLongPaths: a path of PATH_MAX-1 bytes works in the view as on a
// native file system, though the backing directory's own path in front
// of it would pass PATH_MAX, and every change at that depth is
// journaled (the journal replays to the final tree). The calls are made
// relative to a descriptor of a directory of the view (as a process
// makes them relative to its working directory): the view's root, and
// a directory below it, from which the path relative to the root is
// longer than PATH_MAX.
func TestLongPaths(t *testing.T) {
	const pathMax = 4096
	name := func(c byte) string { return strings.Repeat(string(c), 255) }
	// 15 directories of 255 bytes and a last name of 255: 4095 bytes.
	var dirs []string
	for i := range 15 {
		dirs = append(dirs, name(byte('a'+i)))
	}
	dir := path.Join(dirs...)
	at := func(c byte) string { return dir + "/" + name(c) }
	if got := len(at('x')); got != pathMax-1 {
		t.Fatalf("test path: got %d bytes, want %d", got, pathMax-1)
	}
	for _, c := range []struct {
		name string
		mode fsmon.Mode
		base string // the directory the calls are relative to
	}{
		{"content", fsmon.ModeContent, ""},
		{"writes", fsmon.ModeWrites, ""},
		{"content-below", fsmon.ModeContent, "work"},
		{"writes-below", fsmon.ModeWrites, "work"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mode := c.mode
			v := mountWith(t, fsmon.Config{Mode: mode, Policy: allowAll})
			if c.base != "" {
				if err := os.Mkdir(v.p(c.base), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			mnt, err := unix.Open(v.p(c.base), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(mnt)
			// The records' paths are relative to the view's root.
			rel := func(p string) string { return path.Join(c.base, p) }
			step := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s at %d bytes: %v", what, len(at('x')), err)
				}
			}
			for i := range dirs {
				step("mkdir of the chain", unix.Mkdirat(mnt, path.Join(dirs[:i+1]...), 0o755))
			}
			file, sub, fifo, hard, moved, link, short := at('f'), at('d'), at('p'), at('h'), at('m'), at('l'), at('t')

			step("mkdir", unix.Mkdirat(mnt, sub, 0o750))
			fd, err := unix.Openat(mnt, file, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
			step("create", err)
			_, err = unix.Write(fd, []byte("hello, "))
			step("write", err)
			step("setxattr", unix.Fsetxattr(fd, "user.note", []byte("deep"), 0))
			_, err = unix.Write(fd, []byte("world\n"))
			step("write", err)
			unix.Close(fd)
			step("chmod", unix.Fchmodat(mnt, file, 0o600, 0))
			step("chown", unix.Fchownat(mnt, file, 1000, 1000, unix.AT_SYMLINK_NOFOLLOW))
			// truncate(2) takes no directory descriptor: the
			// directory's magic link keeps the path short. The
			// file is made by mknod, not opened, so that no release
			// of it is still on its way (the kernel sends RELEASE
			// after close returns, and one that read the content
			// before the truncate would be recorded after it).
			step("mknod", unix.Mknodat(mnt, short, syscall.S_IFREG|0o644, 0))
			dfd, err := unix.Openat(mnt, dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			step("open the directory", err)
			step("truncate", unix.Truncate("/proc/self/fd/"+strconv.Itoa(dfd)+"/"+name('t'), 5))
			unix.Close(dfd)
			// Each file has one handle open for writing, one after
			// the other: the releases of two, which the kernel sends
			// late, could be recorded in either order.
			fd, err = unix.Openat(mnt, short, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
			step("open", err)
			_, err = unix.Write(fd, []byte("x"))
			step("write", err)
			unix.Close(fd)
			step("utimens", unix.UtimesNanoAt(mnt, file, []unix.Timespec{{Sec: 1000}, {Sec: 2000}}, unix.AT_SYMLINK_NOFOLLOW))
			step("link", unix.Linkat(mnt, file, mnt, hard, 0))
			step("rename", unix.Renameat(mnt, hard, mnt, moved))
			step("symlink", unix.Symlinkat(name('f'), mnt, link))
			step("mkfifo", unix.Mknodat(mnt, fifo, syscall.S_IFIFO|0o640, 0))
			step("unlink", unix.Unlinkat(mnt, moved, 0))
			step("rmdir", unix.Unlinkat(mnt, sub, unix.AT_REMOVEDIR))

			var st unix.Stat_t
			step("stat", unix.Fstatat(mnt, file, &st, unix.AT_SYMLINK_NOFOLLOW))
			if st.Size != 13 || st.Mode&0o7777 != 0o600 || st.Uid != 1000 || st.Mtim.Sec != 2000 {
				t.Errorf("file at the bottom: got size %d, mode %#o, uid %d, mtime %d; want 13, 0600, 1000, 2000", st.Size, st.Mode&0o7777, st.Uid, st.Mtim.Sec)
			}
			buf := make([]byte, 300)
			n, err := unix.Readlinkat(mnt, link, buf)
			if step("readlink", err); string(buf[:n]) != name('f') {
				t.Errorf("readlink: got %q, want the file's name", buf[:n])
			}
			fd, err = unix.Openat(mnt, file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			step("open for reading", err)
			n, _ = unix.Read(fd, buf)
			if string(buf[:n]) != "hello, world\n" {
				t.Errorf("read back %q, want %q", buf[:n], "hello, world\n")
			}
			n, err = unix.Fgetxattr(fd, "user.note", buf)
			if step("getxattr", err); string(buf[:n]) != "deep" {
				t.Errorf("getxattr: got %q, want %q", buf[:n], "deep")
			}
			unix.Close(fd)
			dfd, err = unix.Openat(mnt, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			step("open the directory", err)
			names, err := os.NewFile(uintptr(dfd), "dir").Readdirnames(-1)
			step("readdir", err)
			if len(names) != 4 {
				t.Errorf("readdir: got %d entries, want 4 (two files, fifo, symlink)", len(names))
			}

			recs := v.finish()
			for _, w := range []struct {
				op journal.Op
				p  string
			}{
				{journal.OpMkdir, dir},
				{journal.OpMkdir, sub},
				{journal.OpCreate, file},
				{journal.OpSetxattr, file},
				{journal.OpOpen, short},
				{journal.OpChmod, file},
				{journal.OpChown, file},
				{journal.OpUtimens, file},
				{journal.OpMknod, short},
				{journal.OpTruncate, short},
				{journal.OpRelease, file},
				{journal.OpLink, hard},
				{journal.OpRename, moved},
				{journal.OpSymlink, link},
				{journal.OpMknod, fifo},
				{journal.OpUnlink, moved},
				{journal.OpRmdir, sub},
			} {
				want(t, recs, w.op, rel(w.p), journal.Allowed, "ok")
			}
			if tr := want(t, recs, journal.OpTruncate, rel(short), journal.Allowed, "ok"); tr.SHA256 != sum(make([]byte, 5)) || tr.Size != 5 {
				t.Errorf("truncate by path: recorded content %s of %d bytes, want 5 zero bytes", tr.SHA256, tr.Size)
			}
			if mode == fsmon.ModeWrites {
				if got := len(find(recs, journal.OpWrite, rel(file))) + len(find(recs, journal.OpWrite, rel(short))); got != 3 {
					t.Errorf("writes mode: got %d write records, want 3", got)
				}
			}
		})
	}
}

// TestNoLinkFollowed: a directory of the backing tree swapped for a
// link after the kernel looked it up (what a race with the view could
// leave) leads no operation out of the backing tree: each fails, and
// what the link points at is unchanged.
func TestNoLinkFollowed(t *testing.T) {
	v := mount(t, fsmon.ModeContent)
	outside := t.TempDir()
	if err := os.WriteFile(outside+"/mod.py", []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The kernel caches the entries it looked up: later calls name
	// the nodes, and the view resolves their paths.
	if _, err := os.Stat(v.p("src/pkg/mod.py")); err != nil {
		t.Fatal(err)
	}
	pkg := v.backing + "/src/pkg"
	if err := os.Rename(pkg, v.backing+"/src/pkg.real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, pkg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		do   func() error
	}{
		{"chmod", func() error { return os.Chmod(v.p("src/pkg/mod.py"), 0o600) }},
		{"chown", func() error { return os.Lchown(v.p("src/pkg/mod.py"), 1000, 1000) }},
		{"truncate", func() error { return os.Truncate(v.p("src/pkg/mod.py"), 1) }},
		{"setxattr", func() error { return unix.Lsetxattr(v.p("src/pkg/mod.py"), "user.x", []byte("1"), 0) }},
		{"mkdir", func() error { return os.Mkdir(v.p("src/pkg/new"), 0o755) }},
		{"create", func() error { return os.WriteFile(v.p("src/pkg/new.py"), nil, 0o644) }},
		{"symlink", func() error { return os.Symlink("x", v.p("src/pkg/link")) }},
		{"unlink", func() error { return os.Remove(v.p("src/pkg/mod.py")) }},
	} {
		if err := c.do(); err == nil {
			t.Errorf("%s through the swapped directory: succeeded, want an error", c.what)
		}
	}
	st, err := os.Lstat(outside + "/mod.py")
	if err != nil || st.Mode().Perm() != 0o644 || st.Size() != 8 || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the file the link points at changed: %v, %v", st, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("the directory the link points at holds %d entries, want 1", len(ents))
	}
	// Put the tree back, so that the journal still accounts for it.
	os.Remove(pkg)
	os.Rename(v.backing+"/src/pkg.real", pkg)
}
