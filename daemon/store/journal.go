package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"benchd.dev/fsmon/journal"
)

// batchRows is how many journal lines one INSERT statement carries (2
// parameters each, well under SQLite's limit of 32766).
const batchRows = 256

// maxSeq bounds a record's Seq: a line's key is the attempt's row number
// times 2^32 plus its Seq.
const maxSeq = 1<<32 - 1

// lineKey is the journal_lines key of record seq of attempt row an.
func lineKey(an int64, seq uint64) int64 { return an<<32 | int64(seq) }

// JournalInfo describes an ingested journal.
type JournalInfo struct {
	Records  int       // number of records (lines)
	Head     string    // Hash of the last record
	Bytes    int64     // size of the journal file
	Ingested time.Time // when it was stored
}

// attemptN returns the row number of attempt id, or ErrNotFound.
func attemptN(ctx context.Context, q querier, id string) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, `SELECT n FROM attempts WHERE id = ?`, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("attempt %s: %w", id, translate(err))
	}
	return n, nil
}

// noJournalYet returns the row number of attempt id, or ErrNotFound when
// it does not exist, or ErrConflict when it has a journal.
func noJournalYet(ctx context.Context, q querier, id string) (int64, error) {
	an, err := attemptN(ctx, q, id)
	if err != nil {
		return 0, err
	}
	var exists int
	err = q.QueryRowContext(ctx, `SELECT count(*) FROM journals WHERE attempt = ?`, an).Scan(&exists)
	if err != nil {
		return 0, err
	}
	if exists > 0 {
		return 0, fmt.Errorf("%w: attempt %s has a journal already", ErrConflict, id)
	}
	return an, nil
}

// IngestJournal stores the journal file at journalPath as the journal of
// attempt attemptID: its lines, in one transaction, and its blobs
// (journal.BlobsDir(journalPath)) in Blobs(). It reads the file with
// journal's strict reader and checks the hash chain (see the package
// doc); a file that is not a journal is an error matching ErrInvalid and
// stores nothing. It returns the head (the last record's Hash) and the
// number of records. The attempt must exist (else ErrNotFound) and have
// no journal yet (else ErrConflict).
func (s *Store) IngestJournal(ctx context.Context, attemptID, journalPath string) (head string, n int, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("unable to ingest journal %s of attempt %s: %w", journalPath, attemptID, err)
		}
	}()
	// Blobs are placed first, and outside the transaction: a committed
	// journal never names a missing blob, and the sync does not hold up
	// other writers. Blobs of a journal that is then refused are
	// harmless. A prune, which deletes the blobs no journal names, waits
	// until this journal names its own.
	s.blobMu.RLock()
	defer s.blobMu.RUnlock()
	in, err := s.prepareIngest(ctx, attemptID, journalPath)
	if err != nil {
		return "", 0, err
	}
	defer in.close()
	defer s.shrinkWAL(ctx)
	err = s.writeTx(ctx, func(tx *tx) error {
		head, err = in.run(ctx, s, tx)
		n = in.records
		return err
	})
	if err != nil {
		return "", 0, err
	}
	return head, n, nil
}

// run stores the journal in tx and returns its head: its lines, its
// journals row and, on PostgreSQL, its blobs' rows. The attempt must
// have no journal yet (else ErrConflict).
func (in *ingest) run(ctx context.Context, s *Store, tx *tx) (string, error) {
	an, err := noJournalYet(ctx, tx, in.id)
	if err != nil {
		return "", err
	}
	head, n, err := insertLines(ctx, tx, an, journal.NewReader(in.f), bufio.NewReaderSize(in.raw, 256<<10))
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", fmt.Errorf("%w: the journal is empty", ErrInvalid)
	}
	in.records = n
	_, err = tx.ExecContext(ctx,
		`INSERT INTO journals (attempt, records, head, bytes, ingested) VALUES (?, ?, ?, ?, ?)`,
		an, n, head, in.size, nanos(time.Now()))
	if err != nil {
		return "", translate(err)
	}
	if _, ok := s.d.(postgresDialect); ok {
		return head, s.insertBlobs(ctx, tx, an, in.shas)
	}
	return head, nameBlobs(ctx, tx, an, in.shas)
}

// lineBatch is up to batchRows journal lines, back to back in buf.
type lineBatch struct {
	buf  []byte
	ends []int // end of each line in buf
	seqs []uint64
}

func (b *lineBatch) reset() { b.buf, b.ends, b.seqs = b.buf[:0], b.ends[:0], b.seqs[:0] }

// insertLines inserts the journal's lines as rows of attempt an. Two
// goroutines share the work: one reads and checks the records
// (readLines), the other inserts full batches through a prepared
// statement, so parsing and SQLite overlap. It returns the head hash and
// the number of records.
func insertLines(ctx context.Context, tx *tx, an int64, rd *journal.Reader, raw *bufio.Reader) (string, int, error) {
	stmt, err := tx.PrepareContext(ctx, insertSQL(batchRows))
	if err != nil {
		return "", 0, err
	}
	defer stmt.Close()
	const inFlight = 3
	free := make(chan *lineBatch, inFlight)
	full := make(chan *lineBatch, inFlight)
	for i := 0; i < inFlight; i++ {
		free <- &lineBatch{buf: make([]byte, 0, 512*batchRows)}
	}
	stop := make(chan struct{})
	var (
		head    string
		n       int
		readErr error
	)
	go func() {
		defer close(full)
		head, n, readErr = readLines(rd, raw, free, full, stop)
	}()
	args := make([]any, 0, 2*batchRows)
	var insErr error
	for b := range full {
		if insErr == nil {
			args = args[:0]
			start := 0
			for i, end := range b.ends {
				args = append(args, lineKey(an, b.seqs[i]), b.buf[start:end:end])
				start = end
			}
			if len(b.seqs) == batchRows {
				_, insErr = stmt.ExecContext(ctx, args...)
			} else {
				_, insErr = tx.ExecContext(ctx, insertSQL(len(b.seqs)), args...)
			}
			if insErr != nil {
				insErr = fmt.Errorf("unable to insert journal lines: %w", translate(insErr))
				close(stop)
			}
		}
		// The driver copied the lines: the batch can be refilled.
		b.reset()
		free <- b
	}
	switch {
	case insErr != nil:
		return "", 0, insErr
	case readErr != nil:
		return "", 0, readErr
	}
	return head, n, nil
}

// errStopped ends readLines when the inserter failed.
var errStopped = errors.New("stopped")

// readLines reads records from rd and the same lines from raw, checks
// the chain, and sends the raw lines in batches taken from free to full.
// It returns the last hash and the number of records.
func readLines(rd *journal.Reader, raw *bufio.Reader, free <-chan *lineBatch, full chan<- *lineBatch, stop <-chan struct{}) (string, int, error) {
	prev := journal.GenesisHash
	var (
		n       int
		long    []byte
		hx      [64]byte
		tail    = []byte(`"}`)
		hashLen = len(`"}`) + 64
		b       = <-free
	)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			if len(b.seqs) > 0 {
				full <- b
			}
			return prev, n, nil
		}
		if err != nil {
			return "", 0, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		line, err := raw.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = raw.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return "", 0, err
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		n++
		// The reader accepted the line as canonical, so it ends in
		// `"hash":"<Hash>"}`, and the record's hash covers the line with
		// those 64 digits left out.
		if len(line) < hashLen || string(line[len(line)-hashLen:len(line)-2]) != rec.Hash {
			return "", 0, fmt.Errorf("line %d: the journal changed while it was read", n)
		}
		switch {
		case rec.Seq != uint64(n):
			return "", 0, fmt.Errorf("%w: line %d: seq %d, want %d", ErrInvalid, n, rec.Seq, n)
		case rec.Seq > maxSeq:
			return "", 0, fmt.Errorf("%w: line %d: more than %d records", ErrInvalid, n, maxSeq)
		case rec.Prev != prev:
			return "", 0, fmt.Errorf("%w: line %d (seq %d): prev %s is not the previous record's hash %s", ErrInvalid, n, rec.Seq, rec.Prev, prev)
		}
		h := sha256.New()
		h.Write(line[:len(line)-hashLen])
		h.Write(tail)
		hex.Encode(hx[:], h.Sum(nil))
		if string(hx[:]) != rec.Hash {
			return "", 0, fmt.Errorf("%w: line %d (seq %d): hash %s, the record hashes to %s", ErrInvalid, n, rec.Seq, rec.Hash, hx[:])
		}
		prev = rec.Hash
		b.buf = append(b.buf, line...)
		b.ends = append(b.ends, len(b.buf))
		b.seqs = append(b.seqs, rec.Seq)
		if len(b.seqs) == batchRows {
			select {
			case full <- b:
			case <-stop:
				return "", 0, errStopped
			}
			select {
			case b = <-free:
			case <-stop:
				return "", 0, errStopped
			}
		}
	}
}

// nameBlobs records shas as the blobs of journal an (SQLite: the blobs
// themselves are files in STATE/blobs).
func nameBlobs(ctx context.Context, tx *tx, an int64, shas []string) error {
	for _, sha := range shas {
		if _, err := tx.ExecContext(ctx, `INSERT INTO journal_blobs (attempt, sha) VALUES (?, ?) ON CONFLICT DO NOTHING`, an, sha); err != nil {
			return fmt.Errorf("unable to name blob %s: %w", sha, translate(err))
		}
	}
	return nil
}

func insertSQL(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO journal_lines (k, line) VALUES `)
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?)")
	}
	return b.String()
}

// Journal describes the journal of attempt id, or returns an error
// matching ErrNotFound when the attempt or its journal does not exist.
func (s *Store) Journal(ctx context.Context, id string) (JournalInfo, error) {
	var (
		ji       JournalInfo
		ingested int64
	)
	err := s.r.QueryRowContext(ctx, `SELECT j.records, j.head, j.bytes, j.ingested
FROM journals j JOIN attempts a ON a.n = j.attempt WHERE a.id = ?`, id).Scan(&ji.Records, &ji.Head, &ji.Bytes, &ingested)
	if err != nil {
		return JournalInfo{}, fmt.Errorf("unable to get the journal of attempt %s: %w", id, translate(err))
	}
	ji.Ingested = fromNanos(ingested)
	return ji, nil
}

// JournalLines writes the journal of attempt attemptID to w, each line as
// it was ingested followed by a newline: the journal file itself. An
// attempt without a journal is an error matching ErrNotFound.
func (s *Store) JournalLines(ctx context.Context, attemptID string, w io.Writer) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("unable to read the journal of attempt %s: %w", attemptID, err)
		}
	}()
	// One read transaction: the lines and their count are one snapshot.
	tx, err := s.r.BeginTx(ctx, s.d.readTx())
	if err != nil {
		return err
	}
	defer tx.Rollback()
	an, err := attemptN(ctx, tx, attemptID)
	if err != nil {
		return err
	}
	var records int
	if err := tx.QueryRowContext(ctx, `SELECT records FROM journals WHERE attempt = ?`, an).Scan(&records); err != nil {
		return fmt.Errorf("journal: %w", translate(err))
	}
	rows, err := tx.QueryContext(ctx, `SELECT line FROM journal_lines WHERE k BETWEEN ? AND ? ORDER BY k`,
		lineKey(an, 1), lineKey(an, maxSeq))
	if err != nil {
		return err
	}
	defer rows.Close()
	bw := bufio.NewWriterSize(w, 256<<10)
	var (
		line []byte
		n    int
	)
	for rows.Next() {
		if err := rows.Scan(&line); err != nil {
			return err
		}
		bw.Write(line)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != records {
		return fmt.Errorf("%d lines stored, the journal has %d records", n, records)
	}
	return bw.Flush()
}

// linkFile hard-links a blob into the store; a variable so that tests can
// take the copy path on one file system.
var linkFile = os.Link

// placeBlobs puts every blob of the journal blob directory src into
// s.blobs (see the package doc) and syncs the blob file system when it
// placed any. A missing src has no blobs. It returns the blobs of src
// and how many of them were new.
func (s *Store) placeBlobs(src string) (shas []string, placed int, err error) {
	dirs, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("unable to read blobs: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue // temporary files of an interrupted Put
		}
		files, err := os.ReadDir(filepath.Join(src, d.Name()))
		if err != nil {
			return nil, placed, fmt.Errorf("unable to read blobs: %w", err)
		}
		for _, f := range files {
			sha := f.Name()
			if !journal.ValidSHA(sha) || sha[:2] != d.Name() {
				continue
			}
			if !f.Type().IsRegular() {
				return nil, placed, fmt.Errorf("%w: blob %s is not a regular file", ErrInvalid, sha)
			}
			shas = append(shas, sha)
			if s.blobs.Has(sha) {
				continue
			}
			if err := s.placeBlob(filepath.Join(src, d.Name(), sha), sha); err != nil {
				return nil, placed, err
			}
			placed++
		}
	}
	if placed > 0 {
		if err := syncFS(s.blobs.Dir); err != nil {
			return nil, placed, fmt.Errorf("unable to sync blobs: %w", err)
		}
	}
	return shas, placed, nil
}

// placeBlob links the blob file src, named sha, into the store, or
// copies and checks it where it cannot be linked.
func (s *Store) placeBlob(src, sha string) error {
	dst, err := s.blobs.Path(sha)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("unable to store blob %s: %w", sha, err)
	}
	err = linkFile(src, dst)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	// Another file system (EXDEV), or a link refused: copy.
	got, _, err := s.blobs.PutFile(src)
	if err != nil {
		return err
	}
	if got != sha {
		return fmt.Errorf("%w: blob %s: %w (content hashes to %s)", ErrInvalid, sha, journal.ErrBlobCorrupt, got)
	}
	return nil
}
