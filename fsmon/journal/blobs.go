package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Errors of the blob store.
var (
	// ErrBadSHA is returned for a string that is not 64 lowercase hex
	// digits; such a name is never turned into a path.
	ErrBadSHA = errors.New("not a sha256 hex digest")
	// ErrBlobCorrupt is returned by Verify for a blob whose content no
	// longer hashes to its name.
	ErrBlobCorrupt = errors.New("blob content does not match its hash")
)

// Blobs is a content-addressed store of file contents in a directory:
// the blob of content with hex SHA-256 S is the file Dir/S[:2]/S. Blobs
// are written once (to a file with no name, linked into place, where
// the file system allows it; else to a temporary file in Dir, renamed
// into place), made read-only and never rewritten, so a Blobs is safe
// for concurrent use, by several processes too. Content that is in the
// store already is hashed and not written at all. Blobs are not synced
// to disk one by one:
// a blob lost in a power loss shows up as missing when the journal is
// verified, and Recover cuts an unsealed journal before the first record
// that names a lost or damaged blob.
type Blobs struct {
	Dir string
	// Added, when set, is called with the hash and size of each blob
	// this Blobs places in the store that was not there before (a blob
	// that exists already costs nothing and is not reported). fsmon's
	// view counts the bytes it stores with it.
	Added func(sha string, size int64)
}

// ValidSHA reports whether s is a hex SHA-256 digest as the journal
// writes them: 64 lowercase hex digits.
func ValidSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Path returns the file of blob sha.
func (b *Blobs) Path(sha string) (string, error) {
	if !ValidSHA(sha) {
		return "", fmt.Errorf("%w: %q", ErrBadSHA, sha)
	}
	return filepath.Join(b.Dir, sha[:2], sha), nil
}

// Put stores everything read from r and returns its hash and size. If the
// blob exists already it is left as it is.
func (b *Blobs) Put(r io.Reader) (sha string, size int64, err error) {
	return b.put(func(tmp *os.File, h hash.Hash) (int64, error) {
		return io.Copy(io.MultiWriter(tmp, h), r)
	})
}

// put stores what fill writes to a temporary file of the store (and to
// h, for its hash) as a blob, and returns its hash and size; the
// temporary file is removed on error.
func (b *Blobs) put(fill func(tmp *os.File, h hash.Hash) (int64, error)) (sha string, size int64, err error) {
	tmp, err := os.CreateTemp(b.Dir, ".put-*")
	if err != nil {
		return "", 0, fmt.Errorf("unable to store blob: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	if size, err = fill(tmp, h); err != nil {
		return "", 0, fmt.Errorf("unable to store blob: %w", err)
	}
	sha = hex.EncodeToString(h.Sum(nil))
	if err = b.place(tmp, sha, size); err != nil {
		return "", 0, err
	}
	return sha, size, nil
}

// PutFile stores the content of the file at path, as PutOpenFile does.
func (b *Blobs) PutFile(path string) (sha string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("unable to store blob: %w", err)
	}
	defer f.Close()
	return b.PutOpenFile(f)
}

// PutOpenFile stores the content of the open regular file f, from its
// start to the size it has when the copy starts, whatever f's offset.
// Holes stay holes: on Linux they are found with SEEK_HOLE and neither
// read nor written (the hash covers their zeros), so a sparse file's
// blob is as sparse as the file. A file of up to SmallBlob bytes with
// no hole is read into memory and stored as PutBytes stores it.
func (b *Blobs) PutOpenFile(f *os.File) (sha string, size int64, err error) {
	if p, ok := readSmall(f); ok {
		sha, err := b.PutBytes(p)
		return sha, int64(len(p)), err
	}
	return b.put(func(tmp *os.File, h hash.Hash) (int64, error) {
		return copySparse(tmp, f, h)
	})
}

// placement is what link did with a blob.
type placement int

const (
	unlinked placement = iota // nothing: write a temporary file
	linked                    // placed it
	existed                   // found it placed
)

// SmallBlob is the largest content PutOpenFile reads into memory.
const SmallBlob = 1 << 20

// readSmall reads the whole content of the regular file f, from its
// start, when it is at most SmallBlob bytes and has no hole; ok is
// false otherwise (and for a file that grew while it was read).
func readSmall(f *os.File) ([]byte, bool) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > SmallBlob || !dense(st) {
		return nil, false
	}
	// One byte more than the size: a file that grew since is not
	// read whole.
	p := make([]byte, st.Size()+1)
	n, err := f.ReadAt(p, 0)
	if err != io.EOF || n > int(st.Size()) {
		return nil, false
	}
	return p[:n], true
}

// PutBytes stores p and returns its hash. Nothing is written when the
// store has it.
func (b *Blobs) PutBytes(p []byte) (string, error) {
	sha := HashBytes(p)
	if b.Has(sha) {
		return sha, nil
	}
	final, _ := b.Path(sha) // sha is one we computed
	switch placed, err := b.link(p, final); {
	case err != nil:
		return "", fmt.Errorf("unable to store blob: %w", err)
	case placed == linked:
		if b.Added != nil {
			b.Added(sha, int64(len(p)))
		}
		return sha, nil
	case placed == existed:
		return sha, nil
	}
	tmp, err := os.CreateTemp(b.Dir, ".put-*")
	if err != nil {
		return "", fmt.Errorf("unable to store blob: %w", err)
	}
	if _, err = tmp.Write(p); err != nil {
		err = fmt.Errorf("unable to store blob: %w", err)
	} else {
		err = b.place(tmp, sha, int64(len(p)))
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	return sha, nil
}

// place closes tmp, which holds the content of blob sha (size bytes),
// and renames it into place, or removes it if the blob exists already.
func (b *Blobs) place(tmp *os.File, sha string, size int64) error {
	if err := tmp.Chmod(0o444); err != nil {
		return fmt.Errorf("unable to store blob: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("unable to store blob: %w", err)
	}
	if b.Has(sha) {
		os.Remove(tmp.Name())
		return nil
	}
	final, _ := b.Path(sha) // sha is one we computed
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fmt.Errorf("unable to store blob: %w", err)
	}
	// Two writers of the same content may race to here; both renames
	// install identical bytes, so either wins.
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("unable to store blob: %w", err)
	}
	if b.Added != nil {
		b.Added(sha, size)
	}
	return nil
}

// Open opens blob sha for reading. A missing blob is an error matching
// fs.ErrNotExist.
func (b *Blobs) Open(sha string) (io.ReadCloser, error) {
	p, err := b.Path(sha)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("unable to open blob %s: %w", sha, err)
	}
	return f, nil
}

// ReadAll returns the content of blob sha, checked against its hash.
func (b *Blobs) ReadAll(sha string) ([]byte, error) {
	rc, err := b.Open(sha)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, fmt.Errorf("unable to read blob %s: %w", sha, err)
	}
	if got := HashBytes(buf.Bytes()); got != sha {
		return nil, fmt.Errorf("blob %s: %w (content hashes to %s)", sha, ErrBlobCorrupt, got)
	}
	return buf.Bytes(), nil
}

// Has reports whether blob sha is in the store (as a regular file).
func (b *Blobs) Has(sha string) bool {
	p, err := b.Path(sha)
	if err != nil {
		return false
	}
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

// Verify re-hashes blob sha and reports an error matching ErrBlobCorrupt
// if its content does not hash to sha, or fs.ErrNotExist if it is
// missing.
func (b *Blobs) Verify(sha string) error {
	rc, err := b.Open(sha)
	if err != nil {
		return err
	}
	defer rc.Close()
	if st, err := rc.(*os.File).Stat(); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("blob %s: %w: not a regular file", sha, fs.ErrInvalid)
	}
	h := sha256.New()
	if _, err := copySparse(nil, rc.(*os.File), h); err != nil {
		return fmt.Errorf("unable to read blob %s: %w", sha, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("blob %s: %w (content hashes to %s)", sha, ErrBlobCorrupt, got)
	}
	return nil
}
