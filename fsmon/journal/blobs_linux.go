package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// link writes p to a new read-only file with no name in final's
// directory (O_TMPFILE) and links it in as final, so that a blob is in
// place whole or not at all and no temporary name is made and removed.
// It returns linked, existed when another writer placed final first,
// or unlinked with no error when the file system makes no file with
// no name (the caller writes a temporary file).
func (b *Blobs) link(p []byte, final string) (placement, error) {
	dir := filepath.Dir(final)
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o444)
	if errors.Is(err, unix.ENOENT) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return unlinked, err
		}
		fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o444)
	}
	switch {
	case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL):
		return unlinked, nil // no O_TMPFILE here
	case err != nil:
		return unlinked, err
	}
	defer unix.Close(fd)
	for len(p) > 0 {
		n, err := unix.Write(fd, p)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			return unlinked, err
		}
		p = p[n:]
	}
	// Through the descriptor's magic link: linkat with AT_EMPTY_PATH
	// needs CAP_DAC_READ_SEARCH.
	err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, final, unix.AT_SYMLINK_FOLLOW)
	switch {
	case errors.Is(err, unix.EEXIST):
		return existed, nil
	case err != nil:
		return unlinked, err
	}
	return linked, nil
}

// dense reports whether the file st describes has no hole: as many
// blocks as its size needs.
func dense(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return !ok || sys.Blocks*512 >= st.Size()
}
