package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
)

// Entry is one path of a Tree: a regular file, a directory or a symlink.
type Entry struct {
	Path   string      `json:"path"` // slash-separated, relative to the root
	Type   string      `json:"type"` // "file", "dir" or "symlink"
	Mode   fs.FileMode `json:"mode"` // permission bits
	Size   int64       `json:"size,omitempty"`
	SHA256 string      `json:"sha256,omitempty"` // hex content hash (files)
	Target string      `json:"target,omitempty"` // link target (symlinks)
}

// Tree is a snapshot of a directory: every entry by relative path.
type Tree map[string]Entry

// Paths returns the tree's paths in sorted order.
func (t Tree) Paths() []string {
	ps := make([]string, 0, len(t))
	for p := range t {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// ScanTree walks dir and hashes every regular file. Other file types
// (devices, sockets, fifos) are recorded with type "other".
func ScanTree(dir string) (Tree, error) {
	return walkTree(dir, hashOpenFile)
}

// walkTree walks dir and builds its Tree; content is called for every
// regular file, open for reading, and returns its hash and size
// (ScanTree only hashes, SnapshotTree also stores the content as a
// blob).
//
// Each directory is read through a descriptor opened relative to its
// parent's (os.Root), never by a path from dir: a tree whose relative
// paths are near PATH_MAX is walked as well as any other, though dir's
// own path in front of them would pass the limit. No symlink is
// followed out of dir.
func walkTree(dir string, content func(f *os.File) (string, int64, error)) (Tree, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("unable to scan %s: %w", dir, err)
	}
	t := Tree{}
	err = walkDir(root, "", t, content)
	root.Close()
	if err != nil {
		return nil, fmt.Errorf("unable to scan %s: %w", dir, err)
	}
	return t, nil
}

// walkDir adds the entries of directory dir, at prefix in the tree, and
// everything below them to t.
func walkDir(dir *os.Root, prefix string, t Tree, content func(f *os.File) (string, int64, error)) error {
	f, err := dir.Open(".")
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		rel := path.Join(prefix, name)
		info, err := dir.Lstat(name)
		if err != nil {
			return err
		}
		e := Entry{Path: rel, Mode: info.Mode().Perm()}
		switch {
		case info.Mode().IsRegular():
			e.Type = "file"
			f, err := dir.Open(name)
			if err != nil {
				return err
			}
			if got, err := f.Stat(); err != nil || !os.SameFile(got, info) {
				// Replaced since the Lstat (by a link, maybe).
				f.Close()
				return fmt.Errorf("%s: changed while scanned", rel)
			}
			e.SHA256, e.Size, err = content(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		case info.IsDir():
			e.Type = "dir"
			sub, err := dir.OpenRoot(name)
			if err != nil {
				return err
			}
			err = walkDir(sub, rel, t, content)
			sub.Close()
			if err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			e.Type = "symlink"
			e.Target, err = dir.Readlink(name)
			if err != nil {
				return err
			}
		default:
			e.Type = "other"
		}
		t[rel] = e
	}
	return nil
}

// HashFile returns the hex SHA-256 of the file at p.
func HashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := copySparse(nil, f, h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashFileSize returns the hex SHA-256 of the file at p and the number
// of bytes hashed (which is the size the hash belongs to, even if the
// file changes meanwhile). Holes are not read.
func hashFileSize(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	return hashOpenFile(f)
}

// hashOpenFile is hashFileSize of the file open as f, from its start.
func hashOpenFile(f *os.File) (string, int64, error) {
	h := sha256.New()
	n, err := copySparse(nil, f, h)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// HashBytes returns the hex SHA-256 of b.
func HashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// parentDirs returns p's ancestors, nearest first ("a/b/c" -> "a/b", "a").
func parentDirs(p string) []string {
	var out []string
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}
