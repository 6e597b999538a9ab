package forensics

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"time"
)

// Writer writes an export archive: a tar of the entries of layout.go,
// each with one modification time. benchd's export writes through it.
type Writer struct {
	tw    *tar.Writer
	mtime time.Time
}

// NewWriter writes an archive to w; every entry gets mtime.
func NewWriter(w io.Writer, mtime time.Time) *Writer {
	return &Writer{tw: tar.NewWriter(w), mtime: mtime}
}

// Put writes the entry name with content b (mode 0644).
func (w *Writer) Put(name string, b []byte) error {
	if err := w.header(name, 0o644, int64(len(b))); err != nil {
		return err
	}
	_, err := w.tw.Write(b)
	return err
}

// PutStream writes the entry name of size bytes, which write gives to
// the io.Writer it is passed (mode 0644): the content is never held. An
// entry given more or fewer bytes than size is an error (the archive is
// then cut short).
func (w *Writer) PutStream(name string, size int64, write func(io.Writer) error) error {
	if err := w.header(name, 0o644, size); err != nil {
		return err
	}
	return write(w.tw)
}

// PutJSON writes the entry name as v in indented JSON and a newline.
func (w *Writer) PutJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return w.Put(name, append(b, '\n'))
}

// PutBlob writes the blob of hash sha (mode 0444) from r, streamed when
// r can say its size (an *os.File), else read whole first.
func (w *Writer) PutBlob(sha string, r io.Reader) error {
	st, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if err := w.header(BlobFile(sha), 0o444, int64(len(b))); err != nil {
			return err
		}
		_, err = w.tw.Write(b)
		return err
	}
	fi, err := st.Stat()
	if err != nil {
		return err
	}
	if err := w.header(BlobFile(sha), 0o444, fi.Size()); err != nil {
		return err
	}
	_, err = io.Copy(w.tw, r)
	return err
}

func (w *Writer) header(name string, mode, size int64) error {
	return w.tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: size, ModTime: w.mtime, Typeflag: tar.TypeReg})
}

// Close ends the archive (it does not close the io.Writer).
func (w *Writer) Close() error { return w.tw.Close() }
