package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
)

// handlePrune: POST /v1/prune (prune).
func (s *server) handlePrune(w http.ResponseWriter, r *http.Request) error {
	var req apitype.PruneRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	out, err := s.prune(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// prune deletes the ended attempts req selects: their records and
// unused blobs in the store (store.Prune, one transaction), then each
// one's work directory STATE/attempts/ID (its disk image, its capture
// files). A work directory with a mount below it (a read-only mount of
// the disk for a diff or a regrade still going on) or of an attempt
// still in memory is left, and listed as kept. A dry run deletes
// nothing and says what would go.
func (s *server) prune(ctx context.Context, req apitype.PruneRequest) (apitype.Prune, error) {
	if req.Before.IsZero() {
		return apitype.Prune{}, fmt.Errorf("a prune needs a time to prune before: %w", errInvalid)
	}
	for _, p := range req.Purposes {
		if !apitype.ValidPurpose(p) {
			return apitype.Prune{}, fmt.Errorf("purpose %q: want one of %s: %w", p, strings.Join(apitype.Purposes, ", "), errInvalid)
		}
	}
	pr, err := s.store.Prune(ctx, store.PruneFilter{Before: req.Before, Purposes: req.Purposes, DryRun: req.DryRun})
	if err != nil {
		return apitype.Prune{}, err
	}
	out := apitype.Prune{
		DryRun: req.DryRun, Attempts: pr.Attempts, Runs: pr.Runs, Blobs: pr.Blobs,
		BlobBytes: pr.BlobBytes, RecordBytes: pr.RecordBytes, KeptForRetries: pr.KeptForRetries,
	}
	if out.Attempts == nil {
		out.Attempts = []string{}
	}
	for _, id := range pr.Attempts {
		dir := s.attemptDir(id)
		if _, err := os.Lstat(dir); err != nil {
			continue // none, or out of reach: nothing to free
		}
		if why := inUse(dir, s.liveOf(id) != nil); why != "" {
			out.Kept = append(out.Kept, id+": "+why)
			continue
		}
		n := allocated(dir)
		if !req.DryRun {
			if err := os.RemoveAll(dir); err != nil {
				out.Kept = append(out.Kept, id+": "+err.Error())
				continue
			}
		}
		out.WorkBytes += n
	}
	p := peerFrom(ctx)
	s.log.Info("prune", "uid", p.UID, "before", req.Before, "purposes", req.Purposes, "dry_run", req.DryRun,
		"attempts", len(out.Attempts), "runs", out.Runs, "blobs", out.Blobs, "bytes", out.Bytes(), "kept", len(out.Kept))
	return out, nil
}

// inUse says why the work directory dir must stay ("" when it may go):
// its attempt is still in memory (live), or a file system is mounted
// on a directory in it.
func inUse(dir string, live bool) string {
	if live {
		return "the attempt is still in memory"
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err.Error()
	}
	dev := st.Sys().(*syscall.Stat_t).Dev
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			return err.Error()
		}
		if sub.Sys().(*syscall.Stat_t).Dev != dev {
			return e.Name() + " is mounted"
		}
	}
	return ""
}

// allocated is the disk space the files under dir take (their blocks:
// a sparse disk image counts for what it holds, not its size).
func allocated(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}
