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
	OpUnmount       Op = "unmount"
)

// Record is one line of the journal.
//
// Path and Path2 are relative to the workspace root, slash-separated.
// For rename, Path is the old and Path2 the new path; for link, Path is
// the existing and Path2 the new path; for symlink, Path is the new link
// and Target its content. SHA256 is the content of Path after the
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
	Flags    uint32    `json:"flags,omitempty"` // open/rename flags
	Name     string    `json:"name,omitempty"`  // xattr name
	Result   string    `json:"result"`          // "ok" or an errno name such as "EACCES"
	Decision Decision  `json:"decision,omitempty"`
	SHA256   string    `json:"sha256,omitempty"`
	Prev     string    `json:"prev"`
	Hash     string    `json:"hash"`
}
