package daemon

import (
	"context"
	"encoding/json"
	"os"
	"slices"

	"benchd.dev/daemon/runs"
	"benchd.dev/fsmon/journal"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

// saveTranscript stores the agent's captured output of an attempt.
func (s *server) saveTranscript(ctx context.Context, id string, out runs.Outcome) error {
	return s.store.SaveTranscriptFiles(ctx, id, out.StdoutPath, out.StderrPath,
		capped(out.StdoutPath), capped(out.StderrPath))
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

// bundleSHA256 hashes a task bundle: the SHA-256 of its manifest.
func bundleSHA256(t *tasks.Task) (string, error) {
	tree, err := journal.ScanTree(t.Dir)
	if err != nil {
		return "", err
	}
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	entries := make([]journal.Entry, 0, len(paths))
	for _, p := range paths {
		entries = append(entries, tree[p])
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return "", err
	}
	return journal.HashBytes(b), nil
}
