package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	if err := json.Unmarshal(line, &rec); err != nil {
		return Record{}, err
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
// a record is a *ParseError naming its line number.
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
