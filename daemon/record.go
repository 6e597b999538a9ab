package daemon

import (
	"context"
	"os"

	"benchd.dev/daemon/runs"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

// saveTranscript stores the agent's captured output of an attempt,
// scrubbed with sc first (the capture files too, in place): nothing is
// stored unscrubbed.
func (s *server) saveTranscript(ctx context.Context, id string, out runs.Outcome, sc scrubber) error {
	outCapped, errCapped := capped(out.StdoutPath), capped(out.StderrPath)
	for _, p := range []string{out.StdoutPath, out.StderrPath} {
		if err := sc.file(p); err != nil {
			return err
		}
	}
	return s.store.SaveTranscriptFiles(ctx, id, out.StdoutPath, out.StderrPath, outCapped, errCapped)
}

// capped reports whether a capture file ends with the sandbox's trailer,
// which it appends when the stream passed its cap (the agent runs with
// the default cap).
func capped(path string) bool {
	trailer := sandbox.Trailer(sandbox.DefaultOutputCap)
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < int64(len(trailer)) {
		return false
	}
	buf := make([]byte, len(trailer))
	if _, err := f.ReadAt(buf, fi.Size()-int64(len(trailer))); err != nil {
		return false
	}
	return string(buf) == trailer
}

// bundleSHA256 identifies a task bundle (tasks.Task.BundleSHA256).
func bundleSHA256(t *tasks.Task) (string, error) { return t.BundleSHA256() }
