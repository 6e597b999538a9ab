package journal

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// lseek(2) whences of Linux that find data and holes.
const (
	seekData = 3
	seekHole = 4
)

// copySparse copies the content of src, from its start to the size it has
// now, to dst (nil: hash only) and h, and returns that size. Holes are
// found with SEEK_DATA and SEEK_HOLE and never read: h gets zeros for
// them and dst gets nothing written (it is extended to the size at the
// end), so a sparse file stays sparse. A file system without SEEK_DATA
// is copied as plain data.
func copySparse(dst, src *os.File, h io.Writer) (int64, error) {
	st, err := src.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	var off int64
	for off < size {
		data, err := src.Seek(off, seekData)
		switch {
		case errors.Is(err, syscall.ENXIO):
			data = size // only a hole from off on
		case err != nil:
			return copyPlain(dst, src, h, off, size)
		}
		data = min(data, size)
		if err := writeZeros(h, data-off); err != nil {
			return 0, err
		}
		if data == size {
			break
		}
		hole, err := src.Seek(data, seekHole)
		if err != nil {
			return copyPlain(dst, src, h, data, size)
		}
		hole = min(hole, size)
		if err := copyRange(dst, src, h, data, hole); err != nil {
			return 0, err
		}
		off = hole
	}
	if dst != nil {
		if err := dst.Truncate(size); err != nil {
			return 0, err
		}
	}
	return size, nil
}
