package journal

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Change kinds of a Changeset.
const (
	Added    = "added"
	Modified = "modified"
	Deleted  = "deleted"
	Renamed  = "renamed"
)

// Change is one net change between two trees. Directories appear only
// when they were added or deleted empty-handed of files that already
// account for them; file changes are what graders look at.
type Change struct {
	Kind string `json:"kind"`           // added, modified, deleted or renamed
	Path string `json:"path"`           // the path in the final tree (the old one for deleted)
	From string `json:"from,omitempty"` // the old path of a rename
	Type string `json:"type"`           // file, dir, symlink, other
	// SHA256 is the content hash in the final tree (the old one for deleted).
	SHA256 string `json:"sha256,omitempty"`
}

// Changeset is the net change between an initial and a final tree, in
// canonical order (sorted by Path, then Kind).
type Changeset []Change

// Paths returns every path the changeset touches, old and new, sorted.
func (c Changeset) Paths() []string {
	seen := map[string]bool{}
	for _, ch := range c {
		seen[ch.Path] = true
		if ch.From != "" {
			seen[ch.From] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// String renders the canonical text form: one line per change,
// "KIND PATH" or "renamed FROM -> PATH".
func (c Changeset) String() string {
	var b strings.Builder
	for _, ch := range c {
		if ch.Kind == Renamed {
			fmt.Fprintf(&b, "%s %s -> %s\n", ch.Kind, ch.From, ch.Path)
		} else {
			fmt.Fprintf(&b, "%s %s\n", ch.Kind, ch.Path)
		}
	}
	return b.String()
}

// JSON renders the canonical JSON form (an array, never null).
func (c Changeset) JSON() []byte {
	if c == nil {
		c = Changeset{}
	}
	b, _ := json.Marshal(c)
	return b
}

// DiffTrees returns the net change from before to after. Paths for which
// ignored returns true are left out (ignored may be nil). A file deleted
// from one path and added at another with the same content is reported as
// one rename. Directories are reported only when added or deleted; a
// directory whose mode changed is reported as modified.
func DiffTrees(before, after Tree, ignored func(path string) bool) Changeset {
	skip := func(p string) bool { return ignored != nil && ignored(p) }
	var cs Changeset
	var added, deleted []Entry
	for _, p := range before.Paths() {
		if skip(p) {
			continue
		}
		b := before[p]
		a, ok := after[p]
		switch {
		case !ok:
			deleted = append(deleted, b)
		case a.Type != b.Type:
			deleted = append(deleted, b)
			added = append(added, a)
		case a.SHA256 != b.SHA256 || a.Target != b.Target || a.Mode != b.Mode:
			cs = append(cs, Change{Kind: Modified, Path: p, Type: a.Type, SHA256: a.SHA256})
		}
	}
	for _, p := range after.Paths() {
		if skip(p) {
			continue
		}
		if _, ok := before[p]; !ok {
			added = append(added, after[p])
		}
	}
	// Pair deleted and added files of equal content as renames, in path
	// order, so the result does not depend on map iteration.
	used := make([]bool, len(added))
	for _, d := range deleted {
		matched := false
		if d.Type == "file" {
			for i, a := range added {
				if !used[i] && a.Type == "file" && a.SHA256 == d.SHA256 {
					used[i] = true
					matched = true
					cs = append(cs, Change{Kind: Renamed, Path: a.Path, From: d.Path, Type: "file", SHA256: a.SHA256})
					break
				}
			}
		}
		if !matched {
			cs = append(cs, Change{Kind: Deleted, Path: d.Path, Type: d.Type, SHA256: d.SHA256})
		}
	}
	for i, a := range added {
		if !used[i] {
			cs = append(cs, Change{Kind: Added, Path: a.Path, Type: a.Type, SHA256: a.SHA256})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Path != cs[j].Path {
			return cs[i].Path < cs[j].Path
		}
		return cs[i].Kind < cs[j].Kind
	})
	return cs
}
