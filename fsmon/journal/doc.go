// Package journal is the forensic record of an fsmon workspace: the record
// format, the hash chain that makes any later edit detectable, the
// content-addressed blob store, verification, replay of the tree at any
// record, and the changeset between the initial and the final tree.
//
// It is pure Go with no FUSE and no cgo dependency, so that a client can
// check an exported journal on any machine (benchctl verify).
//
// A journal is a file of records, one JSON object per line, and a blob
// directory beside it (BlobsDir: the journal's path + ".blobs"). Writer
// appends records, Read and Reader read them back, Verify and VerifyFile
// check the chain and the blobs, ReplayTree and Replay rebuild the tree at
// any record, VerifyReplay proves that the records account for the final
// tree, ChangesetOf gives the net change, Policy.Violations and CountsOf
// judge it, and Recover seals a journal whose writer died.
//
// # Record format
//
// Record 1 is always a mount record whose SHA256 is the hash of the
// initial tree's manifest; the last record is always an unmount record
// whose SHA256 is the hash of the final tree's manifest. Every record in
// between is one mutating operation on the workspace, or one attempt the
// edit policy denied, with the caller (pid, uid, command name), the paths
// (relative to the workspace root, slash-separated; "" is the root), the
// operation's arguments, its result ("ok" or an errno name such as
// "EACCES") and the policy's decision. Record documents each field; the
// conventions for two-path operations are: rename and link have the old
// (existing) path in Path and the new one in Path2, symlink the new link
// in Path and its content in Target, copy_file_range the destination (the
// file written) in Path and the source in Path2. A write, fallocate,
// truncate, copy_file_range or release of a file whose every name was
// removed while it was open has an empty Path and the last name the file
// had in Target (see "Replay"). A cap record (op "cap") says that the
// view refused an operation at one of its caps: Name is the cap
// (CapFiles, CapRecords, CapJournalBytes, CapBlobBytes or
// CapOpenFiles), Path and Path2 the refused operation's paths, Result
// its errno (EDQUOT, ENOSPC, EFBIG or EMFILE); there is at most one per
// cap for its first refusal, and one more before the unmount record
// with Flags CapCount whose Size counts the cap's refusals
// (Record.IsCapCount). An interrupted record says, in Name, why
// the attempt ended before its end (canceled, out of time, benchd
// stopped or died); only releases of files still open, cap counts and
// the unmount record may follow it. Mode is the permission
// the object got for create, mkdir and mknod (after the umask: replay
// takes it as the new object's mode), and the new one for chmod; mknod's
// Mode carries the file type bits too (S_IFREG for a regular file).
//
// A line is the canonical encoding of its record, defined as the output
// of Go's encoding/json for the Record struct with the Wall time in UTC:
//
//   - one object, no whitespace, keys in the order of the struct fields;
//   - keys tagged omitempty (path, path2, target, pid, uid, comm, off,
//     size, mode, flags, name, decision, sha256) are left out when zero or
//     empty; seq, t_ns, wall, op, result, prev and hash are always there;
//   - integers in decimal; wall as an RFC 3339 string with nanoseconds,
//     trailing zeros of the fraction dropped, and "Z" (for example
//     "2026-11-29T18:24:37.1234Z"); years outside 0..9999 cannot be
//     written;
//   - strings as encoding/json writes them: '"' and '\' escaped, control
//     characters as \n, \r, \t, \b, \f or \u00XX, '<', '>' and '&' as
//     \u003c, \u003e and \u0026, U+2028 and U+2029 as \u2028 and \u2029;
//     a name (path, path2, target, comm, name) that is not UTF-8 is
//     written under its key with "_b64" appended (see "Names that are
//     not UTF-8"), in the place of its key;
//   - then a newline.
//
// Reading is strict: a line that decodes but is not byte for byte the
// canonical encoding of what it decodes to (keys reordered, repeated or
// unknown, spacing, other escapes, a non-UTC time) is an error naming
// the line, as is a line that does not decode at all.
//
// # Names that are not UTF-8
//
// A file name on Linux is any byte string without NUL or '/', a link
// target any without NUL, and a command name (comm) what the process
// set: an agent chooses them, and they need not be UTF-8, which is all a
// JSON string holds (encoding/json turns each invalid byte into U+FFFD).
// A name that is UTF-8, whatever it holds (newlines, tabs, escape
// sequences, U+FFFD itself), is written as a JSON string under its key,
// as it always was. A name that is not is written under KEY_b64 instead
// ("path_b64", "path2_b64", "target_b64", "comm_b64", "name_b64"), as
// the standard base64 (with padding) of its bytes. Each name has one
// form: KEY_b64 holding UTF-8, or both keys, is not canonical. The same
// holds for a manifest's entries (path_b64, target_b64) and a
// changeset's changes (path_b64, from_b64), so that every line, manifest
// and changeset is UTF-8 JSON that any store takes (PostgreSQL's text
// refuses invalid UTF-8), and each name replays to its bytes. Journals
// written before this form read as they did: their names are UTF-8 (a
// name that was not made its journal unreadable). Record, Entry and
// Change encode and decode the form in their MarshalJSON and
// UnmarshalJSON, so the API's and benchctl's JSON carry it too.
//
// # Hash chain
//
// Hash is the hex SHA-256 of the record's canonical encoding with Hash
// set to "" (the line up to and including `"hash":""}` with nothing
// between those quotes: ComputeHash). Prev is the previous record's Hash,
// and GenesisHash (64 zeros) for record 1. Seq counts from 1 without gaps.
// Writer.Append assigns Seq, Prev and Hash; the caller sets everything
// else, times included.
//
// Because each Hash covers Prev, editing any field of a record (a path, a
// decision, a result, a time), deleting, inserting or reordering records
// breaks the chain at the first record concerned, and Verify names it.
// Cutting records off the end leaves a valid chain but no unmount record,
// which Verify also rejects (it also allows at most one interrupted
// record, followed only by releases and the unmount). Someone who rewrites a journal can recompute
// every hash after their edit, so the chain proves integrity only
// relative to a head hash kept elsewhere: whoever stored the attempt's
// result keeps the unmount record's Hash and compares it.
//
// # Blobs
//
// Blobs is a content-addressed store: the content whose hex SHA-256 is S
// is the read-only file S[:2]/S in the blob directory. Content up to 1
// MiB with no hole is read into memory and hashed first: when its blob
// exists nothing is written, else it is written to a file with no name
// (O_TMPFILE, on Linux) and linked into place. Larger content is
// written to a temporary file, hashed while it is copied, and renamed
// into place. A blob that exists already is never rewritten; storing
// the final tree, whose content the releases stored, makes no file at
// all. The store holds the
// content of every file of the initial and the final tree (SnapshotTree
// stores them with the manifest), the content of every file at every
// release record, and the two manifests.
//
// Holes stay holes: on Linux, storing a file's content (PutFile,
// PutOpenFile, SnapshotTree), hashing it (ScanTree, HashFile, Verify)
// and replaying it find holes with SEEK_DATA and SEEK_HOLE and neither
// read nor write them, so a `truncate -s 1G` file is a 1 GiB hole in its
// blob and in the replayed tree, not a gigabyte of zeros on disk. The
// content hash is of every byte, as always: a hole's zeros are hashed
// from memory.
//
// A manifest (Tree.Manifest) is the encoding/json encoding of a tree's
// entries as an array sorted by path: path (or path_b64), type ("file", "dir",
// "symlink" or "other"), permission bits, and for files size and sha256,
// for symlinks target. ParseManifest only accepts a manifest that
// describes a possible tree (sorted unique clean relative paths, every
// parent a directory), so that replaying one can never write outside its
// destination.
//
// # Replay
//
// ReplayTree computes the tree after any record: it starts from the mount
// manifest and applies, in order, every record whose result is "ok" and
// whose decision is not denied (a denied or failed operation changed
// nothing; a release, which only reports content, applies whatever its
// decision). From the unmount record on, the tree is the final manifest
// itself. The operations act as follows:
//
//   - create: a new empty file with Mode (or, on an existing file, nothing,
//     or empty content if Flags has O_TRUNC);
//   - mknod: an empty file for S_IFREG, else an entry of type "other";
//   - mkdir: a directory with Mode; symlink: a link to Target, mode 0777;
//   - link: Path2 becomes a second name of Path's file. Hard links share
//     one inode: a later release, truncate or chmod through either path
//     shows at both;
//   - rename: Path moves to Path2 with everything below it, replacing a
//     file or an empty directory there (two names of one file: nothing
//     happens, as in rename(2)); with RENAME_EXCHANGE the two swap;
//   - unlink and rmdir remove the path;
//   - open for writing with O_TRUNC, and truncate to size 0, make the
//     content empty;
//   - chmod sets the mode (of the inode, for a file); chown, utimens,
//     setxattr and removexattr change nothing a tree holds;
//   - write, fallocate, copy_file_range (into Path) and truncate to a
//     non-zero size make the content unknown: records carry no data, even
//     per-write records in writes mode. The tree keeps the last known hash
//     (and, for truncate, takes the new size) until the next release
//     record of the path, whose SHA256 and Size are the file's content
//     after the writes. A release of a path that no longer holds a file
//     (removed while open, or recorded with no path) changes nothing;
//   - a truncate to a non-zero size with a SHA256 (a truncate by path,
//     truncate(2), which no release follows: fsmon records the content
//     it left) sets the content to that hash and size;
//   - write, fallocate, truncate, copy_file_range and release with an
//     empty Path (a file with no name left, named in Target) change
//     nothing: fsmon never lets such a file be named again (links of it
//     and O_TMPFILE are refused), so it is in no tree, and applying them
//     to whatever holds the old name later would be wrong;
//   - interrupted and cap change nothing.
//
// Hard links that already exist in the initial tree are not visible in a
// manifest: replay treats each of their paths as a file of its own, so a
// later change through one name does not show at the others (and
// VerifyReplay reports the difference). Links made during the attempt
// (link records) are modeled.
//
// An operation that cannot apply to the tree (a path that is not there, a
// parent that is not a directory, an unknown operation) is an ErrReplay
// naming the record. Replay writes the tree into an empty directory from
// the blobs: files whose content is unknown at that record get their last
// known content, hard links are hard links, entries of type "other" are
// left out, and owners and times are not restored.
//
// VerifyReplay replays up to the record before the unmount and compares
// the result with the final manifest (paths, types, content hashes, modes
// and link targets). It passes only if the records account for every
// change the final tree shows, which is what lets a third party rebuild
// the graded tree from the journal and re-run the grade.
//
// # Writing, and what survives each ending
//
// Append encodes a record into the Writer's buffer; every SyncInterval
// (100 ms) a goroutine of the Writer writes the buffered records to the
// file and syncs it, off the appending caller's path, and Close writes
// and syncs the rest. Blobs are not synced one by one (see Blobs). So:
//
//   - a normal end (fsmon's Unmount, then Close): every record, ending
//     with the unmount record;
//   - an attempt cut short while its writer lives (canceled, out of time,
//     the daemon stopping): an interrupted record naming the cause, the
//     releases of files still open, the unmount record; a complete
//     journal like any other;
//   - the writing process killed (kill -9, a crash): the records of the
//     last interval at most are lost (they were still in the buffer); a
//     power loss may also lose what the last sync had not finished, and
//     recent blobs. The file ends in complete records, possibly followed
//     by one torn line.
//
// Recover turns the last case into the second: it keeps the longest
// prefix of complete records (whole lines, canonical, in the chain, every
// blob they name present and intact, the mount manifest's files
// included), cuts the rest, and appends an interrupted record, a release
// record with Flags ReleaseAtRecovery (2) for each file of the kept
// records' tree whose content in the view's backing directory differs
// (a file still open at the crash, written through passthrough, or one
// whose release was in the lost tail: content observed, with no caller),
// and an unmount record whose manifest is the tree all these records
// account for (ReplayTree). The result verifies and replays; a torn tail
// line or a lost blob costs the records from it on, never the journal.
// Paths made, removed or renamed in the lost tail are not in its final
// tree: no record says so, and a release cannot. A journal without a
// complete mount record and its initial tree cannot be recovered.
//
// # Changeset
//
// ChangesetOf is DiffTrees of the mount and unmount manifests with the
// policy's ignored paths left out: the net change of the attempt, with a
// file deleted at one path and added at another with the same content
// reported as one rename. It does not depend on the records in between,
// only on the two trees the chain vouches for.
//
// # Rules read from a journal
//
// The journal owns the rules that judge it, so that benchd (the view,
// the grader, start-up recovery) and benchctl verify apply the same
// ones:
//
//   - Counts (Add, CountsOf): edits are the operations the view
//     performed, denied the ones the edit policy refused; mount, unmount,
//     interrupted and cap records are neither.
//   - Policy.Violations: the changes of a changeset the policy does not
//     allow (a verdict's wrong_files, with any denied operation). Both
//     paths of a rename are judged; a directory is no change of its own
//     when a file below it that changed is allowed, so that an attempt
//     may add or remove the directory an allowed file needs.
package journal
