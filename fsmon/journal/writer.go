package journal

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// GenesisHash is the Prev of record 1: 64 zeros.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// ErrClosed is returned by Append, Flush and Close on a closed Writer.
var ErrClosed = errors.New("journal closed")

// ComputeHash returns the hex SHA-256 of the record's canonical encoding:
// the encoding/json encoding of r with Hash set to "" and Wall in UTC (see
// the package doc, "Record format"). Prev, Seq and every other field are
// covered.
func (r Record) ComputeHash() string {
	var buf [512]byte
	b := r.appendCanonical(buf[:0])
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// appendCanonical appends the canonical encoding of r with Hash "" to b.
// It produces byte for byte what encoding/json produces for the Record
// (keys in struct order, omitempty as tagged, Go's string escaping) with
// Wall in UTC and each name that is not UTF-8 in its KEY_b64 form (see
// names.go), without reflection: the writer encodes every record once,
// so this is on the hot path.
func (r Record) appendCanonical(b []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `,"t_ns":`...)
	b = strconv.AppendInt(b, r.Mono, 10)
	b = append(b, `,"wall":"`...)
	b = r.Wall.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","op":`...)
	b = appendJSONString(b, string(r.Op))
	b = appendNameField(b, "path", r.Path)
	b = appendNameField(b, "path2", r.Path2)
	b = appendNameField(b, "target", r.Target)
	b = appendUintField(b, `,"pid":`, uint64(r.PID))
	b = appendUintField(b, `,"uid":`, uint64(r.UID))
	b = appendNameField(b, "comm", r.Comm)
	b = appendIntField(b, `,"off":`, r.Offset)
	b = appendIntField(b, `,"size":`, r.Size)
	b = appendUintField(b, `,"mode":`, uint64(r.Mode))
	b = appendUintField(b, `,"flags":`, uint64(r.Flags))
	b = appendNameField(b, "name", r.Name)
	b = append(b, `,"result":`...)
	b = appendJSONString(b, r.Result)
	b = appendStringField(b, `,"decision":`, string(r.Decision))
	b = appendStringField(b, `,"sha256":`, r.SHA256)
	b = append(b, `,"prev":`...)
	b = appendJSONString(b, r.Prev)
	b = append(b, `,"hash":""}`...)
	return b
}

func appendStringField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

func appendUintField(b []byte, key string, v uint64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendUint(append(b, key...), v, 10)
}

func appendIntField(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}

// appendJSONString appends s as encoding/json would. Plain printable
// ASCII (the usual path) is copied; anything else goes through
// encoding/json itself, so its escaping rules (HTML-safe <, > and &,
// U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD) hold
// exactly.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// checkEncodable reports why r cannot be written as a journal line:
// encoding/json (and so every reader) only accepts four-digit years.
func checkEncodable(r Record) error {
	if y := r.Wall.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("wall time %v: year outside [0,9999]", r.Wall)
	}
	return nil
}

// SyncInterval is how often a Writer writes the records appended since
// its last batch to the file and syncs it: a crash of the writing
// process loses at most the records of the last interval, a power loss
// at most those of the last interval and of the sync in progress.
const SyncInterval = 100 * time.Millisecond

// Writer appends records to a journal file and keeps the hash chain. It
// is safe for concurrent use; records get their Seq in the order Append
// is called. Append only encodes into a buffer: a goroutine of the
// Writer writes and syncs the buffered records in batches every
// SyncInterval, off the caller's path (Close writes and syncs the rest).
type Writer struct {
	path  string
	blobs *Blobs

	stopOnce sync.Once
	stop     chan struct{} // closed by Close: the batch goroutine ends
	stopped  chan struct{} // closed when it has ended

	mu    sync.Mutex
	f     *os.File
	bw    *bufio.Writer
	buf   []byte // line scratch space
	last  Record
	dirty bool  // records appended since the last batch
	size  int64 // bytes of the journal, buffered lines included
	err   error // sticky: the first write or sync error, or ErrClosed
}

// Create creates the journal file at path (it must not exist) and its
// blob directory BlobsDir(path).
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("unable to create journal: %w", err)
	}
	dir := BlobsDir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("unable to create blob store: %w", err)
	}
	return newWriter(path, f, Record{}, SyncInterval), nil
}

// newWriter returns a Writer that appends to f after record last (the
// zero Record for a new journal), syncing every interval (never when
// interval is 0).
func newWriter(path string, f *os.File, last Record, interval time.Duration) *Writer {
	w := &Writer{
		path:    path,
		blobs:   &Blobs{Dir: BlobsDir(path)},
		f:       f,
		bw:      bufio.NewWriterSize(f, 256<<10),
		buf:     make([]byte, 0, 1024),
		last:    last,
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if st, err := f.Stat(); err == nil {
		w.size = st.Size()
	}
	if interval <= 0 {
		close(w.stopped)
		return w
	}
	go w.batches(interval)
	return w
}

// batches writes and syncs the records appended since the last batch,
// every interval, until Close.
func (w *Writer) batches(interval time.Duration) {
	defer close(w.stopped)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.syncBatch()
		}
	}
}

// syncBatch writes the buffered records to the file under the lock,
// then syncs the file without it, so that appends do not wait for the
// disk. A sync error is sticky like a write error: a journal that may
// not reach the disk refuses further records.
func (w *Writer) syncBatch() {
	w.mu.Lock()
	if w.err != nil || !w.dirty {
		w.mu.Unlock()
		return
	}
	w.dirty = false
	err := w.flushLocked()
	f := w.f
	w.mu.Unlock()
	if err != nil {
		return
	}
	if err := f.Sync(); err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = fmt.Errorf("unable to sync journal: %w", err)
		}
		w.mu.Unlock()
	}
}

// BlobsDir returns the blob directory that belongs to the journal file
// journalPath: journalPath + ".blobs".
func BlobsDir(journalPath string) string { return journalPath + ".blobs" }

// Path returns the journal file's path.
func (w *Writer) Path() string { return w.path }

// Blobs returns the journal's blob store.
func (w *Writer) Blobs() *Blobs { return w.blobs }

// Append assigns r its Seq (1-based, in call order), Prev (the previous
// record's Hash, GenesisHash for record 1) and Hash, and writes it as one
// line. The caller fills in everything else, the times included; Wall is
// stored in UTC. It returns the record as written. After a write error
// every later Append fails with that error.
func (w *Writer) Append(r Record) (Record, error) {
	if err := checkEncodable(r); err != nil {
		return Record{}, fmt.Errorf("unable to append %s record: %w", r.Op, err)
	}
	r.Wall = r.Wall.UTC()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return Record{}, w.err
	}
	r.Seq = w.last.Seq + 1
	r.Prev = w.last.Hash
	if r.Seq == 1 {
		r.Prev = GenesisHash
	}
	b := r.appendCanonical(w.buf[:0])
	sum := sha256.Sum256(b)
	var hx [64]byte
	hex.Encode(hx[:], sum[:])
	r.Hash = string(hx[:])
	b = append(b[:len(b)-2], hx[:]...)
	b = append(b, "\"}\n"...)
	w.buf = b
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("unable to write journal record %d: %w", r.Seq, err)
		return Record{}, w.err
	}
	w.last = r
	w.dirty = true
	w.size += int64(len(b))
	return r, nil
}

// Size returns the journal's size in bytes, the lines not yet written
// to the file included.
func (w *Writer) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// Last returns the last record appended (the zero Record before the
// first).
func (w *Writer) Last() Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Flush writes buffered records to the file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("unable to write journal: %w", err)
		return w.err
	}
	return nil
}

// Close flushes, syncs and closes the journal file. Appends after Close
// fail with ErrClosed; a second Close returns ErrClosed.
func (w *Writer) Close() error {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.stopped // no batch syncs the file while it is closed
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(w.err, ErrClosed) {
		return ErrClosed
	}
	err := w.flushLocked()
	if err == nil {
		if err = w.f.Sync(); err != nil {
			err = fmt.Errorf("unable to sync journal: %w", err)
		}
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("unable to close journal: %w", cerr)
	}
	w.err = fmt.Errorf("journal %s: %w", w.path, ErrClosed)
	return err
}
