package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Recovered describes a journal sealed by Recover.
type Recovered struct {
	// Kept is how many records of the file were kept, the mount record
	// included; Records how many the sealed journal has (Kept plus the
	// interrupted and unmount records Recover appended).
	Kept, Records int
	// Cut is the number of bytes cut off the end of the file, and Why
	// says what was wrong with the first record cut ("" when nothing
	// was cut).
	Cut int64
	Why string
	// Sealed is true when the file was sealed already (its last record
	// an unmount record): Recover then changes nothing.
	Sealed bool
	// Observed is how many release records Recover added for files
	// whose content in the backing directory differs from the kept
	// records' (see Recover).
	Observed int
	// Head is the Hash of the last record.
	Head string
}

// Recover seals the journal file at path whose writer never closed it
// (the process died, or the machine lost power). It keeps the longest
// prefix of complete records: each whole (ending in a newline), in
// canonical form, in the chain, and with every blob it names present
// and intact (BlobsDir(path)); the first record that is not, and
// everything after it, is cut off. It then appends an interrupted
// record whose Name is cause; with a backing directory (the directory
// the journaled view served, which nothing else writes: "" for none),
// a release record with Flags ReleaseAtRecovery for every file of the
// kept records' tree whose content there differs (a file still open at
// the crash, written through passthrough, or released in the lost tail);
// and an unmount record whose manifest is the tree the records account
// for (ReplayTree). It syncs the file. The sealed journal verifies
// (Verify, VerifyReplay).
//
// A file whose last complete record is an unmount record is sealed
// already and left as it is. A journal without a complete mount record,
// or whose initial manifest or blobs are lost, cannot be sealed: that
// is an error, and the file is left untouched.
func Recover(path, backing, cause string, now time.Time) (Recovered, error) {
	var res Recovered
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return res, fmt.Errorf("unable to recover journal: %w", err)
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return res, fmt.Errorf("unable to recover journal: %w", err)
	}
	blobs := &Blobs{Dir: BlobsDir(path)}
	recs, keep, why, err := completePrefix(f, blobs)
	if err != nil {
		return res, fmt.Errorf("unable to recover journal %s: %w", path, err)
	}
	if len(recs) == 0 {
		return res, fmt.Errorf("unable to recover journal %s: no complete mount record (%s)", path, why)
	}
	res.Kept, res.Cut, res.Why = len(recs), st.Size()-keep, why
	last := recs[len(recs)-1]
	if last.Op == OpUnmount {
		res.Sealed, res.Records, res.Head = true, len(recs), last.Hash
		if res.Cut > 0 {
			// Bytes after a complete unmount record: a torn append
			// after the seal. Cut them so the file verifies.
			if err := f.Truncate(keep); err != nil {
				return res, fmt.Errorf("unable to recover journal %s: %w", path, err)
			}
		}
		return res, f.Sync()
	}
	tree, err := ReplayTree(recs, blobs, last.Seq)
	if err != nil {
		return res, fmt.Errorf("unable to recover journal %s: %w", path, err)
	}
	observed, err := observe(tree, backing, blobs)
	if err != nil {
		return res, fmt.Errorf("unable to recover journal %s: %w", path, err)
	}
	if err := f.Truncate(keep); err != nil {
		return res, fmt.Errorf("unable to recover journal %s: %w", path, err)
	}
	if _, err := f.Seek(keep, io.SeekStart); err != nil {
		return res, fmt.Errorf("unable to recover journal %s: %w", path, err)
	}
	w := newWriter(path, f, last, 0)
	f = nil // the writer closes it
	err = seal(w, recs, observed, blobs, cause, now)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("unable to recover journal %s: %w", path, err)
	}
	last = w.Last()
	res.Records, res.Head, res.Observed = int(last.Seq), last.Hash, len(observed)
	return res, nil
}

// seal appends to w, after the kept records recs, the interrupted record
// (unless recs has one: a seal cut short), the observed releases, and
// the unmount record of the tree they all account for.
func seal(w *Writer, recs, observed []Record, blobs *Blobs, cause string, now time.Time) error {
	now = now.UTC()
	last := recs[len(recs)-1]
	mono := max(now.Sub(recs[0].Wall).Nanoseconds(), last.Mono)
	all := recs
	add := func(r Record) error {
		r.Mono, r.Wall = mono, now
		got, err := w.Append(r)
		all = append(all, got)
		return err
	}
	interrupted := false
	for _, r := range recs {
		interrupted = interrupted || r.Op == OpInterrupted
	}
	if !interrupted {
		if err := add(Record{Op: OpInterrupted, Name: cause, Result: "ok"}); err != nil {
			return err
		}
	}
	for _, r := range observed {
		if err := add(r); err != nil {
			return err
		}
	}
	tree, err := ReplayTree(all, blobs, all[len(all)-1].Seq)
	if err != nil {
		return err
	}
	// Every content of the tree was verified with its record, or stored
	// by observe, but for files created and not yet released: the empty
	// content.
	for _, e := range tree {
		if e.Type == "file" && e.SHA256 == EmptySHA256 && !blobs.Has(EmptySHA256) {
			if _, err := blobs.PutBytes(nil); err != nil {
				return err
			}
		}
	}
	manifest, err := blobs.PutBytes(tree.Manifest())
	if err != nil {
		return err
	}
	return add(Record{Op: OpUnmount, Result: "ok", SHA256: manifest})
}

// ReleaseAtRecovery, in the Flags of a release record, marks content
// that Recover observed in the backing directory, not a release of a
// handle; 1 marks the capture of a file still open at unmount.
const ReleaseAtRecovery = 2

// observe returns a release record (ReleaseAtRecovery) for each file of
// tree whose content in backing differs, its content stored in blobs.
// Paths that are not regular files in backing are left alone: the
// records do not account for that change, and a release cannot say it.
func observe(tree Tree, backing string, blobs *Blobs) ([]Record, error) {
	if backing == "" {
		return nil, nil
	}
	// Paths are resolved relative to backing's descriptor, so that
	// paths near PATH_MAX are observed too.
	root, err := os.OpenRoot(backing)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var out []Record
	for _, p := range tree.Paths() {
		e := tree[p]
		if e.Type != "file" {
			continue
		}
		fp := filepath.FromSlash(p)
		if st, err := root.Lstat(fp); err != nil || !st.Mode().IsRegular() {
			continue
		}
		sha, size, err := hashIn(root, fp, hashOpenFile)
		if err != nil || sha == e.SHA256 {
			continue
		}
		if sha, size, err = hashIn(root, fp, blobs.PutOpenFile); err != nil {
			return nil, err
		}
		out = append(out, Record{Op: OpRelease, Path: p, SHA256: sha, Size: size, Flags: ReleaseAtRecovery, Result: "ok"})
	}
	return out, nil
}

// hashIn opens the file fp of root and hashes (or stores) it with fn.
func hashIn(root *os.Root, fp string, fn func(*os.File) (string, int64, error)) (string, int64, error) {
	f, err := root.Open(fp)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	return fn(f)
}

// completePrefix reads r and returns its complete records (see
// Recover), the number of bytes they take, and why the next line was
// not one ("" at the end of the file). An error is an I/O error.
func completePrefix(r io.Reader, blobs *Blobs) ([]Record, int64, string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	v := verifier{blobs: blobs, ok: map[string]bool{}}
	var (
		recs []Record
		off  int64
		long []byte
	)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err == io.EOF {
			if len(line) > 0 {
				return recs, off, fmt.Sprintf("line %d is torn (%d bytes without a newline)", len(recs)+1, len(line)), nil
			}
			return recs, off, "", nil
		}
		if err != nil {
			return nil, 0, "", err
		}
		rec, perr := parseLine(bytes.TrimSuffix(line, []byte{'\n'}))
		if perr != nil {
			return recs, off, fmt.Sprintf("line %d does not parse: %v", len(recs)+1, perr), nil
		}
		recs = append(recs, rec)
		if reason := v.check(recs, len(recs)-1); reason != "" {
			return recs[:len(recs)-1], off, fmt.Sprintf("record %d: %s", rec.Seq, reason), nil
		}
		off += int64(len(line))
		if rec.Op == OpUnmount {
			if _, err := br.Peek(1); !errors.Is(err, io.EOF) {
				return recs, off, "data after the unmount record", nil
			}
			return recs, off, "", nil
		}
	}
}
