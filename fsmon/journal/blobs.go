package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
// are written once (to a temporary file in Dir, then renamed into place),
// made read-only and never rewritten, so a Blobs is safe for concurrent
// use, by several processes too. Blobs are not synced to disk one by one:
// a blob lost in a crash shows up as missing when the journal is verified.
type Blobs struct {
	Dir string
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
	size, err = io.Copy(io.MultiWriter(tmp, h), r)
	if err != nil {
		return "", 0, fmt.Errorf("unable to store blob: %w", err)
	}
	sha = hex.EncodeToString(h.Sum(nil))
	if err = b.place(tmp, sha); err != nil {
		return "", 0, err
	}
	return sha, size, nil
}

// PutFile stores the content of the file at path.
func (b *Blobs) PutFile(path string) (sha string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("unable to store blob: %w", err)
	}
	defer f.Close()
	return b.Put(f)
}

// PutBytes stores p and returns its hash.
func (b *Blobs) PutBytes(p []byte) (string, error) {
	sha := HashBytes(p)
	if b.Has(sha) {
		return sha, nil
	}
	tmp, err := os.CreateTemp(b.Dir, ".put-*")
	if err != nil {
		return "", fmt.Errorf("unable to store blob: %w", err)
	}
	if _, err = tmp.Write(p); err != nil {
		err = fmt.Errorf("unable to store blob: %w", err)
	} else {
		err = b.place(tmp, sha)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	return sha, nil
}

// place closes tmp, which holds the content of blob sha, and renames it
// into place, or removes it if the blob exists already.
func (b *Blobs) place(tmp *os.File, sha string) error {
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
	if _, err := io.Copy(h, rc); err != nil {
		return fmt.Errorf("unable to read blob %s: %w", sha, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("blob %s: %w (content hashes to %s)", sha, ErrBlobCorrupt, got)
	}
	return nil
}
