package journal

import (
	"bytes"
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
// (nil: none) and to h. Blocks of dst that would be all zeros are not
// written: they stay holes (the hash covers their zeros), so a run of
// written zeros costs the store no more than a hole does.
func copyRange(dst, src *os.File, h io.Writer, from, to int64) error {
	buf := make([]byte, zeroBlock*64)
	for off := from; off < to; {
		n, err := src.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		if n == 0 {
			if err == nil || err == io.EOF {
				return fmt.Errorf("%s shrank while it was read (%d of %d bytes at %d)", src.Name(), off-from, to-from, from)
			}
			return err
		}
		p := buf[:n]
		if _, err := h.Write(p); err != nil {
			return err
		}
		if dst != nil {
			if err := writeDense(dst, p, off); err != nil {
				return err
			}
		}
		off += int64(n)
	}
	if dst != nil {
		// A range that ends in zeros left dst short of it.
		if st, err := dst.Stat(); err != nil {
			return err
		} else if st.Size() < to {
			return dst.Truncate(to)
		}
	}
	return nil
}

// zeroBlock is the unit in which copyRange finds zeros to leave as
// holes: the block size of the file systems the store is on.
const zeroBlock = 4096

// writeDense writes p to dst at off, but not its blocks of zeros.
func writeDense(dst *os.File, p []byte, off int64) error {
	for i := 0; i < len(p); {
		j := min(i+zeroBlock, len(p))
		if allZero(p[i:j]) {
			i = j
			continue
		}
		// Extend over the non-zero blocks that follow.
		for j < len(p) && !allZero(p[j:min(j+zeroBlock, len(p))]) {
			j = min(j+zeroBlock, len(p))
		}
		if _, err := dst.WriteAt(p[i:j], off+int64(i)); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// allZero reports whether every byte of p is zero.
func allZero(p []byte) bool {
	for len(p) >= len(zeros) {
		if !bytes.Equal(p[:len(zeros)], zeros) {
			return false
		}
		p = p[len(zeros):]
	}
	return bytes.Equal(p, zeros[:len(p)])
}

// copyPlain copies src from off to size as data, after the part before
// off was copied already.
func copyPlain(dst, src *os.File, h io.Writer, off, size int64) (int64, error) {
	if err := copyRange(dst, src, h, off, size); err != nil {
		return 0, err
	}
	return size, nil
}
