package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
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
// over a slice). Its zero value is empty. A name is kept as its 32
// bytes, sorted and without repeats from time to time, so that a
// million distinct blobs take 32 MiB, about twice that at a peak.
type BlobNames struct {
	sums   [][32]byte
	sorted int // sums[:sorted] is sorted and without repeats
}

// Add adds what record r names (see NamedBlobs). A name that is not a
// hex SHA-256 digest is an error matching ErrBadSHA.
func (n *BlobNames) Add(r Record, manifest func(sha string) ([]byte, error)) error {
	if r.SHA256 == "" {
		return nil
	}
	if err := n.add(r.SHA256); err != nil {
		return fmt.Errorf("record %d: %w", r.Seq, err)
	}
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
			if err := n.add(e.SHA256); err != nil {
				return fmt.Errorf("manifest of record %d: %w", r.Seq, err)
			}
		}
	}
	return nil
}

// add adds the name sha; when the slice is full, its repeats go first,
// so that it grows with the distinct names only.
func (n *BlobNames) add(sha string) error {
	var sum [32]byte
	if !ValidSHA(sha) {
		return fmt.Errorf("%w: %q", ErrBadSHA, sha)
	}
	hex.Decode(sum[:], []byte(sha)) // valid: checked above
	if len(n.sums) == cap(n.sums) && len(n.sums) > n.sorted {
		n.compact()
	}
	n.sums = append(n.sums, sum)
	return nil
}

// compact sorts the names and drops the repeats: the names added since
// the last compaction are sorted, those already held dropped, and the
// rest merged into the sorted ones from the back, so that a compaction
// costs the new names' sort and one pass over the held ones.
func (n *BlobNames) compact() {
	head, tail := n.sums[:n.sorted], n.sums[n.sorted:]
	slices.SortFunc(tail, compareSum)
	tail = slices.Compact(tail)
	fresh := tail[:0]
	for _, sum := range tail {
		if _, found := slices.BinarySearchFunc(head, sum, compareSum); !found {
			fresh = append(fresh, sum)
		}
	}
	buf := slices.Clone(fresh)
	i, k := len(head)-1, len(head)+len(buf)-1
	for j := len(buf) - 1; j >= 0; k-- {
		if i >= 0 && compareSum(head[i], buf[j]) > 0 {
			n.sums[k] = head[i]
			i--
		} else {
			n.sums[k] = buf[j]
			j--
		}
	}
	n.sums = n.sums[:len(head)+len(buf)]
	n.sorted = len(n.sums)
}

// compareSum orders names as their hex strings sort.
func compareSum(a, b [32]byte) int {
	if x, y := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8]); x != y {
		if x < y {
			return -1
		}
		return 1
	}
	return bytes.Compare(a[8:], b[8:])
}

// Len is the number of distinct names gathered.
func (n *BlobNames) Len() int {
	n.compact()
	return len(n.sums)
}

// Each calls f with each name gathered, in sorted order, and stops at
// the first error f returns.
func (n *BlobNames) Each(f func(sha string) error) error {
	n.compact()
	var hx [64]byte
	for _, sum := range n.sums {
		hex.Encode(hx[:], sum[:])
		if err := f(string(hx[:])); err != nil {
			return err
		}
	}
	return nil
}

// Sorted returns the names gathered, sorted.
func (n *BlobNames) Sorted() []string {
	out := make([]string, 0, n.Len())
	n.Each(func(sha string) error {
		out = append(out, sha)
		return nil
	})
	return out
}
