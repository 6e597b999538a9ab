package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
	"benchd.dev/forensics"
	"benchd.dev/fsmon/journal"
	"benchd.dev/tasks"
)

// exportData is what an archive holds, read before its first byte is
// sent; the journal, the model calls' messages and the blobs are
// streamed from the store as they are written, so that an export's
// memory does not grow with the journal (only with the number of blobs
// it names, 32 bytes each: journal.BlobNames).
type exportData struct {
	a           apitype.Attempt
	info        apitype.TaskInfo
	journalSize int64              // bytes of the journal's lines
	shas        *journal.BlobNames // the blobs it names
	tr          apitype.Transcript
	envelope    []byte // nil for an attempt ended before benchd signed
	calls       []apitype.ModelCall
}

// scanJournal reads the stored journal of attempt id as a stream: its
// size in bytes and the blobs it names (journal.BlobNames, with
// manifest reading the manifests). Neither its lines nor its records
// are held.
func (s *server) scanJournal(ctx context.Context, id string, manifest func(string) ([]byte, error)) (int64, *journal.BlobNames, error) {
	names := new(journal.BlobNames)
	n, err := s.eachStoredRecord(ctx, id, func(rec journal.Record) error { return names.Add(rec, manifest) })
	if err != nil {
		return 0, nil, err
	}
	return n, names, nil
}

// eachStoredRecord calls fn with each record of attempt id's stored
// journal in turn, as the store streams its lines, and returns the
// journal's size in bytes: memory does not grow with the journal. fn's
// error stops the stream and is returned.
func (s *server) eachStoredRecord(ctx context.Context, id string, fn func(journal.Record) error) (int64, error) {
	pr, pw := io.Pipe()
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		cw := &countingWriter{w: pw}
		err := s.store.JournalLines(ctx, id, cw)
		pw.CloseWithError(err)
		done <- result{cw.n, err}
	}()
	rd := journal.NewReader(pr)
	var err error
	for err == nil {
		var rec journal.Record
		if rec, err = rd.Next(); err == nil {
			err = fn(rec)
		}
	}
	pr.CloseWithError(err) // the writer stops, if it has not
	res := <-done
	switch {
	case res.err != nil:
		return 0, fmt.Errorf("journal of attempt %s: %w", id, res.err)
	case errors.As(err, new(*journal.ParseError)):
		return 0, fmt.Errorf("stored journal of attempt %s is corrupt: %w", id, err)
	case err != io.EOF:
		return 0, fmt.Errorf("attempt %s: %w", id, err)
	}
	return res.n, nil
}

// handleExport writes the attempt's archive (forensics' layout).
// Everything that can fail is read before the first byte is sent.
func (s *server) handleExport(w http.ResponseWriter, r *http.Request) error {
	a, err := s.getAttempt(r)
	if err != nil {
		return err
	}
	if a.State == apitype.StateQueued || a.State == apitype.StateRunning {
		return fmt.Errorf("attempt %s is %s: export it when it has ended: %w", a.ID, a.State, errConflict)
	}
	d, err := s.readExport(r.Context(), a)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", a.ID+".tar"))
	if err := s.writeExport(r.Context(), w, d); err != nil {
		s.log.Warn("export cut short", "attempt", a.ID, "err", err)
	}
	return nil
}

// readExport reads what the archive of a holds, checking that every
// blob its journal names is in the store.
func (s *server) readExport(ctx context.Context, a apitype.Attempt) (*exportData, error) {
	d := &exportData{a: a}
	blobs, err := s.store.BlobsFor(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	if d.journalSize, d.shas, err = s.scanJournal(ctx, a.ID, blobs.ReadAll); err != nil {
		return nil, err
	}
	err = d.shas.Each(func(sha string) error {
		if !blobs.Has(sha) {
			return fmt.Errorf("attempt %s: blob %s is missing from the store", a.ID, sha)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if d.tr, err = s.transcript(ctx, a.ID); err != nil {
		return nil, err
	}
	d.info = apitype.TaskInfo{ID: a.Task, SHA256: a.TaskSHA256, KnownAttempts: []string{}}
	if t, err := tasks.Find(s.cfg.TasksDir, a.Task); err == nil {
		if d.info, err = taskInfo(t); err != nil {
			return nil, err
		}
		if a.TaskSHA256 != "" && d.info.SHA256 != a.TaskSHA256 {
			// The bundle changed since: its policy is not the one that
			// graded the attempt (the signed statement has that one).
			d.info.SHA256, d.info.Allow, d.info.Ignore = a.TaskSHA256, nil, nil
		}
	}
	// An attempt ended by a benchd that did not sign yet has no
	// envelope: the archive goes without, and verify says so.
	if d.envelope, err = s.store.Envelope(ctx, a.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if d.calls, err = s.store.ModelCalls(ctx, a.ID); err != nil {
		return nil, err
	}
	return d, nil
}

// writeExport writes the archive of d to w. An error cuts it short.
func (s *server) writeExport(ctx context.Context, w io.Writer, d *exportData) error {
	mtime := time.Now().UTC()
	if d.a.Finished != nil {
		mtime = *d.a.Finished
	}
	fw := forensics.NewWriter(w, mtime)
	err := errors.Join(
		fw.PutJSON(forensics.AttemptFile, d.a),
		fw.PutJSON(forensics.TaskFile, d.info),
		fw.PutStream(forensics.JournalFile, d.journalSize, func(w io.Writer) error {
			return s.store.JournalLines(ctx, d.a.ID, w)
		}),
		fw.Put(forensics.StdoutFile, []byte(d.tr.Stdout)),
		fw.Put(forensics.StderrFile, []byte(d.tr.Stderr)),
	)
	if err == nil && d.envelope != nil {
		err = fw.Put(forensics.SignedFile, append(d.envelope, '\n'))
	}
	if err == nil && d.a.Review != nil {
		err = fw.PutJSON(forensics.ReviewFile, d.a.Review)
	}
	if err == nil && len(d.calls) > 0 {
		// The bytes apitype.ModelCallsSHA256 hashes, and each call's
		// messages as stored.
		err = fw.Put(forensics.ModelFile, apitype.ModelCallsJSONL(d.calls))
		for _, c := range d.calls {
			for _, resp := range []bool{false, true} {
				if err != nil {
					return err
				}
				var m []byte
				if m, err = s.store.ModelMessage(ctx, d.a.ID, c.Seq, resp); err == nil {
					err = fw.Put(forensics.ModelMessageFile(c.Seq, resp), m)
				}
			}
		}
	}
	if err == nil {
		err = d.shas.Each(func(sha string) error { return s.putBlob(fw, sha) })
	}
	if err != nil {
		return err
	}
	return fw.Close()
}

func (s *server) putBlob(fw *forensics.Writer, sha string) error {
	f, err := s.store.Blobs().Open(sha)
	if err != nil {
		return err
	}
	defer f.Close()
	return fw.PutBlob(sha, f)
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
