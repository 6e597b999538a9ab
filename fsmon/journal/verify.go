package journal

import (
	"errors"
	"fmt"
	"io/fs"
)

// VerifyError names the first record of a journal that fails
// verification. Seq is the record's sequence number (for a record that is
// missing, the number it should have had) and Line its 1-based line in
// the journal file, which is also its index in the slice plus one.
type VerifyError struct {
	Seq    uint64
	Line   int
	Reason string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("record %d (line %d): %s", e.Seq, e.Line, e.Reason)
}

// Verify checks a journal read with Read: the sequence numbers run from 1
// without a gap, each Prev is the previous record's Hash (GenesisHash for
// record 1), each Hash is the record's ComputeHash, record 1 is the only
// mount and the last record the only unmount (so a journal cut short
// fails), at most one interrupted record and only releases and the
// unmount after it, denied operations did not succeed (a release, which records
// content rather than changes it, may carry any decision), and every
// SHA256 is a digest.
// With blobs, every blob a record names exists and re-hashes to its name,
// and the mount and unmount manifests parse and have the blob of every
// file they list; blobs == nil skips the blob checks. The error is a
// *VerifyError naming the first bad record.
//
// The chain proves that no record was changed, removed, added or moved
// relative to the last record's Hash. Whoever rewrites a journal can
// recompute the whole chain, so a verifier that holds the head hash from
// elsewhere (the attempt's stored result) must also compare it with the
// last record's Hash.
func Verify(recs []Record, blobs *Blobs) error {
	v := verifier{blobs: blobs, ok: map[string]bool{}}
	if len(recs) == 0 {
		return &VerifyError{Seq: 1, Line: 1, Reason: "missing: the journal is empty (no mount record)"}
	}
	for i, r := range recs {
		if reason := v.check(recs, i); reason != "" {
			return &VerifyError{Seq: r.Seq, Line: i + 1, Reason: reason}
		}
	}
	if last := recs[len(recs)-1]; last.Op != OpUnmount {
		return &VerifyError{Seq: last.Seq + 1, Line: len(recs) + 1,
			Reason: fmt.Sprintf("missing: the journal ends after record %d without an unmount record (cut short?)", last.Seq)}
	}
	return nil
}

// VerifyFile reads the journal file at path and verifies it with its
// blob directory BlobsDir(path). A line that does not parse is reported
// as a *VerifyError too (its Seq is the line number, as it would be in an
// intact journal). It does not replay the journal: VerifyReplay is the
// check that the records account for the final tree.
func VerifyFile(path string) error {
	recs, err := Read(path)
	var pe *ParseError
	if errors.As(err, &pe) {
		return &VerifyError{Seq: uint64(pe.Line), Line: pe.Line, Reason: "does not parse: " + pe.Err.Error()}
	}
	if err != nil {
		return err
	}
	return Verify(recs, &Blobs{Dir: BlobsDir(path)})
}

type verifier struct {
	blobs       *Blobs
	ok          map[string]bool // blobs verified already
	interrupted bool            // an interrupted record was checked
}

// check returns why recs[i] is bad, or "".
func (v *verifier) check(recs []Record, i int) string {
	r := recs[i]
	if want := uint64(i + 1); r.Seq != want {
		return fmt.Sprintf("seq is %d, want %d (a record is missing, added or out of order)", r.Seq, want)
	}
	if i == 0 {
		if r.Prev != GenesisHash {
			return "prev is not the genesis hash"
		}
	} else if r.Prev != recs[i-1].Hash {
		return fmt.Sprintf("prev does not match the hash of record %d", recs[i-1].Seq)
	}
	if r.Hash != r.ComputeHash() {
		return "hash does not match its content"
	}
	switch {
	case i == 0 && r.Op != OpMount:
		return fmt.Sprintf("the first record is %q, want mount", r.Op)
	case i > 0 && r.Op == OpMount:
		return "mount record after record 1"
	case r.Op == OpUnmount && i != len(recs)-1:
		return "unmount record is not the last"
	case r.Op == OpInterrupted && v.interrupted:
		return "a second interrupted record"
	case v.interrupted && r.Op != OpRelease && r.Op != OpUnmount && !r.IsCapCount():
		return fmt.Sprintf("a %s record after the interrupted record (only releases, cap counts and the unmount may follow it)", r.Op)
	case r.Result == "":
		return "no result"
	case r.Decision == Denied && r.Result == "ok" && r.Op != OpRelease:
		return "denied operation recorded as ok"
	case r.Op == OpCap && (r.Result == "ok" || r.Name == ""):
		return "cap record without the cap or its errno"
	case r.SHA256 != "" && !ValidSHA(r.SHA256):
		return fmt.Sprintf("sha256 %q is not 64 lowercase hex digits", r.SHA256)
	case (r.Op == OpMount || r.Op == OpUnmount) && r.SHA256 == "":
		return fmt.Sprintf("%s record without a manifest hash", r.Op)
	}
	if r.Op == OpInterrupted {
		v.interrupted = true
	}
	if v.blobs == nil || r.SHA256 == "" {
		return ""
	}
	if err := v.blob(r.SHA256); err != nil {
		return err.Error()
	}
	if r.Op == OpMount || r.Op == OpUnmount {
		t, err := loadManifest(v.blobs, r.SHA256)
		if err != nil {
			return fmt.Sprintf("%s manifest: %v", r.Op, err)
		}
		for _, p := range t.Paths() {
			if e := t[p]; e.Type == "file" {
				if err := v.blob(e.SHA256); err != nil {
					return fmt.Sprintf("%s manifest file %s: %v", r.Op, p, err)
				}
			}
		}
	}
	return ""
}

// blob verifies blob sha once.
func (v *verifier) blob(sha string) error {
	if v.ok[sha] {
		return nil
	}
	if err := v.blobs.Verify(sha); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob %s is missing", sha)
	} else if err != nil {
		return err
	}
	v.ok[sha] = true
	return nil
}
