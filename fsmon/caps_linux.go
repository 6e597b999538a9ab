package fsmon

import (
	"context"
	"slices"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"benchd.dev/fsmon/journal"
)

// cost is what an operation adds under the caps.
type cost struct {
	entries int64 // new entries of the tree
	writing bool  // its content is stored at release (create, open for writing)
}

// blobAdded counts a blob the view placed in the store (Blobs.Added).
func (v *View) blobAdded(_ string, size int64) {
	v.mu.Lock()
	v.blobBytes += size
	v.mu.Unlock()
}

// journalFull names the journal cap reached, "" for none: the journal
// holds MaxRecords records (CapRecords) or MaxJournalBytes bytes
// (CapJournalBytes).
func (v *View) journalFull() string {
	if v.cfg.Journal.Size() >= v.cfg.MaxJournalBytes {
		return journal.CapJournalBytes
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.records >= v.cfg.MaxRecords {
		return journal.CapRecords
	}
	return ""
}

// stored counts the added bytes of h's capture and takes h out of the
// pending content (pendingLocked).
func (v *View) stored(h *handle, added int64) {
	v.mu.Lock()
	v.blobBytes += added
	h.stored = true
	v.uncountLocked(h)
	if size, ok := v.waiting[h]; ok {
		delete(v.waiting, h)
		v.waitingBytes -= size
		h.n.waitingBytes.Add(-size)
	}
	v.mu.Unlock()
}

// waits moves h, released with its capture queued, from the files open
// for writing to those waiting for their capture, counting its size now,
// size (no handle writes it any more).
func (v *View) waits(h *handle, size int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if h.stored {
		return
	}
	v.closedLocked(h)
	v.waiting[h] = size
	v.waitingBytes += size
	h.n.waitingBytes.Add(size)
}

// pendingLocked is the size of every file open for writing whose
// release has not been captured yet, but for handles of the inode skip
// (nil: none): content the store will take when the kernel sends the
// release, which it does after close returns, so an open or a write
// that follows a close may arrive first. A released file whose capture
// waits counts with its size at the release (View.waiting); a file
// still open with the size last seen (View.counted), which each call
// refreshes for sizeRefresh handles in turn: the work is the same
// however many handles the attempt holds, and a size the kernel grew
// behind the view (passthrough writes) is seen within
// len(View.counted)/sizeRefresh checks. Called with v.mu held.
func (v *View) pendingLocked(skip *gofs.Inode) int64 {
	v.refreshLocked()
	n := v.waitingBytes + v.openBytes
	if skip != nil {
		sn := skip.Operations().(*node)
		n -= sn.waitingBytes.Load() + sn.openBytes.Load()
	}
	return n
}

// sizeRefresh is how many handles' sizes a budget check asks.
const sizeRefresh = 4

// refreshLocked asks the sizes of the next sizeRefresh handles of
// View.counted. Called with v.mu held.
func (v *View) refreshLocked() {
	for range min(sizeRefresh, len(v.counted)) {
		if v.refreshAt >= len(v.counted) {
			v.refreshAt = 0
		}
		h := v.counted[v.refreshAt]
		v.refreshAt++
		fd, ok := h.LoopbackFile.PassthroughFd()
		if !ok {
			continue
		}
		v.sizeChecks++
		if size, ok := sizeOfFd(fd)(); ok {
			v.resizeLocked(h, size)
		}
	}
}

// countLocked adds h, its file of size bytes, to the pending content.
// Called with v.mu held.
func (v *View) countLocked(h *handle, size int64) {
	h.slot = len(v.counted)
	v.counted = append(v.counted, h)
	h.size = 0
	v.resizeLocked(h, size)
}

// closedLocked takes h out of the handles open for writing and of the
// pending content. Called with v.mu held.
func (v *View) closedLocked(h *handle) {
	delete(v.open, h)
	delete(h.n.open, h)
	v.uncountLocked(h)
}

// uncountLocked takes h out of the pending content, if it is there.
// Called with v.mu held.
func (v *View) uncountLocked(h *handle) {
	if h.slot < 0 || h.slot >= len(v.counted) || v.counted[h.slot] != h {
		return
	}
	v.resizeLocked(h, 0)
	last := v.counted[len(v.counted)-1]
	v.counted[h.slot] = last
	last.slot = h.slot
	v.counted[len(v.counted)-1] = nil
	v.counted = v.counted[:len(v.counted)-1]
	h.slot = -1
}

// resizeLocked counts h's file as size bytes. Called with v.mu held.
func (v *View) resizeLocked(h *handle, size int64) {
	d := size - h.size
	h.size = size
	v.openBytes += d
	h.n.openBytes.Add(d)
}

// grew notes that a write or fallocate through h made its file at
// least end bytes long.
func (v *View) grew(h *handle, end int64) {
	v.mu.Lock()
	if h.slot >= 0 && end > h.size {
		v.resizeLocked(h, end)
	}
	v.mu.Unlock()
}

// reserve checks c against the blob and files caps and, when it fits,
// counts its entries as held; the cap that refuses it is returned with
// its errno otherwise. An open for writing counts the stored blobs and
// the pending content of files still open for writing (pendingLocked)
// against the budget. An operation that reserved entries and failed
// gives them back with addFiles.
func (v *View) reserve(c cost) (string, syscall.Errno) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c.writing && v.blobBytes+v.pendingLocked(nil) >= v.maxBlobBytes {
		return journal.CapBlobBytes, syscall.ENOSPC
	}
	if c.entries > 0 && v.files+c.entries > v.cfg.MaxFiles {
		return journal.CapFiles, syscall.EDQUOT
	}
	v.files += c.entries
	return "", 0
}

// addFiles changes the count of entries the tree holds by n.
func (v *View) addFiles(n int64) {
	if n == 0 {
		return
	}
	v.mu.Lock()
	v.files += n
	v.mu.Unlock()
}

// room is what is left of the blob budget for a file of inode in (nil:
// a new one): what is stored and what files open for writing hold
// (pendingLocked), the file's own handles left out.
func (v *View) room(in *gofs.Inode) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.maxBlobBytes - v.blobBytes - v.pendingLocked(in)
}

// tooBig reports whether the file of inode in growing to end bytes
// passes the blob budget: end is more than what is left of it and more
// than the file's size now (size is called only then; a file never
// shrinks into EFBIG).
func (v *View) tooBig(end int64, in *gofs.Inode, size func() (int64, bool)) bool {
	if end <= v.room(in) {
		return false
	}
	cur, ok := size()
	return !ok || end > cur
}

// sizeOfPath is the size of the backing file of a relative path.
func (v *View) sizeOfPath(rel string) func() (int64, bool) {
	return func() (int64, bool) {
		var st unix.Stat_t
		if v.inParent(rel, func(dirfd int, name string) error {
			return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		}) != 0 {
			return 0, false
		}
		return st.Size, true
	}
}

// sizeOfFd is the size of the backing file open at fd.
func sizeOfFd(fd int) func() (int64, bool) {
	return func() (int64, bool) {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, false
		}
		return st.Size, true
	}
}

// hitCap refuses an operation (r, not journaled itself) at a cap with
// errno. The first refusal by each cap is journaled as a cap record
// naming the cap and the refused operation's paths; later ones are not,
// so that a program retrying at a cap cannot grow the journal.
func (v *View) hitCap(ctx context.Context, r journal.Record, cap string, errno syscall.Errno) syscall.Errno {
	v.mu.Lock()
	first := !slices.Contains(v.capsHit, cap)
	if first {
		v.capsHit = append(v.capsHit, cap)
	}
	if v.refused == nil {
		v.refused = make(map[string]*capCount)
	}
	if v.refused[cap] == nil {
		v.refused[cap] = &capCount{errno: result(errno)}
	}
	v.refused[cap].n++
	v.mu.Unlock()
	if first {
		rec := journal.Record{Op: journal.OpCap, Path: r.Path, Path2: r.Path2, Name: cap, Result: result(errno)}
		v.who(ctx, &rec)
		v.append(rec)
		v.log.Warn("workspace cap hit; operations past it are refused", "cap", cap, "path", r.Path, "errno", rec.Result)
	}
	return errno
}

// NoteCap journals that the workspace hit a cap the view does not
// enforce itself, as a refusal at one of its own caps is journaled: a cap
// record naming cap with errno as its result (and no path: the view did
// not see the failed operation), once per cap, and the cap in
// Stats.Caps. benchd calls it with journal.CapStorage when the file
// system holding the backing directory is full at the agent's end. Call
// it before Unmount.
func (v *View) NoteCap(cap string, errno syscall.Errno) {
	v.hitCap(context.Background(), journal.Record{}, cap, errno)
}

// admit decides a mutating operation on the given paths, in this order:
// at the records cap it is refused with ENOSPC; then the edit policy
// decides (a refusal is EACCES, journaled as denied; after a journal
// error every change is EIO); then the blob and files caps are checked
// for c (ENOSPC, EDQUOT) and its entries reserved. A refusal is
// journaled here (refuse, hitCap): the caller returns errno as it is.
func (n *node) admit(ctx context.Context, rec journal.Record, c cost, paths ...string) (journal.Decision, syscall.Errno) {
	if cap := n.v.journalFull(); cap != "" {
		return journal.Denied, n.v.hitCap(ctx, rec, cap, syscall.ENOSPC)
	}
	d, errno := n.check(paths...)
	if errno != 0 {
		return journal.Denied, n.refuse(ctx, rec, errno)
	}
	if cap, errno := n.v.reserve(c); errno != 0 {
		return journal.Denied, n.v.hitCap(ctx, rec, cap, errno)
	}
	return d, 0
}

// capCount is how many operations a cap refused, and the errno of the
// first.
type capCount struct {
	n     int64
	errno string
}

// appendCapCounts appends, for each cap hit, a cap record with Flags
// journal.CapCount whose Size is how many operations the cap refused
// (the record of the first refusal comes when it happens). Called at
// unmount, once no operation is refused any more.
func (v *View) appendCapCounts() error {
	v.mu.Lock()
	recs := make([]journal.Record, 0, len(v.capsHit))
	for _, c := range v.capsHit {
		n := v.refused[c]
		recs = append(recs, journal.Record{Op: journal.OpCap, Name: c, Flags: journal.CapCount, Size: n.n, Result: n.errno})
	}
	v.mu.Unlock()
	for _, r := range recs {
		if err := v.append(r); err != nil {
			return err
		}
	}
	return nil
}
