package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// DropFinalTree removes the attempt's disk image and its backing
// directory: the caller calls it once the attempt's journal, whose
// blobs hold the final tree, is in the store, so the tree is kept once
// (re-grading, diff, show and export read it from the store). A backing
// directory that is still a mountpoint (the disk mounted again for
// recovery or a read still going on) is left, and so is the image
// beside it; the error says so. A missing image or directory is no
// error: an attempt made without a disk has its tree in the backing
// directory, which goes the same way.
func (d AttemptDir) DropFinalTree() error {
	dirSt, err := os.Lstat(d.Path())
	if err != nil {
		return fmt.Errorf("unable to drop the final tree: %w", err)
	}
	backing := d.Backing()
	if st, err := os.Lstat(backing); err == nil {
		if st.Sys().(*syscall.Stat_t).Dev != dirSt.Sys().(*syscall.Stat_t).Dev {
			return fmt.Errorf("unable to drop the final tree: %s is mounted", backing)
		}
		if err := os.RemoveAll(backing); err != nil {
			return fmt.Errorf("unable to drop the final tree: %w", err)
		}
	}
	if err := os.Remove(d.DiskImage()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unable to drop the disk image: %w", err)
	}
	return nil
}
