package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
	return walkTree(dir, hashFileSize)
}

// walkTree walks dir and builds its Tree; content is called for every
// regular file and returns its hash and size (ScanTree only hashes,
// SnapshotTree also stores the content as a blob).
func walkTree(dir string, content func(p string) (string, int64, error)) (Tree, error) {
	t := Tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := Entry{Path: rel, Mode: info.Mode().Perm()}
		switch {
		case info.Mode().IsRegular():
			e.Type = "file"
			sum, size, err := content(p)
			if err != nil {
				return err
			}
			e.SHA256, e.Size = sum, size
		case info.IsDir():
			e.Type = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			e.Type = "symlink"
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.Target = target
		default:
			e.Type = "other"
		}
		t[rel] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("unable to scan %s: %w", dir, err)
	}
	return t, nil
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
