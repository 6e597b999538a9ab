package journal

import (
	"fmt"
	"io"
	"os"
)

// zeros is what a hole hashes as.
var zeros = make([]byte, 256<<10)

// writeZeros writes n zero bytes to h.
func writeZeros(h io.Writer, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := h.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// copyRange copies bytes [from, to) of src to the same offsets of dst
// (nil: none) and to h.
func copyRange(dst, src *os.File, h io.Writer, from, to int64) error {
	w := h
	if dst != nil {
		if _, err := dst.Seek(from, io.SeekStart); err != nil {
			return err
		}
		w = io.MultiWriter(dst, h)
	}
	n, err := io.Copy(w, io.NewSectionReader(src, from, to-from))
	if err != nil {
		return err
	}
	if n != to-from {
		return fmt.Errorf("%s shrank while it was read (%d of %d bytes at %d)", src.Name(), n, to-from, from)
	}
	return nil
}

// copyPlain copies src from off to size as data, after the part before
// off was copied already.
func copyPlain(dst, src *os.File, h io.Writer, off, size int64) (int64, error) {
	if err := copyRange(dst, src, h, off, size); err != nil {
		return 0, err
	}
	return size, nil
}
