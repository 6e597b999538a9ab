package daemon

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
)

// keepStateBudget brings the state directory under cfg.MaxStateSize
// (benchd --max-state-size; 0: no budget), the oldest ended attempts
// first: first each one's work directory (what is left of its disk, its
// capture files), then, while still over, each one whole (store.Prune:
// its records and the blobs no other journal names). An attempt still
// in memory, one whose verdict is left to review and one a person has
// reviewed (a dispute decided) are never dropped: the store's prune
// refuses them (PruneFilter.KeepReviewed) and they are not selected
// here. It runs when an attempt has ended and at start; one pass at a
// time.
//
// The state's size is measured once per pass (allocated blocks, a
// file linked twice counted once) and what each deletion frees is
// subtracted: the database's freed pages are reused by later records,
// not returned to the file system, so they count as freed.
func (s *server) keepStateBudget(ctx context.Context) {
	if s.cfg.MaxStateSize <= 0 {
		return
	}
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	used := stateSize(s.cfg.StateDir)
	if used <= s.cfg.MaxStateSize {
		return
	}
	old, err := s.budgetCandidates(ctx)
	if err != nil {
		s.log.Warn("state budget: unable to list the ended attempts", "err", err)
		return
	}
	start := used
	for _, id := range old {
		if used <= s.cfg.MaxStateSize {
			break
		}
		used -= s.dropWorkDir(id)
	}
	var pruned []string
	for _, id := range old {
		if used <= s.cfg.MaxStateSize {
			break
		}
		pr, err := s.store.Prune(ctx, store.PruneFilter{IDs: []string{id}, KeepReviewed: true})
		if err != nil {
			s.log.Warn("state budget: unable to prune", "attempt", id, "err", err)
			continue
		}
		if len(pr.Attempts) == 0 {
			continue // kept: a kept retry names it, or it was reviewed since
		}
		used -= pr.BlobBytes + pr.RecordBytes
		pruned = append(pruned, id)
	}
	s.log.Info("state budget", "max", s.cfg.MaxStateSize, "before", start, "after", used, "pruned", len(pruned))
	if used > s.cfg.MaxStateSize {
		s.log.Warn("state budget: over budget with nothing left to prune", "max", s.cfg.MaxStateSize, "used", used)
	}
}

// budgetCandidates are the ids of the ended attempts the budget may
// drop, oldest first: not in memory, not left to review, not reviewed.
func (s *server) budgetCandidates(ctx context.Context) ([]string, error) {
	list, err := s.store.ListAttempts(ctx, store.Filter{States: []string{apitype.StateDone, apitype.StateInfraError, apitype.StateCanceled}})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, a := range slices.Backward(list) { // newest first: walk back
		if a.Unresolved() || a.Outcome == apitype.OutcomeReview || a.Review != nil || s.liveOf(a.ID) != nil {
			continue
		}
		ids = append(ids, a.ID)
	}
	return ids, nil
}

// dropWorkDir removes the work directory of ended attempt id, unless
// something is mounted in it, and returns the bytes that frees (files
// linked elsewhere too, such as blobs the store holds, free nothing).
func (s *server) dropWorkDir(id string) int64 {
	dir := s.attemptDir(id)
	if _, err := os.Lstat(dir); err != nil || inUse(dir, s.liveOf(id) != nil) != "" {
		return 0
	}
	n := ownBytes(dir)
	if err := os.RemoveAll(dir); err != nil {
		s.log.Warn("state budget: unable to remove a work directory", "attempt", id, "err", err)
		return 0
	}
	return n
}

// stateSize is the disk space the files under dir take: their
// allocated blocks, a file linked more than once counted once.
func stateSize(dir string) int64 {
	var n int64
	seen := map[uint64]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		n += st.Blocks * 512
		return nil
	})
	return n
}

// ownBytes is the disk space of the files under dir that have no link
// outside it: what removing dir frees.
func ownBytes(dir string) int64 {
	var n int64
	links := map[uint64]uint64{} // inode: links seen under dir
	blocks := map[uint64]int64{}
	nlink := map[uint64]uint64{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		links[st.Ino]++
		blocks[st.Ino], nlink[st.Ino] = st.Blocks*512, uint64(st.Nlink)
		return nil
	})
	for ino, seen := range links {
		if seen >= nlink[ino] {
			n += blocks[ino]
		}
	}
	return n
}
