package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// ParseError is a journal line that is not a record in canonical form.
type ParseError struct {
	Line int // 1-based
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *ParseError) Unwrap() error { return e.Err }

// errNotCanonical is the cause of a ParseError for a line that decodes
// but is not byte for byte the canonical encoding of what it decodes to.
var errNotCanonical = errors.New("not in canonical form (reordered or unknown keys, spacing, escaping, or a non-UTC time)")

// Reader reads records from a journal one line at a time.
type Reader struct {
	br   *bufio.Reader
	line int
	buf  []byte
	err  error
}

// NewReader returns a Reader of the journal lines in r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Line returns the number of the line Next read last.
func (r *Reader) Line() int { return r.line }

// Next returns the next record, or io.EOF after the last. Each line must
// be exactly the canonical encoding of the record it holds, hash included,
// followed by a newline (which the last line may lack); anything else is
// a *ParseError naming the line, and so is every later call.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	line, err := r.readLine()
	if err == io.EOF && len(line) == 0 {
		r.err = io.EOF
		return Record{}, io.EOF
	}
	r.line++
	if err != nil && err != io.EOF {
		r.err = &ParseError{Line: r.line, Err: err}
		return Record{}, r.err
	}
	rec, perr := parseLine(line)
	if perr != nil {
		r.err = &ParseError{Line: r.line, Err: perr}
		return Record{}, r.err
	}
	return rec, nil
}

// readLine returns the next line without its newline.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.buf = append(r.buf[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			r.buf = append(r.buf, line...)
		}
		line = r.buf
	}
	return bytes.TrimSuffix(line, []byte{'\n'}), err
}

// parseLine decodes one line and checks that it is canonical.
func parseLine(line []byte) (Record, error) {
	if len(line) == 0 {
		return Record{}, errors.New("empty line")
	}
	var rec Record
	if !decodeCanonical(line, &rec) {
		rec = Record{}
		if err := json.Unmarshal(line, &rec); err != nil {
			return Record{}, err
		}
	}
	if !ValidSHA(rec.Hash) {
		return Record{}, fmt.Errorf("hash %q is not 64 hex digits", rec.Hash)
	}
	var buf [512]byte
	want := rec.appendCanonical(buf[:0])
	// The canonical encoding ends in `"hash":""}`; the line carries the
	// hash between those quotes.
	n := len(want) - 2
	if len(line) != len(want)+64 || !bytes.Equal(line[:n], want[:n]) ||
		string(line[n:n+64]) != rec.Hash || string(line[n+64:]) != `"}` {
		return Record{}, errNotCanonical
	}
	return rec, nil
}

// Read reads every record of the journal file at path. A line that is not
// a record is a *ParseError naming its line number; the records before it
// are returned with the error.
func Read(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read journal: %w", err)
	}
	defer f.Close()
	var recs []Record
	rd := NewReader(f)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, fmt.Errorf("journal %s: %w", path, err)
		}
		recs = append(recs, rec)
	}
}

// decodeCanonical decodes a line laid out as the writer lays it out (keys
// in struct order, strings without escapes) without reflection, several
// times faster than encoding/json. It returns false for anything else,
// which encoding/json then decodes. Either way parseLine accepts the line
// only if it is the canonical encoding of the decoded record, so this
// decoder cannot accept a line that encoding/json would read otherwise.
func decodeCanonical(line []byte, r *Record) bool {
	d := lineDecoder{b: line}
	var wall string
	ok := d.key(`{"seq":`) && d.uint(&r.Seq) &&
		d.key(`,"t_ns":`) && d.int(&r.Mono) &&
		d.key(`,"wall":`) && d.str(&wall) &&
		d.key(`,"op":`) && d.str((*string)(&r.Op))
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, wall)
	if err != nil {
		return false
	}
	r.Wall = t
	var pid, uid, mode, flags uint64
	ok = d.optStr(`,"path":`, &r.Path) &&
		d.optStr(`,"path2":`, &r.Path2) &&
		d.optStr(`,"target":`, &r.Target) &&
		d.optUint(`,"pid":`, &pid, 32) &&
		d.optUint(`,"uid":`, &uid, 32) &&
		d.optStr(`,"comm":`, &r.Comm) &&
		d.optInt(`,"off":`, &r.Offset) &&
		d.optInt(`,"size":`, &r.Size) &&
		d.optUint(`,"mode":`, &mode, 32) &&
		d.optUint(`,"flags":`, &flags, 32) &&
		d.optStr(`,"name":`, &r.Name) &&
		d.key(`,"result":`) && d.str(&r.Result) &&
		d.optStr(`,"decision":`, (*string)(&r.Decision)) &&
		d.optStr(`,"sha256":`, &r.SHA256) &&
		d.key(`,"prev":`) && d.str(&r.Prev) &&
		d.key(`,"hash":`) && d.str(&r.Hash) &&
		d.key(`}`) && len(d.b) == 0
	r.PID, r.UID, r.Mode, r.Flags = uint32(pid), uint32(uid), uint32(mode), uint32(flags)
	return ok
}

// lineDecoder consumes a journal line from the front.
type lineDecoder struct{ b []byte }

func (d *lineDecoder) key(k string) bool {
	if len(d.b) < len(k) || string(d.b[:len(k)]) != k {
		return false
	}
	d.b = d.b[len(k):]
	return true
}

// digits returns the length of the number at the front.
func (d *lineDecoder) digits() int {
	i := 0
	if i < len(d.b) && d.b[i] == '-' {
		i++
	}
	for i < len(d.b) && d.b[i] >= '0' && d.b[i] <= '9' {
		i++
	}
	return i
}

func (d *lineDecoder) uint(v *uint64) bool { return d.uintBits(v, 64) }

func (d *lineDecoder) uintBits(v *uint64, bits int) bool {
	n := d.digits()
	u, err := strconv.ParseUint(string(d.b[:n]), 10, bits)
	if err != nil {
		return false
	}
	*v, d.b = u, d.b[n:]
	return true
}

func (d *lineDecoder) int(v *int64) bool {
	n := d.digits()
	i, err := strconv.ParseInt(string(d.b[:n]), 10, 64)
	if err != nil {
		return false
	}
	*v, d.b = i, d.b[n:]
	return true
}

// str reads a string without escapes.
func (d *lineDecoder) str(s *string) bool {
	if len(d.b) == 0 || d.b[0] != '"' {
		return false
	}
	for i := 1; i < len(d.b); i++ {
		switch d.b[i] {
		case '\\':
			return false
		case '"':
			*s, d.b = string(d.b[1:i]), d.b[i+1:]
			return true
		}
	}
	return false
}

func (d *lineDecoder) optStr(k string, s *string) bool {
	return !d.key(k) || d.str(s)
}

func (d *lineDecoder) optUint(k string, v *uint64, bits int) bool {
	return !d.key(k) || d.uintBits(v, bits)
}

func (d *lineDecoder) optInt(k string, v *int64) bool {
	return !d.key(k) || d.int(v)
}
