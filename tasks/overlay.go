package tasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ApplyOverlay applies an overlay onto dst, a copy of a workspace: it
// removes each path of deletes (relative, slash-separated; a missing path
// is not an error), then copies the tree overlayDir over dst, replacing
// files of the same path. A missing overlayDir overlays nothing.
func ApplyOverlay(dst, overlayDir string, deletes []string) error {
	for _, d := range deletes {
		if err := checkRel(d); err != nil {
			return fmt.Errorf("unable to apply overlay: delete: %w", err)
		}
		if err := os.RemoveAll(filepath.Join(dst, filepath.FromSlash(d))); err != nil {
			return fmt.Errorf("unable to apply overlay: %w", err)
		}
	}
	if overlayDir == "" {
		return nil
	}
	if _, err := os.Stat(overlayDir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := CopyTree(overlayDir, dst); err != nil {
		return fmt.Errorf("unable to apply overlay: %w", err)
	}
	return nil
}

// CopyTree copies the tree src into dst (created if missing), keeping
// permission bits and copying symlinks as links. Files already in dst
// are replaced, never written through: a symlink in dst is not followed.
// Devices, sockets and fifos are an error.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s is outside %s", p, src)
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			if fi, err := os.Lstat(target); err == nil && !fi.IsDir() {
				if err := os.Remove(target); err != nil {
					return err
				}
			}
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			return os.Chmod(target, info.Mode().Perm())
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := removeNonDir(target); err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			if err := removeNonDir(target); err != nil {
				return err
			}
			return copyFile(p, target, info.Mode().Perm())
		}
		return fmt.Errorf("unable to copy %s: not a file, directory or symlink", p)
	})
}

func removeNonDir(p string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return os.RemoveAll(p)
	}
	return os.Remove(p)
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return WriteNew(dst, in, perm)
}

// WriteNew writes what r holds to a new file dst (which must not exist)
// with mode perm, whatever the umask.
func WriteNew(dst string, r io.Reader, perm fs.FileMode) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm)
}
