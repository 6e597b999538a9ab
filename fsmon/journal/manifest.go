package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// ErrBadManifest is returned for a manifest that does not parse or does
// not describe a possible tree.
var ErrBadManifest = errors.New("bad manifest")

// Manifest returns the tree's canonical encoding: the encoding/json
// encoding of its entries as an array sorted by path ("[]" for an empty
// tree). Its hash (ManifestHash) names the tree in mount and unmount
// records.
func (t Tree) Manifest() []byte {
	ents := make([]Entry, 0, len(t))
	for _, p := range t.Paths() {
		ents = append(ents, t[p])
	}
	b, err := json.Marshal(ents)
	if err != nil {
		// Entries hold only strings and integers.
		panic(fmt.Sprintf("journal: unable to encode manifest: %v", err))
	}
	return b
}

// ManifestHash returns the hash of the tree's manifest: the SHA256 of a
// mount or unmount record.
func (t Tree) ManifestHash() string { return HashBytes(t.Manifest()) }

// ParseManifest parses a manifest. It accepts only a possible tree:
// entries in strictly ascending path order, clean relative paths, every
// parent present as a directory, known types, a content hash on every
// file, only permission bits in modes, and no unknown fields.
func ParseManifest(b []byte) (Tree, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ents []Entry
	if err := dec.Decode(&ents); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the array", ErrBadManifest)
	}
	if ents == nil {
		return nil, fmt.Errorf("%w: not an array", ErrBadManifest)
	}
	t := make(Tree, len(ents))
	for i, e := range ents {
		if err := checkEntry(t, e); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrBadManifest, i+1, err)
		}
		if i > 0 && e.Path <= ents[i-1].Path {
			return nil, fmt.Errorf("%w: entry %d: %q is not after %q (paths must be sorted and unique)", ErrBadManifest, i+1, e.Path, ents[i-1].Path)
		}
		t[e.Path] = e
	}
	return t, nil
}

// checkEntry checks e on its own and against the entries before it.
func checkEntry(t Tree, e Entry) error {
	if err := checkPath(e.Path); err != nil {
		return err
	}
	if parent := path.Dir(e.Path); parent != "." {
		if pe, ok := t[parent]; !ok || pe.Type != "dir" {
			return fmt.Errorf("%s: parent %s is not a directory of the tree", e.Path, parent)
		}
	}
	if e.Mode&^fs.ModePerm != 0 {
		return fmt.Errorf("%s: mode %#o has more than permission bits", e.Path, uint32(e.Mode))
	}
	switch e.Type {
	case "file":
		if !ValidSHA(e.SHA256) {
			return fmt.Errorf("%s: file without a valid sha256", e.Path)
		}
		if e.Size < 0 || e.Target != "" {
			return fmt.Errorf("%s: file with a negative size or a target", e.Path)
		}
	case "symlink":
		if e.Target == "" || e.SHA256 != "" {
			return fmt.Errorf("%s: symlink without a target or with content", e.Path)
		}
	case "dir", "other":
		if e.SHA256 != "" || e.Target != "" || e.Size != 0 {
			return fmt.Errorf("%s: %s with content, size or target", e.Path, e.Type)
		}
	default:
		return fmt.Errorf("%s: unknown type %q", e.Path, e.Type)
	}
	return nil
}

// checkPath accepts a clean, relative, slash-separated path without "."
// or ".." segments: one that cannot leave the workspace.
func checkPath(p string) error {
	switch {
	case p == "" || p == "." || p == "..":
		return fmt.Errorf("path %q: empty, . or ..", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q: absolute", p)
	case strings.HasPrefix(p, "../"):
		return fmt.Errorf("path %q: leaves the workspace", p)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("path %q: contains NUL", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q: not clean", p)
	}
	return nil
}

// SnapshotTree scans dir like ScanTree and stores the content of every
// regular file, and the tree's manifest, in blobs. The manifest's hash is
// t.ManifestHash().
func SnapshotTree(dir string, blobs *Blobs) (Tree, error) {
	t, err := walkTree(dir, blobs.PutOpenFile)
	if err != nil {
		return nil, err
	}
	if _, err := blobs.PutBytes(t.Manifest()); err != nil {
		return nil, fmt.Errorf("unable to store the manifest of %s: %w", dir, err)
	}
	return t, nil
}

// loadManifest reads manifest blob sha, checks it against its hash and
// parses it.
func loadManifest(blobs *Blobs, sha string) (Tree, error) {
	b, err := blobs.ReadAll(sha)
	if err != nil {
		return nil, err
	}
	return ParseManifest(b)
}

// NamedBlobs lists, sorted, every blob the records name: the contents
// of released files and truncations, and the tree manifests of mount
// and unmount with every file they list. manifest returns a manifest
// blob's bytes; nil bytes with a nil error leave it out (a caller for
// whom a missing manifest names nothing more).
func NamedBlobs(recs []Record, manifest func(sha string) ([]byte, error)) ([]string, error) {
	var n BlobNames
	for _, r := range recs {
		if err := n.Add(r, manifest); err != nil {
			return nil, err
		}
	}
	return n.Sorted(), nil
}

// BlobNames gathers the blobs records name, one record at a time, so
// that a journal read as a stream need not be held (NamedBlobs is it
// over a slice). Its zero value is empty.
type BlobNames struct {
	set map[string]bool
}

// Add adds what record r names (see NamedBlobs).
func (n *BlobNames) Add(r Record, manifest func(sha string) ([]byte, error)) error {
	if r.SHA256 == "" {
		return nil
	}
	if n.set == nil {
		n.set = map[string]bool{}
	}
	n.set[r.SHA256] = true
	if r.Op != OpMount && r.Op != OpUnmount {
		return nil
	}
	b, err := manifest(r.SHA256)
	if err != nil {
		return fmt.Errorf("manifest of record %d: %w", r.Seq, err)
	}
	if b == nil {
		return nil
	}
	tree, err := ParseManifest(b)
	if err != nil {
		return fmt.Errorf("manifest of record %d: %w", r.Seq, err)
	}
	for _, e := range tree {
		if e.SHA256 != "" {
			n.set[e.SHA256] = true
		}
	}
	return nil
}

// Sorted returns the names gathered, sorted.
func (n *BlobNames) Sorted() []string {
	out := make([]string, 0, len(n.set))
	for sha := range n.set {
		out = append(out, sha)
	}
	slices.Sort(out)
	return out
}
