package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ErrReplay is returned when a journal's records cannot be applied to the
// tree they start from (an unlink of a path that is not there, a create
// in a directory that does not exist...): the journal is inconsistent.
var ErrReplay = errors.New("journal does not replay")

// EmptySHA256 is the hash of empty content.
const EmptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Flags bits the replay looks at (Linux values, the platform fsmon runs
// on; the journal is read anywhere).
const (
	flagOTrunc         = 0o1000 // open(2) O_TRUNC
	flagRenameExchange = 1 << 1 // renameat2(2) RENAME_EXCHANGE
	modeTypeMask       = 0o170000
	modeTypeRegular    = 0o100000
)

// inode is a regular file's content and mode, shared by its hard links.
type inode struct {
	sha   string
	size  int64
	mode  fs.FileMode
	stale bool // written since its content was last known
}

// node is one path of a replayed tree.
type node struct {
	typ    string // file, dir, symlink, other
	mode   fs.FileMode
	target string
	ino    *inode // files only
}

// replayState is a tree during replay, with hard links modeled.
type replayState map[string]*node

func stateOf(t Tree) replayState {
	s := make(replayState, len(t))
	for p, e := range t {
		n := &node{typ: e.Type, mode: e.Mode, target: e.Target}
		if e.Type == "file" {
			n.ino = &inode{sha: e.SHA256, size: e.Size, mode: e.Mode}
		}
		s[p] = n
	}
	return s
}

func (s replayState) tree() Tree {
	t := make(Tree, len(s))
	for p, n := range s {
		e := Entry{Path: p, Type: n.typ, Mode: n.mode, Target: n.target}
		if n.ino != nil {
			e.Mode, e.SHA256, e.Size = n.ino.mode, n.ino.sha, n.ino.size
		}
		t[p] = e
	}
	return t
}

// ReplayTree returns the tree as it stood after record upTo: 0 (or 1, the
// mount) is the initial tree, the unmount record's Seq or more the final
// tree (for a journal cut short, the tree after its last record). See the
// package doc, "Replay", for what each operation does and for content
// that is not known yet at upTo. blobs must hold the manifests.
func ReplayTree(recs []Record, blobs *Blobs, upTo uint64) (Tree, error) {
	s, final, err := replay(recs, blobs, upTo)
	if err != nil {
		return nil, err
	}
	if final != nil {
		return final, nil
	}
	return s.tree(), nil
}

// replay applies recs up to upTo. It returns the final manifest instead
// of the state when upTo reaches the unmount record.
func replay(recs []Record, blobs *Blobs, upTo uint64) (replayState, Tree, error) {
	if len(recs) == 0 || recs[0].Op != OpMount {
		return nil, nil, fmt.Errorf("%w: the journal does not start with a mount record", ErrReplay)
	}
	if blobs == nil {
		return nil, nil, fmt.Errorf("%w: no blob store to read the manifests from", ErrReplay)
	}
	initial, err := loadManifest(blobs, recs[0].SHA256)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to read the initial manifest: %w", err)
	}
	s := stateOf(initial)
	for _, r := range recs[1:] {
		if r.Seq > upTo {
			break
		}
		if r.Op == OpUnmount {
			final, err := loadManifest(blobs, r.SHA256)
			if err != nil {
				return nil, nil, fmt.Errorf("unable to read the final manifest: %w", err)
			}
			return nil, final, nil
		}
		// A release is an observation of content, not an operation the
		// policy could refuse: it applies whatever its decision says.
		if r.Result != "ok" || r.Decision == Denied && r.Op != OpRelease {
			continue
		}
		if err := s.apply(r); err != nil {
			return nil, nil, fmt.Errorf("%w: record %d (%s %s): %w", ErrReplay, r.Seq, r.Op, r.Path, err)
		}
	}
	return s, nil, nil
}

// unnamedOp holds the operations that act on an open file, and so may
// be recorded for a file that has no name left (empty Path).
var unnamedOp = map[Op]bool{OpWrite: true, OpFallocate: true, OpCopyFileRange: true, OpTruncate: true, OpRelease: true}

// isRoot reports whether p names the workspace root, which the tree does
// not hold.
func isRoot(p string) bool { return p == "" || p == "." }

// parentDir checks that p is a valid path whose parent is a directory.
func (s replayState) parentDir(p string) error {
	if err := checkPath(p); err != nil {
		return err
	}
	if d := path.Dir(p); d != "." {
		if n := s[d]; n == nil || n.typ != "dir" {
			return fmt.Errorf("parent %s is not a directory", d)
		}
	}
	return nil
}

// newNode checks that p can be created and adds n there.
func (s replayState) newNode(p string, n *node) error {
	if err := s.parentDir(p); err != nil {
		return err
	}
	if s[p] != nil {
		return fmt.Errorf("%s exists already", p)
	}
	s[p] = n
	return nil
}

// file returns the file at p.
func (s replayState) file(p string) (*inode, error) {
	n := s[p]
	if n == nil {
		return nil, fmt.Errorf("no such path %q", p)
	}
	if n.ino == nil {
		return nil, fmt.Errorf("%s is a %s, not a file", p, n.typ)
	}
	return n.ino, nil
}

// below returns the paths strictly below directory p, sorted.
func (s replayState) below(p string) []string {
	var out []string
	prefix := p + "/"
	for q := range s {
		if strings.HasPrefix(q, prefix) {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

// apply changes the tree as the successful operation r did.
func (s replayState) apply(r Record) error {
	perm := fs.FileMode(r.Mode) & fs.ModePerm
	if r.Path == "" && unnamedOp[r.Op] {
		// A file whose every name was removed while it was open: the
		// view refuses to name it again, so nothing it does shows in
		// the tree.
		return nil
	}
	switch r.Op {
	case OpCreate:
		if n := s[r.Path]; n != nil && n.ino != nil {
			// Opened an existing file (O_CREAT without O_EXCL).
			if r.Flags&flagOTrunc != 0 {
				*n.ino = inode{sha: EmptySHA256, mode: n.ino.mode}
			}
			return nil
		}
		return s.newNode(r.Path, &node{typ: "file", ino: &inode{sha: EmptySHA256, mode: perm}})
	case OpMknod:
		if r.Mode&modeTypeMask == 0 || r.Mode&modeTypeMask == modeTypeRegular {
			return s.newNode(r.Path, &node{typ: "file", ino: &inode{sha: EmptySHA256, mode: perm}})
		}
		return s.newNode(r.Path, &node{typ: "other", mode: perm})
	case OpMkdir:
		return s.newNode(r.Path, &node{typ: "dir", mode: perm})
	case OpSymlink:
		if r.Target == "" {
			return errors.New("symlink without a target")
		}
		return s.newNode(r.Path, &node{typ: "symlink", mode: fs.ModePerm, target: r.Target})
	case OpLink:
		old := s[r.Path]
		if old == nil {
			return fmt.Errorf("no such path %q", r.Path)
		}
		if old.typ == "dir" {
			return fmt.Errorf("%s is a directory", r.Path)
		}
		n := *old // a file's copy shares its inode
		return s.newNode(r.Path2, &n)
	case OpRename:
		return s.rename(r.Path, r.Path2, r.Flags&flagRenameExchange != 0)
	case OpUnlink:
		n := s[r.Path]
		if n == nil {
			return fmt.Errorf("no such path %q", r.Path)
		}
		if n.typ == "dir" {
			return fmt.Errorf("%s is a directory", r.Path)
		}
		delete(s, r.Path)
	case OpRmdir:
		n := s[r.Path]
		if n == nil || n.typ != "dir" {
			return fmt.Errorf("no directory %q", r.Path)
		}
		if len(s.below(r.Path)) > 0 {
			return fmt.Errorf("directory %s is not empty", r.Path)
		}
		delete(s, r.Path)
	case OpOpen:
		ino, err := s.file(r.Path)
		if err != nil {
			return err
		}
		if r.Flags&flagOTrunc != 0 {
			*ino = inode{sha: EmptySHA256, mode: ino.mode}
		}
	case OpTruncate:
		ino, err := s.file(r.Path)
		if err != nil {
			return err
		}
		switch {
		case r.Size == 0:
			*ino = inode{sha: EmptySHA256, mode: ino.mode}
		case r.SHA256 != "":
			// A truncate by path: the record holds what it left.
			ino.sha, ino.size, ino.stale = r.SHA256, r.Size, false
		default:
			ino.size, ino.stale = r.Size, true
		}
	case OpWrite, OpFallocate, OpCopyFileRange:
		ino, err := s.file(r.Path)
		if err != nil {
			return err
		}
		ino.stale = true
	case OpRelease:
		// The file may have been removed (or renamed) while open: its
		// content then no longer belongs to any path of the tree.
		if n := s[r.Path]; n != nil && n.ino != nil && r.SHA256 != "" {
			n.ino.sha, n.ino.size, n.ino.stale = r.SHA256, r.Size, false
		}
	case OpChmod:
		if isRoot(r.Path) {
			return nil
		}
		n := s[r.Path]
		switch {
		case n == nil:
			return fmt.Errorf("no such path %q", r.Path)
		case n.ino != nil:
			n.ino.mode = perm
		case n.typ != "symlink": // a symlink's mode is always 0777
			n.mode = perm
		}
	case OpChown, OpUtimens, OpSetxattr, OpRemovexattr:
		// Owners, times and extended attributes are not part of a tree.
	case OpInterrupted, OpCap:
		// Say why the attempt ended early, or which cap refused an
		// operation; they change nothing.
	case OpMount:
		return errors.New("mount record after record 1")
	default:
		return fmt.Errorf("unknown operation %q", r.Op)
	}
	return nil
}

// rename moves from (and everything below it) to to, replacing what is
// there, or swaps the two when exchange is set.
func (s replayState) rename(from, to string, exchange bool) error {
	src := s[from]
	if src == nil {
		return fmt.Errorf("no such path %q", from)
	}
	if err := s.parentDir(to); err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if strings.HasPrefix(to, from+"/") || (exchange && strings.HasPrefix(from, to+"/")) {
		return fmt.Errorf("cannot move %s below itself", from)
	}
	dst := s[to]
	if exchange {
		if dst == nil {
			return fmt.Errorf("exchange with missing %q", to)
		}
		const tmp = "\x00exchange" // not a valid path: cannot collide
		s.move(to, tmp)
		s.move(from, to)
		s.move(tmp, from)
		return nil
	}
	if dst != nil {
		switch {
		case src.ino != nil && src.ino == dst.ino:
			return nil // two links to one file: rename(2) does nothing
		case dst.typ == "dir" && src.typ != "dir":
			return fmt.Errorf("cannot replace directory %s with a %s", to, src.typ)
		case dst.typ != "dir" && src.typ == "dir":
			return fmt.Errorf("cannot replace %s %s with a directory", dst.typ, to)
		case dst.typ == "dir" && len(s.below(to)) > 0:
			return fmt.Errorf("directory %s is not empty", to)
		}
		delete(s, to)
	}
	s.move(from, to)
	return nil
}

// move renames from and everything below it to to (which is free).
func (s replayState) move(from, to string) {
	below := s.below(from)
	s[to] = s[from]
	delete(s, from)
	for _, q := range below {
		s[to+strings.TrimPrefix(q, from)] = s[q]
		delete(s, q)
	}
}

// Replay materializes the tree as it stood after record upTo (as
// ReplayTree computes it) in dst, which must be an empty directory or not
// exist, from the blob store. Hard links made by link records are hard
// links in dst. A file whose content is not known at upTo (written or
// truncated since its last release) gets its last known content. Paths of
// type "other" (devices, fifos, sockets) are left out. Owners and times
// are not restored.
func Replay(recs []Record, blobs *Blobs, upTo uint64, dst string) error {
	s, final, err := replay(recs, blobs, upTo)
	if err != nil {
		return err
	}
	if final != nil {
		s = stateOf(final)
	}
	return materialize(s, blobs, dst)
}

// ReplayManifest materializes the tree of manifest blob sha (the final
// tree of a journal is its unmount record's SHA256) in dst as Replay
// does, without the records: what Replay of a whole journal makes, for
// a caller that streams the records to find the unmount record rather
// than hold them all.
func ReplayManifest(blobs *Blobs, sha string, dst string) error {
	t, err := loadManifest(blobs, sha)
	if err != nil {
		return fmt.Errorf("unable to read manifest %s: %w", sha, err)
	}
	return materialize(stateOf(t), blobs, dst)
}

// materialize writes the tree of state s in dst from the blob store.
func materialize(s replayState, blobs *Blobs, dst string) error {
	if err := emptyDir(dst); err != nil {
		return err
	}
	// Every path is made relative to dst's descriptor, so that a tree
	// whose paths are near PATH_MAX replays too.
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("unable to replay into %s: %w", dst, err)
	}
	defer root.Close()
	paths := make([]string, 0, len(s))
	for p := range s {
		paths = append(paths, p)
	}
	sort.Strings(paths) // parents first
	written := map[*inode]string{}
	var dirs []string
	for _, p := range paths {
		n := s[p]
		fp := filepath.FromSlash(p)
		switch n.typ {
		case "dir":
			err = root.Mkdir(fp, 0o700) // its mode is set once it is filled
			dirs = append(dirs, p)
		case "symlink":
			err = root.Symlink(n.target, fp)
		case "file":
			if first, ok := written[n.ino]; ok {
				err = root.Link(first, fp)
			} else {
				err = writeBlob(blobs, n.ino.sha, root, fp, n.ino.mode)
				written[n.ino] = fp
			}
		}
		if err != nil {
			return fmt.Errorf("unable to replay %s: %w", p, err)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		p := dirs[i]
		if err := root.Chmod(filepath.FromSlash(p), s[p].mode); err != nil {
			return fmt.Errorf("unable to replay %s: %w", p, err)
		}
	}
	return nil
}

// emptyDir makes sure dir is an empty directory.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return os.Mkdir(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("unable to replay into %s: %w", dir, err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("unable to replay into %s: not empty", dir)
	}
	return nil
}

// writeBlob creates the file fp of root (which must not exist) with the
// content of blob sha, checked against its hash, and mode.
func writeBlob(blobs *Blobs, sha string, root *os.Root, fp string, mode fs.FileMode) error {
	rc, err := blobs.Open(sha)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := root.OpenFile(fp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = copySparse(f, rc.(*os.File), h) // holes of the blob stay holes
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("blob %s: %w (content hashes to %s)", sha, ErrBlobCorrupt, got)
	}
	return root.Chmod(fp, mode)
}

// VerifyReplay checks that replaying the journal up to the record before
// its unmount gives the final manifest: the same paths with the same
// types, modes, content hashes and link targets. This proves that the
// journal accounts for every change between the initial and the final
// tree. The error names the first differing path.
func VerifyReplay(recs []Record, blobs *Blobs) error {
	if len(recs) == 0 {
		return &VerifyError{Seq: 1, Line: 1, Reason: "missing: the journal is empty"}
	}
	last := recs[len(recs)-1]
	if last.Op != OpUnmount {
		return &VerifyError{Seq: last.Seq + 1, Line: len(recs) + 1, Reason: "missing: no unmount record, so no final tree to compare with"}
	}
	got, err := ReplayTree(recs, blobs, last.Seq-1)
	if err != nil {
		return err
	}
	want, err := loadManifest(blobs, last.SHA256)
	if err != nil {
		return fmt.Errorf("unable to read the final manifest: %w", err)
	}
	if p, reason := firstDifference(got, want); p != "" {
		return &VerifyError{Seq: last.Seq, Line: len(recs),
			Reason: fmt.Sprintf("the replayed tree differs from the final manifest at %s: %s", p, reason)}
	}
	return nil
}

// firstDifference returns the first path, in sorted order, at which got
// and want differ, and how.
func firstDifference(got, want Tree) (string, string) {
	all := Tree{}
	for p := range got {
		all[p] = Entry{}
	}
	for p := range want {
		all[p] = Entry{}
	}
	for _, p := range all.Paths() {
		g, gok := got[p]
		w, wok := want[p]
		switch {
		case !gok:
			return p, fmt.Sprintf("missing from the replay (a %s in the manifest)", w.Type)
		case !wok:
			return p, fmt.Sprintf("a %s in the replay, not in the manifest", g.Type)
		case g.Type != w.Type:
			return p, fmt.Sprintf("a %s in the replay, a %s in the manifest", g.Type, w.Type)
		case g.SHA256 != w.SHA256:
			return p, fmt.Sprintf("content %s in the replay, %s in the manifest", g.SHA256, w.SHA256)
		case g.Mode != w.Mode:
			return p, fmt.Sprintf("mode %#o in the replay, %#o in the manifest", uint32(g.Mode), uint32(w.Mode))
		case g.Target != w.Target:
			return p, fmt.Sprintf("target %q in the replay, %q in the manifest", g.Target, w.Target)
		}
	}
	return "", ""
}

// ChangesetOf returns the journal's changeset: DiffTrees of the initial
// (mount) and final (unmount) manifests, leaving out paths the policy
// ignores. It needs the unmount record: a journal cut short has no final
// tree.
func ChangesetOf(recs []Record, blobs *Blobs, p Policy) (Changeset, error) {
	if len(recs) == 0 || recs[0].Op != OpMount {
		return nil, errors.New("unable to compute the changeset: the journal does not start with a mount record")
	}
	last := recs[len(recs)-1]
	if last.Op != OpUnmount {
		return nil, errors.New("unable to compute the changeset: the journal has no unmount record")
	}
	if blobs == nil {
		return nil, errors.New("unable to compute the changeset: no blob store to read the manifests from")
	}
	before, err := loadManifest(blobs, recs[0].SHA256)
	if err != nil {
		return nil, fmt.Errorf("unable to read the initial manifest: %w", err)
	}
	after, err := loadManifest(blobs, last.SHA256)
	if err != nil {
		return nil, fmt.Errorf("unable to read the final manifest: %w", err)
	}
	return DiffTrees(before, after, p.IsIgnored), nil
}
