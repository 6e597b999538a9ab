package sandbox

import (
	"fmt"
	"io"
)

// copyBufSize is the fixed buffer every captured stream goes through:
// however much a process writes, capturing it costs this much memory.
const copyBufSize = 32 << 10

// Trailer is the line appended to a capture file when its stream passed
// the cap.
func Trailer(limit int64) string {
	return fmt.Sprintf("\n[benchd: output truncated after %d bytes]\n", limit)
}

// capture streams r into w, storing at most limit bytes and counting
// every byte. Past the cap it keeps reading (and discarding), so that the
// writer never blocks on a full pipe; it writes Trailer(limit) once, the
// moment the cap is passed. A write error on w stops storing but not
// draining, and is returned.
func capture(w io.Writer, r io.Reader, limit int64) (Output, error) {
	var (
		out    Output
		werr   error
		stored int64
	)
	buf := make([]byte, copyBufSize)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			out.Bytes += int64(n)
			if w != nil && werr == nil && !out.Truncated {
				chunk := buf[:n]
				if room := limit - stored; int64(len(chunk)) > room {
					chunk = chunk[:room]
				}
				if len(chunk) > 0 {
					var m int
					m, werr = w.Write(chunk)
					stored += int64(m)
				}
			}
			if !out.Truncated && out.Bytes > limit {
				out.Truncated = true
				if w != nil && werr == nil {
					_, werr = io.WriteString(w, Trailer(limit))
				}
			}
		}
		if rerr != nil {
			if rerr == io.EOF {
				rerr = nil
			}
			if werr == nil && rerr != nil {
				werr = fmt.Errorf("read output: %w", rerr)
			}
			return out, werr
		}
	}
}
