package runs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"benchd.dev/fsmon"
	"benchd.dev/tasks"
)

// diskFSType is the attempt disk's file system.
const diskFSType = "ext4"

// storageBytes is the size of an attempt's disk and the view's storage
// size (fsmon.Config.StorageBytes): the task's [environment] storage_mb,
// else Config.WorkspaceStorage, else fsmon.DefaultStorageBytes.
func (e *Engine) storageBytes(task *tasks.Task) int64 {
	switch {
	case task.StorageMB > 0:
		return task.StorageMB << 20
	case e.cfg.WorkspaceStorage > 0:
		return e.cfg.WorkspaceStorage
	}
	return fsmon.DefaultStorageBytes
}

// openFiles is the bound on an attempt's view's backing descriptors
// (fsmon.Config.MaxOpenFiles): Config.WorkspaceOpenFiles, else the
// view's share of the descriptor limit as it is now across
// Config.ViewsAtOnce views, else 0 (fsmon's default).
func (e *Engine) openFiles() int {
	if e.cfg.WorkspaceOpenFiles == 0 && e.cfg.ViewsAtOnce > 0 {
		return fsmon.MaxOpenFilesFor(e.cfg.ViewsAtOnce)
	}
	return e.cfg.WorkspaceOpenFiles
}

// makeDisk makes the sparse image img of size bytes (mode 0600, a new
// file) and an ext4 file system on it: no journal (the disk lives for
// one attempt, and a crash is recovered from the view's journal), no
// blocks reserved for root (-m 0: the whole size is the agent's), one
// inode per 8 KiB (a tree of many small files runs out of bytes before
// inodes), no discard (the image is sparse already) and lazily
// initialised inode tables: the image reads as zeros where nothing was
// written, so the mount's noinit_itable skips zeroing them at all.
func makeDisk(ctx context.Context, img string, size int64) error {
	f, err := os.OpenFile(img, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("unable to make the attempt disk: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("unable to make the attempt disk: %w", err)
	}
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-i", "8192", "-O", "^has_journal",
		"-E", "lazy_itable_init=1,nodiscard", "-L", "benchd-attempt", img)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("unable to make the attempt disk: mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mountDisk attaches img to a free loop device and mounts it on mnt
// (nosuid, nodev; read-only if readOnly). The device is taken with
// LOOP_CTL_GET_FREE and set up with one LOOP_CONFIGURE (Linux 5.8),
// with LO_FLAGS_AUTOCLEAR, so that it detaches itself when the file
// system is unmounted: no device outlives the mount, whatever ends
// benchd, and nothing has to find it again to free it. This is done
// here rather than by mount -o loop so that benchd knows which device
// it got, needs no util-linux, and a failure between attaching and
// mounting leaves nothing behind (closing the device clears it).
func mountDisk(img, mnt string, readOnly bool) error {
	dev, loop, err := attachLoop(img, readOnly)
	if err != nil {
		return fmt.Errorf("unable to mount the attempt disk: %w", err)
	}
	// With AUTOCLEAR the mount holds the device from here; closing our
	// descriptor after a failed mount clears it.
	defer loop.Close()
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount(dev, mnt, diskFSType, flags, "noinit_itable"); err != nil {
		return fmt.Errorf("unable to mount the attempt disk %s (%s) on %s: %w", img, dev, mnt, err)
	}
	return nil
}

// attachLoop attaches img to a free loop device and returns its path
// and an open descriptor of it. A device another process takes between
// LOOP_CTL_GET_FREE and LOOP_CONFIGURE (EBUSY) is given up for the next
// free one.
func attachLoop(img string, readOnly bool) (string, *os.File, error) {
	mode, loFlags := os.O_RDWR, uint32(unix.LO_FLAGS_AUTOCLEAR)
	if readOnly {
		mode, loFlags = os.O_RDONLY, loFlags|unix.LO_FLAGS_READ_ONLY
	}
	f, err := os.OpenFile(img, mode|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, fmt.Errorf("no loop devices: %w", err)
	}
	defer ctl.Close()
	for try := 0; ; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", nil, fmt.Errorf("no free loop device: LOOP_CTL_GET_FREE: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		loop, err := os.OpenFile(dev, mode|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", nil, fmt.Errorf("unable to open %s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(f.Fd())}
		cfg.Info.Flags = loFlags
		copy(cfg.Info.File_name[:], img)
		err = unix.IoctlLoopConfigure(int(loop.Fd()), &cfg)
		if err == nil {
			return dev, loop, nil
		}
		loop.Close()
		if !errors.Is(err, unix.EBUSY) || try == 10 {
			return "", nil, fmt.Errorf("unable to attach %s to %s: LOOP_CONFIGURE: %w", img, dev, err)
		}
	}
}

// unmountBusyWait is how long unmountDisk retries a busy disk before it
// detaches it lazily, and how long MountDiskReadOnly waits for such a
// detached disk to let go of its image. Long enough for a loaded host
// (the view's server may still be closing the files whose releases the
// kernel sent after the agent's close), short beside an attempt.
var unmountBusyWait = 30 * time.Second

// unmountDisk unmounts the attempt disk on mnt, which detaches its loop
// device (AUTOCLEAR). The file system is synced first, so the image holds
// the whole tree whatever follows. A busy file system (a process of the
// attempt not yet gone, the view's server still closing files) is
// retried for unmountBusyWait, then synced again and detached lazily:
// the device frees itself when the last user is gone.
func unmountDisk(mnt string) error {
	syncDisk(mnt)
	deadline := time.Now().Add(unmountBusyWait)
	for {
		err := unix.Unmount(mnt, 0)
		if err == nil || errors.Is(err, unix.EINVAL) && !isDiskMount(mnt) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("unable to unmount the attempt disk on %s: %w", mnt, err)
		}
		if time.Now().After(deadline) {
			syncDisk(mnt)
			if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unable to unmount the attempt disk on %s: %w", mnt, err)
			}
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncDisk writes what the file system mounted on mnt holds in memory to
// its device, and so to the image file behind the loop device, where a
// later mount of the image (MountDiskReadOnly) reads it. A failure is
// not an error of its own: the unmount that follows syncs too.
func syncDisk(mnt string) {
	fd, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Syncfs(fd)
	unix.Close(fd)
}

// imageAttached reports whether a loop device still has img as its
// backing file: a disk detached lazily whose last user is not gone yet.
func imageAttached(img string) bool {
	if real, err := filepath.EvalSymlinks(img); err == nil {
		img = real
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == img {
			return true
		}
	}
	return false
}

// diskFullBytes: a disk with less than this available at the agent's
// end, or no free inode, counts as full (journal.CapStorage). ext4
// refuses a delayed-allocation write with some space still free: a
// 64 MiB dd into disks of 16, 32 and 600 MiB stopped with ENOSPC with
// 0.9 MiB, 0.6 MiB and 0.3 MiB available. An attempt that leaves less
// than this free is counted as full even if no write of it failed.
const diskFullBytes = 2 << 20

// diskFull reports whether the attempt disk mounted on mnt is full: less
// than diskFullBytes available to the agent, or no free inode.
func diskFull(mnt string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		return false, fmt.Errorf("unable to read the attempt disk's free space: %w", err)
	}
	return st.Bavail*uint64(st.Bsize) < diskFullBytes || st.Ffree == 0, nil
}

// diskMount is an attempt disk in /proc/self/mountinfo.
type diskMount struct {
	point, source string
}

// diskMounts lists the ext4 mounts on a loop device whose mountpoint is
// an attempt's backing directory below attemptsDir (attemptsDir/ID/backing),
// and whose device's backing file is that attempt's disk image: only the
// disks benchd made, never another mount.
func diskMounts(attemptsDir string) ([]diskMount, error) {
	if real, err := filepath.EvalSymlinks(attemptsDir); err == nil {
		attemptsDir = real // mountinfo has the real paths
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []diskMount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		a, b := strings.Fields(pre), strings.Fields(post)
		if !ok || len(a) < 5 || len(b) < 2 || b[0] != diskFSType || !strings.HasPrefix(b[1], "/dev/loop") {
			continue
		}
		point := unescapeMountinfo(a[4])
		if point != AttemptDir(filepath.Dir(point)).Backing() || filepath.Dir(filepath.Dir(point)) != filepath.Clean(attemptsDir) {
			continue
		}
		backingFile, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(b[1]), "loop", "backing_file"))
		if err != nil || strings.TrimSpace(string(backingFile)) != AttemptDir(filepath.Dir(point)).DiskImage() {
			continue
		}
		out = append(out, diskMount{point: point, source: b[1]})
	}
	return out, sc.Err()
}

// isDiskMount reports whether an attempt disk is mounted on mnt.
func isDiskMount(mnt string) bool {
	ms, _ := diskMounts(filepath.Dir(filepath.Dir(mnt)))
	for _, m := range ms {
		if m.point == filepath.Clean(mnt) {
			return true
		}
	}
	return false
}

// unescapeMountinfo undoes the octal escapes of mountinfo (\040 for a
// space).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cleanupDisks unmounts the attempt disks a crashed benchd left mounted
// below attemptsDir (their loop devices detach themselves). The images
// stay: they hold the final trees, which start-up recovery reads
// (MountDiskReadOnly).
func cleanupDisks(attemptsDir string) error {
	ms, err := diskMounts(attemptsDir)
	if err != nil {
		return fmt.Errorf("unable to look for leftover attempt disks: %w", err)
	}
	var errs []error
	for _, m := range ms {
		if err := unmountDisk(m.point); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MountDiskReadOnly mounts the disk image of the attempt whose work
// directory is attemptDir read-only on its backing directory, for
// start-up recovery to read the tree a crashed attempt left, and returns
// the undo. An attempt without a disk image (one made before attempts
// had disks, or one that stopped before its disk was made) is left as it
// is, with an undo that does nothing.
func MountDiskReadOnly(attemptDir string) (unmount func() error, err error) {
	img, backing := AttemptDir(attemptDir).DiskImage(), AttemptDir(attemptDir).Backing()
	if _, err := os.Stat(img); errors.Is(err, os.ErrNotExist) {
		return func() error { return nil }, nil
	}
	if isDiskMount(backing) {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(backing, 0o700); err != nil {
		return nil, fmt.Errorf("unable to mount the attempt disk: %w", err)
	}
	// A disk detached lazily may still be in use, and its last writes
	// would land in the image under the read-only mount: wait for it to
	// let go (it was synced before it was detached, so the tree is whole
	// even if it does not).
	for deadline := time.Now().Add(unmountBusyWait); imageAttached(img) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if err := mountDisk(img, backing, true); err != nil {
		return nil, err
	}
	return func() error { return unmountDisk(backing) }, nil
}
