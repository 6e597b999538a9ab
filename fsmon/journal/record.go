package journal

import "time"

// Op names a journaled operation.
type Op string

// The operations a journal records. OpMount is always record 1: its
// SHA256 is the hash of the initial tree's manifest (a blob). OpUnmount is
// always the last record: its SHA256 is the hash of the final tree's
// manifest. In between, one record per mutating operation or denied
// attempt.
const (
	OpMount         Op = "mount"
	OpCreate        Op = "create"
	OpMkdir         Op = "mkdir"
	OpMknod         Op = "mknod"
	OpOpen          Op = "open" // open for writing
	OpWrite         Op = "write"
	OpTruncate      Op = "truncate"
	OpRename        Op = "rename"
	OpUnlink        Op = "unlink"
	OpRmdir         Op = "rmdir"
	OpSymlink       Op = "symlink"
	OpLink          Op = "link"
	OpChmod         Op = "chmod"
	OpChown         Op = "chown"
	OpUtimens       Op = "utimens"
	OpSetxattr      Op = "setxattr"
	OpRemovexattr   Op = "removexattr"
	OpFallocate     Op = "fallocate"
	OpCopyFileRange Op = "copy_file_range"
	OpRelease       Op = "release" // last close of a file open for writing
	// OpInterrupted marks a journal whose attempt did not run to its
	// end (canceled, benchd stopped, or sealed by recovery after a
	// crash); Name says why. Only releases of files still open and the
	// unmount record may follow it.
	OpInterrupted Op = "interrupted"
	// OpCap says that the view refused an operation because it hit one
	// of its caps (Name: CapFiles, CapRecords, CapJournalBytes,
	// CapBlobBytes or CapOpenFiles), once per cap: Path is the refused
	// operation's path, Result its errno (EDQUOT, ENOSPC, EFBIG or
	// EMFILE). Name CapStorage says that the disk holding the workspace
	// was full (no Path: the write that failed went past the view).
	// Before the unmount record, each cap hit has a second cap record
	// with Flags CapCount whose Size is how many operations it refused
	// (IsCapCount). It changes nothing.
	OpCap     Op = "cap"
	OpUnmount Op = "unmount"
)

// The caps an OpCap record names.
const (
	CapFiles     = "files"      // entries the tree may hold: creating more is EDQUOT
	CapRecords   = "records"    // records the journal may hold: mutating operations are ENOSPC
	CapBlobBytes = "blob_bytes" // bytes of content the blob store may take: ENOSPC, EFBIG for a file growing past it
	// CapStorage is the attempt's disk ([environment] storage_mb): the
	// file system holding the backing directory was full when the agent
	// ended, so writes into it failed with ENOSPC.
	CapStorage = "storage"
	// CapJournalBytes is the journal's size in bytes: past it mutating
	// operations are ENOSPC, as at CapRecords.
	CapJournalBytes = "journal_bytes"
	// CapOpenFiles is the backing descriptors the view may hold: an
	// open past it is EMFILE.
	CapOpenFiles = "open_files"
)

// CapCount is the Flags of the cap record that counts a cap's
// refusals (in Size), appended at unmount.
const CapCount = 1

// IsCapCount reports whether r is the cap record that counts a cap's
// refusals.
func (r Record) IsCapCount() bool { return r.Op == OpCap && r.Flags == CapCount }

// CapsOf lists the caps the OpCap records of recs name, in order.
func CapsOf(recs []Record) []string {
	var caps []string
	for _, r := range recs {
		if r.Op == OpCap && !r.IsCapCount() {
			caps = append(caps, r.Name)
		}
	}
	return caps
}

// Record is one line of the journal.
//
// Path and Path2 are relative to the workspace root, slash-separated.
// For rename, Path is the old and Path2 the new path; for link, Path is
// the existing and Path2 the new path; for symlink, Path is the new link
// and Target its content. A write, fallocate, copy_file_range, truncate
// or release of a file whose every name was removed while it was open
// has an empty Path and the last name the file had in Target. SHA256 is the content of Path after the
// operation where the record carries content (release, the initial and
// final manifests of mount/unmount). Prev and Hash form the chain: Hash is
// the SHA-256 of the record's canonical encoding with Hash empty (which
// includes Prev), and Prev is the previous record's Hash (64 zeros for
// record 1).
type Record struct {
	Seq      uint64    `json:"seq"`
	Mono     int64     `json:"t_ns"` // nanoseconds since mount
	Wall     time.Time `json:"wall"`
	Op       Op        `json:"op"`
	Path     string    `json:"path,omitempty"`
	Path2    string    `json:"path2,omitempty"`
	Target   string    `json:"target,omitempty"`
	PID      uint32    `json:"pid,omitempty"`
	UID      uint32    `json:"uid,omitempty"`
	Comm     string    `json:"comm,omitempty"`
	Offset   int64     `json:"off,omitempty"`
	Size     int64     `json:"size,omitempty"` // length of a write, new size of a truncate, file size at release
	Mode     uint32    `json:"mode,omitempty"`
	Flags    uint32    `json:"flags,omitempty"` // open/rename flags; for release, 1 at unmount, ReleaseAtRecovery
	Name     string    `json:"name,omitempty"`  // xattr name; for interrupted, why; for cap, which cap
	Result   string    `json:"result"`          // "ok" or an errno name such as "EACCES"
	Decision Decision  `json:"decision,omitempty"`
	SHA256   string    `json:"sha256,omitempty"` // content: a release's; a truncate by path's to a non-zero size (no release follows it); mount and unmount: the manifest
	Prev     string    `json:"prev"`
	Hash     string    `json:"hash"`
}
