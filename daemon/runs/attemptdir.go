package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"benchd.dev/fsmon/journal"
)

// AttemptDir is an attempt's work directory, STATE/attempts/ID, and the
// one place its layout is spelled:
//
//	disk.img                the attempt's disk (an ext4 image)
//	backing/                its mountpoint: the workspace, then the final tree
//	                        (both removed by DropFinalTree once the journal,
//	                        whose blobs hold the tree, is in the store)
//	mnt/                    the fsmon view while the agent runs
//	journal.jsonl (+.blobs) the journal (removed by DropJournal once
//	                        the store holds its lines and blobs)
//	stdout, stderr          the transcript
//	model.jsonl, model/     the HTTP gateways' calls (modelgw writes them)
//	grade-*                 grading copies, while grading
//
// The runner makes it; recovery, the model calls' reader, prune and
// Cleanup read it.
type AttemptDir string

// AttemptsDir is the directory of every attempt's work directory in
// stateDir.
func AttemptsDir(stateDir string) string { return filepath.Join(stateDir, "attempts") }

// AttemptDirOf is the work directory of attempt id in stateDir.
func AttemptDirOf(stateDir, id string) AttemptDir {
	return AttemptDir(filepath.Join(AttemptsDir(stateDir), id))
}

// Path is the directory itself.
func (d AttemptDir) Path() string { return string(d) }

// DiskImage is the attempt's disk image.
func (d AttemptDir) DiskImage() string { return filepath.Join(string(d), "disk.img") }

// Backing is the disk's mountpoint, the view's backing directory: the
// final tree once the agent has ended.
func (d AttemptDir) Backing() string { return filepath.Join(string(d), "backing") }

// Mount is where the view is mounted while the agent runs.
func (d AttemptDir) Mount() string { return filepath.Join(string(d), "mnt") }

// Journal is the attempt's journal (its blobs in journal.BlobsDir of it).
func (d AttemptDir) Journal() string { return filepath.Join(string(d), "journal.jsonl") }

// DropJournal removes the journal file and its blob directory, for an
// attempt whose journal the store holds: the store's copy is the one
// every reader (export, regrade, log, the viewer) uses, and the blobs
// it placed are its own links, so the attempt's state is not kept
// twice.
func (d AttemptDir) DropJournal() error {
	if err := os.Remove(d.Journal()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unable to drop the journal file: %w", err)
	}
	if err := os.RemoveAll(journal.BlobsDir(d.Journal())); err != nil {
		return fmt.Errorf("unable to drop the journal's blobs: %w", err)
	}
	return nil
}

// Stdout is the agent's standard output.
func (d AttemptDir) Stdout() string { return filepath.Join(string(d), "stdout") }

// Stderr is the agent's standard error.
func (d AttemptDir) Stderr() string { return filepath.Join(string(d), "stderr") }

// gradePrefix starts the name of a grading copy in the directory.
const gradePrefix = "grade-"
