package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"benchd.dev/client/apitype"
)

// MaxTranscriptBytes caps each stream SaveTranscriptFiles stores; the
// sandbox caps its capture files well below it (8 MiB and a trailer).
const MaxTranscriptBytes = 16 << 20

// SaveTranscript stores the transcript of attempt attemptID, replacing
// any stored before. The attempt must exist (else ErrNotFound).
func (s *Store) SaveTranscript(ctx context.Context, attemptID string, t apitype.Transcript) error {
	err := s.writeTx(ctx, func(tx *tx) error {
		an, err := attemptN(ctx, tx, attemptID)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO transcripts (attempt, stdout, stderr, stdout_truncated, stderr_truncated)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (attempt) DO UPDATE SET stdout = excluded.stdout, stderr = excluded.stderr,
	stdout_truncated = excluded.stdout_truncated, stderr_truncated = excluded.stderr_truncated`,
			an, []byte(t.Stdout), []byte(t.Stderr), t.StdoutTruncated, t.StderrTruncated)
		return err
	})
	if err != nil {
		return fmt.Errorf("unable to save the transcript of attempt %s: %w", attemptID, err)
	}
	return nil
}

// SaveTranscriptFiles stores the capture files stdoutPath and stderrPath
// as the transcript of attempt attemptID. A path that is empty or does
// not exist is an empty stream (the agent never ran). truncated says
// whether the capture of each stream passed its cap (the sandbox's
// Output.Truncated); a file longer than MaxTranscriptBytes is cut there
// and marked truncated too.
func (s *Store) SaveTranscriptFiles(ctx context.Context, attemptID, stdoutPath, stderrPath string, stdoutTruncated, stderrTruncated bool) error {
	var t apitype.Transcript
	var err error
	if t.Stdout, t.StdoutTruncated, err = readCapped(stdoutPath); err != nil {
		return fmt.Errorf("unable to save the transcript of attempt %s: %w", attemptID, err)
	}
	if t.Stderr, t.StderrTruncated, err = readCapped(stderrPath); err != nil {
		return fmt.Errorf("unable to save the transcript of attempt %s: %w", attemptID, err)
	}
	t.StdoutTruncated = t.StdoutTruncated || stdoutTruncated
	t.StderrTruncated = t.StderrTruncated || stderrTruncated
	return s.SaveTranscript(ctx, attemptID, t)
}

// readCapped reads up to MaxTranscriptBytes of the file at path and
// reports whether there was more.
func readCapped(path string) (string, bool, error) {
	if path == "" {
		return "", false, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxTranscriptBytes+1))
	if err != nil {
		return "", false, fmt.Errorf("unable to read %s: %w", path, err)
	}
	if len(b) > MaxTranscriptBytes {
		return string(b[:MaxTranscriptBytes]), true, nil
	}
	return string(b), false, nil
}

// Transcript returns the transcript of attempt attemptID, or an error
// matching ErrNotFound when the attempt or its transcript does not exist.
func (s *Store) Transcript(ctx context.Context, attemptID string) (apitype.Transcript, error) {
	var (
		t              apitype.Transcript
		stdout, stderr []byte
	)
	err := s.r.QueryRowContext(ctx, `SELECT t.stdout, t.stderr, t.stdout_truncated, t.stderr_truncated
FROM transcripts t JOIN attempts a ON a.n = t.attempt WHERE a.id = ?`, attemptID).
		Scan(&stdout, &stderr, &t.StdoutTruncated, &t.StderrTruncated)
	if err != nil {
		return apitype.Transcript{}, fmt.Errorf("unable to get the transcript of attempt %s: %w", attemptID, translate(err))
	}
	t.Stdout, t.Stderr = string(stdout), string(stderr)
	return t, nil
}
