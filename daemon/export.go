package daemon

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
	"benchd.dev/fsmon/journal"
	"benchd.dev/modelgw"
	"benchd.dev/tasks"
)

// Names inside an export archive (apitype.ExportLayout).
const (
	exportJournal = "journal.jsonl"
	exportStdout  = "transcript/stdout"
	exportStderr  = "transcript/stderr"
	exportAttempt = "attempt.json"
	exportTask    = "task.json"
	exportSigned  = "attempt.dsse.json"
	exportReview  = "review.json"
	exportModel   = "model.jsonl"
	exportModelIn = "model/"
)

// storedJournal returns the raw journal of attempt id and its records.
func (s *server) storedJournal(ctx context.Context, id string) ([]byte, []journal.Record, error) {
	var buf bytes.Buffer
	if err := s.store.JournalLines(ctx, id, &buf); err != nil {
		return nil, nil, fmt.Errorf("journal of attempt %s: %w", id, err)
	}
	rd := journal.NewReader(bytes.NewReader(buf.Bytes()))
	var recs []journal.Record
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("stored journal of attempt %s is corrupt: %w", id, err)
		}
		recs = append(recs, rec)
	}
	return buf.Bytes(), recs, nil
}

// handleExport writes the attempt's archive (apitype.ExportLayout).
// Everything that can fail is read before the first byte is sent.
func (s *server) handleExport(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	if a.State == apitype.StateQueued || a.State == apitype.StateRunning {
		return fmt.Errorf("attempt %s is %s: export it when it has ended: %w", a.ID, a.State, errConflict)
	}
	lines, recs, err := s.storedJournal(r.Context(), a.ID)
	if err != nil {
		return err
	}
	blobs, err := s.store.BlobsFor(r.Context(), a.ID)
	if err != nil {
		return err
	}
	shas, err := journal.NamedBlobs(recs, blobs.ReadAll)
	if err != nil {
		return fmt.Errorf("attempt %s: %w", a.ID, err)
	}
	for _, sha := range shas {
		if !blobs.Has(sha) {
			return fmt.Errorf("attempt %s: blob %s is missing from the store", a.ID, sha)
		}
	}
	tr, err := s.transcript(r.Context(), a.ID)
	if err != nil {
		return err
	}
	info := apitype.TaskInfo{ID: a.Task, SHA256: a.TaskSHA256, KnownAttempts: []string{}}
	if t, err := tasks.Find(s.cfg.TasksDir, a.Task); err == nil {
		if info, err = taskInfo(t); err != nil {
			return err
		}
		if a.TaskSHA256 != "" && info.SHA256 != a.TaskSHA256 {
			// The bundle changed since: its policy is not the one that
			// graded the attempt (the signed statement has that one).
			info.SHA256, info.Allow, info.Ignore = a.TaskSHA256, nil, nil
		}
	}
	// An attempt ended by a benchd that did not sign yet has no
	// envelope: the archive goes without, and verify says so.
	envelope, err := s.store.Envelope(r.Context(), a.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	calls, err := s.store.ModelCalls(r.Context(), a.ID)
	if err != nil {
		return err
	}
	attemptJSON, _ := json.MarshalIndent(a, "", "  ")
	taskJSON, _ := json.MarshalIndent(info, "", "  ")

	mtime := time.Now().UTC()
	if a.Finished != nil {
		mtime = *a.Finished
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", a.ID+".tar"))
	tw := tar.NewWriter(w)
	put := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	werr := errors.Join(
		put(exportAttempt, append(attemptJSON, '\n')),
		put(exportTask, append(taskJSON, '\n')),
		put(exportJournal, lines),
		put(exportStdout, []byte(tr.Stdout)),
		put(exportStderr, []byte(tr.Stderr)),
	)
	if werr == nil && envelope != nil {
		werr = put(exportSigned, append(envelope, '\n'))
	}
	if werr == nil && a.Review != nil {
		reviewJSON, _ := json.MarshalIndent(a.Review, "", "  ")
		werr = put(exportReview, append(reviewJSON, '\n'))
	}
	if werr == nil && len(calls) > 0 {
		// The bytes apitype.ModelCallsSHA256 hashes, and each call's
		// messages as stored.
		werr = put(exportModel, apitype.ModelCallsJSONL(calls))
		for _, c := range calls {
			for _, resp := range []bool{false, true} {
				if werr != nil {
					break
				}
				var m []byte
				if m, werr = s.store.ModelMessage(r.Context(), a.ID, c.Seq, resp); werr == nil {
					werr = put(exportModelIn+modelgw.MessageName(c.Seq, resp), m)
				}
			}
		}
	}
	blobDir := journal.BlobsDir(exportJournal)
	for _, sha := range shas {
		if werr != nil {
			break
		}
		werr = s.putBlob(tw, blobDir+"/"+sha[:2]+"/"+sha, sha, mtime)
	}
	if werr == nil {
		werr = tw.Close()
	}
	if werr != nil {
		s.log.Warn("export cut short", "attempt", a.ID, "err", werr)
	}
	return nil
}

func (s *server) putBlob(tw *tar.Writer, name, sha string, mtime time.Time) error {
	f, err := s.store.Blobs().Open(sha)
	if err != nil {
		return err
	}
	defer f.Close()
	var size int64
	if st, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
		fi, err := st.Stat()
		if err != nil {
			return err
		}
		size = fi.Size()
	} else {
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o444, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o444, Size: size, ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// transcript returns the stored transcript; an attempt that never ran
// has an empty one.
func (s *server) transcript(ctx context.Context, id string) (apitype.Transcript, error) {
	t, err := s.store.Transcript(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		if _, gerr := s.store.GetAttempt(ctx, id); gerr != nil {
			return t, fmt.Errorf("attempt %s: %w", id, gerr)
		}
		return apitype.Transcript{}, nil
	}
	return t, err
}

// taskInfo describes a task bundle for the API.
func taskInfo(t *tasks.Task) (apitype.TaskInfo, error) {
	sha, err := bundleSHA256(t)
	if err != nil {
		return apitype.TaskInfo{}, fmt.Errorf("task %s: %w", t.ID, err)
	}
	known := make([]string, 0, len(t.Attempts))
	for _, a := range t.Attempts {
		known = append(known, a.Name)
	}
	timeout := t.AgentTimeout
	if timeout == 0 {
		timeout = apitype.DefaultTimeout
	}
	return apitype.TaskInfo{
		ID:            t.ID,
		Name:          t.Name,
		Description:   t.Description,
		Grader:        t.Grader.Kind,
		AllowInternet: t.AllowInternet,
		TimeoutSec:    int(timeout / time.Second),
		KnownAttempts: known,
		SHA256:        sha,
		Allow:         t.Policy.Allow,
		Ignore:        t.Policy.Ignore,
	}, nil
}
