package graders

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"benchd.dev/fsmon/journal"
	"benchd.dev/reason"
	"benchd.dev/tasks"
)

// Reason codes of the tree check (checkTree): what the agent left in its
// workspace that no grader may copy or read.
const (
	CodeUnsafeLink  = reason.UnsafeLink  // a symbolic link outside the ignored paths, or one leaving the tree anywhere
	CodeSpecialFile = reason.SpecialFile // a FIFO, socket or device, ignored paths included
	CodeTreeLimits  = reason.TreeLimits  // too many entries, a path too long or a chain of directories too deep
)

// Limits of a finished workspace. A tree beyond one of them fails with
// tree_limits; the walk never goes deeper or further, so a directory
// chain longer than PATH_MAX is refused, not an error.
const (
	MaxTreeEntries = 100_000 // files, directories and links, ignored paths included
	MaxTreeDepth   = 64      // directories below the workspace's top
	MaxTreePath    = 1024    // bytes of a path relative to the workspace
)

// maxTreeEntries is MaxTreeEntries; tests lower it.
var maxTreeEntries = MaxTreeEntries

// treeEntry is a directory or regular file a grading copy holds.
type treeEntry struct {
	rel  string // slash-separated, relative to the tree's root
	dir  bool
	perm fs.FileMode
}

// treeCheck is what checkTree found.
type treeCheck struct {
	unsafe, special []string // slash paths
	limits          []string // what was beyond which limit
	entries         []treeEntry
	count           int
}

// errTreeStop ends a walk that passed MaxTreeEntries.
var errTreeStop = errors.New("tree walk stopped")

// checkTree walks the finished workspace root without following any
// symbolic link and says what fails the tree rules, and what a grading
// copy holds: every directory and regular file outside the policy's
// ignored paths. It is the one place that decides:
//
//   - a symbolic link outside the ignored paths is unsafe_link, wherever
//     it points (graders read every path that is not ignored: a link
//     inside the tree would be followed by the graded code, so links are
//     refused rather than copied); one inside an ignored path is left
//     out of the copy, unless it leaves the tree (absolute, or ".."
//     escaping), which is unsafe_link too;
//   - a FIFO, socket or device anywhere, ignored paths included, is
//     special_file;
//   - more than MaxTreeEntries entries, a relative path longer than
//     MaxTreePath or directories more than MaxTreeDepth deep are
//     tree_limits; the walk does not go past them.
//
// Ignored directories are walked (for special files and limits) but not
// copied. An error is an infra error: the tree could not be read.
func checkTree(root string, p journal.Policy) (*treeCheck, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, infraf("workspace %q: %v", root, err)
	}
	if !fi.IsDir() {
		return nil, infraf("workspace %q is not a directory", root)
	}
	tc := &treeCheck{}
	if err := tc.walk(root, "", 0, p); err != nil && !errors.Is(err, errTreeStop) {
		return nil, infraf("reading the workspace: %v", err)
	}
	return tc, nil
}

func (tc *treeCheck) walk(abs, rel string, depth int, p journal.Policy) error {
	ents, err := os.ReadDir(abs)
	if err != nil {
		return err
	}
	for _, e := range ents {
		r := path.Join(rel, e.Name())
		if rel == "" {
			r = e.Name()
		}
		tc.count++
		if tc.count > maxTreeEntries {
			tc.limits = append(tc.limits, fmt.Sprintf("more than %d entries", maxTreeEntries))
			return errTreeStop
		}
		if len(r) > MaxTreePath {
			tc.limits = append(tc.limits, fmt.Sprintf("a path longer than %d bytes (%s...)", MaxTreePath, truncate(r, 60)))
			continue
		}
		ignored := p.IsIgnored(r)
		child := filepath.Join(abs, e.Name())
		t := e.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(child)
			if err != nil {
				return err
			}
			if !ignored || linkEscapes(r, target) {
				tc.unsafe = append(tc.unsafe, r)
			}
		case t.IsDir():
			if depth+1 > MaxTreeDepth {
				tc.limits = append(tc.limits, fmt.Sprintf("directories more than %d deep (%s...)", MaxTreeDepth, truncate(r, 60)))
				continue
			}
			if !ignored {
				tc.entries = append(tc.entries, treeEntry{rel: r, dir: true, perm: 0o755})
			}
			if err := tc.walk(child, r, depth+1, p); err != nil {
				return err
			}
		case t.IsRegular():
			if ignored {
				continue
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			tc.entries = append(tc.entries, treeEntry{rel: r, perm: info.Mode().Perm()})
		default:
			tc.special = append(tc.special, r)
		}
	}
	return nil
}

// linkEscapes reports whether a symbolic link at rel with target leaves
// the tree: an absolute target, or a relative one climbing above the top.
func linkEscapes(rel, target string) bool {
	if target == "" || path.IsAbs(target) {
		return true
	}
	j := path.Join(path.Dir(rel), target)
	return j == ".." || strings.HasPrefix(j, "../")
}

// Reasons are the tree rules the check found broken, one per code.
func (tc *treeCheck) Reasons() []Reason {
	var out []Reason
	if len(tc.unsafe) > 0 {
		out = append(out, Reason{Code: CodeUnsafeLink, Message: fmt.Sprintf("the workspace holds %d symbolic link(s) graders may not follow (links are refused outside the ignored paths, and anywhere when they leave the tree): %s",
			len(tc.unsafe), shortList(tc.unsafe, 5))})
	}
	if len(tc.special) > 0 {
		out = append(out, Reason{Code: CodeSpecialFile, Message: fmt.Sprintf("the workspace holds %d FIFO(s), socket(s) or device(s): %s", len(tc.special), shortList(tc.special, 5))})
	}
	if len(tc.limits) > 0 {
		out = append(out, Reason{Code: CodeTreeLimits, Message: fmt.Sprintf("the workspace is beyond the tree limits (%d entries, %d directories deep, %d-byte paths): %s",
			maxTreeEntries, MaxTreeDepth, MaxTreePath, shortList(tc.limits, 3))})
	}
	return out
}

// copyTo copies the entries of a checked tree from root to dst (made if
// missing). Regular files are opened without following a link and must
// still be regular files.
func (tc *treeCheck) copyTo(root, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range tc.entries {
		target := filepath.Join(dst, filepath.FromSlash(e.rel))
		if e.dir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := copyNoFollow(filepath.Join(root, filepath.FromSlash(e.rel)), target, e.perm|0o444); err != nil {
			return err
		}
	}
	return nil
}

// copyNoFollow copies the regular file src to dst (replaced, never
// written through), refusing a src that is not a regular file.
func copyNoFollow(src, dst string, perm fs.FileMode) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return tasks.WriteNew(dst, in, perm)
}

// CopyWorkspace copies a finished workspace src to dst for grading, as
// every grader copies it (checkTree decides): no symbolic link is
// followed or copied, the policy's ignored paths are left out, and only
// directories and regular files are copied. It returns the reasons the
// tree fails (unsafe_link, special_file, tree_limits); pass them as
// Input.TreeReasons when grading dst, so that the verdict fails with
// them. An error is an infra error only.
func CopyWorkspace(src, dst string, p journal.Policy) ([]Reason, error) {
	tc, err := checkTree(src, p)
	if err != nil {
		return nil, err
	}
	if err := tc.copyTo(src, dst); err != nil {
		return nil, infraf("copying the workspace: %v", err)
	}
	return tc.Reasons(), nil
}
