package sandbox

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCapture(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		limit     int64
		chunk     int // reader returns at most this many bytes per Read; 0: all
		wantFile  string
		wantBytes int64
		wantTrunc bool
	}{
		{"empty", "", 10, 0, "", 0, false},
		{"under the cap", "hello", 10, 0, "hello", 5, false},
		{"exactly the cap", "0123456789", 10, 0, "0123456789", 10, false},
		{"one past the cap", "0123456789x", 10, 0, "0123456789" + Trailer(10), 11, true},
		{"far past, small reads", strings.Repeat("ab", 1000), 7, 3, "abababa" + Trailer(7), 2000, true},
		{"far past, big buffer", strings.Repeat("z", 3*copyBufSize+5), copyBufSize, 0, strings.Repeat("z", copyBufSize) + Trailer(copyBufSize), 3*copyBufSize + 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(tt.input)
			if tt.chunk > 0 {
				r = &chunked{r: r, n: tt.chunk}
			}
			var w bytes.Buffer
			out, err := capture(&w, r, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if w.String() != tt.wantFile {
				t.Errorf("got file %q, want %q", abbrev(w.String()), abbrev(tt.wantFile))
			}
			if out.Bytes != tt.wantBytes || out.Truncated != tt.wantTrunc {
				t.Errorf("got %+v, want Bytes %d Truncated %v", out, tt.wantBytes, tt.wantTrunc)
			}
		})
	}
}

// TestCaptureKeepsDraining: a failing file stops storing, not reading.
func TestCaptureKeepsDraining(t *testing.T) {
	input := strings.Repeat("q", 100000)
	out, err := capture(failWriter{}, strings.NewReader(input), 1<<20)
	if err == nil {
		t.Error("got no error from a failing writer")
	}
	if out.Bytes != int64(len(input)) {
		t.Errorf("got %d bytes drained, want %d", out.Bytes, len(input))
	}
	out, err = capture(nil, iotest.TimeoutReader(strings.NewReader("abc")), 2)
	if err == nil || out.Bytes != 3 || !out.Truncated {
		t.Errorf("read error: got %+v, %v; want 3 bytes, truncated, an error", out, err)
	}
}

type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func abbrev(s string) string {
	if len(s) > 80 {
		return s[:40] + "..." + s[len(s)-40:]
	}
	return s
}
