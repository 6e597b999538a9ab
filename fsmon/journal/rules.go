package journal

import (
	"fmt"
	"strings"
)

// Counts are what a journal says of an attempt's work on the workspace:
// Edits, the operations the view performed (allowed or ignored), and
// Denied, the operations the edit policy refused. The view's own
// bookkeeping (mount, unmount and interrupted records) and cap records
// (an operation a cap refused, not the policy) are neither. The view
// counts its records with Add as it appends them, start-up recovery and
// benchctl verify count a stored journal with CountsOf: one rule.
type Counts struct {
	Edits  int64 `json:"edits"`
	Denied int64 `json:"denied"`
}

// Add counts one record.
func (c *Counts) Add(r Record) {
	switch {
	case r.Op == OpMount || r.Op == OpUnmount || r.Op == OpInterrupted || r.Op == OpCap:
	case r.Decision == Denied:
		c.Denied++
	default:
		c.Edits++
	}
}

// CountsOf counts the records of a journal.
func CountsOf(recs []Record) Counts {
	var c Counts
	for _, r := range recs {
		c.Add(r)
	}
	return c
}

// Violations is the changed-files rule of every task (the verdict's
// wrong_files, besides a denied operation): the changes of cs to a path
// that the policy neither allows nor ignores, both paths of a rename
// judged, each as "PATH (KIND)". A directory added or removed only to hold or drop files the
// policy allows is no change of its own: it is not a violation when a
// file (or link) below it, in cs, is allowed. The grader and benchctl
// verify both judge a journal's changeset with it.
func (p Policy) Violations(cs Changeset) []string {
	var bad []string
	for _, ch := range cs {
		paths := []string{ch.Path}
		if ch.From != "" {
			paths = append(paths, ch.From)
		}
		for _, pth := range paths {
			if p.Decide(pth) != Denied {
				continue
			}
			if ch.Type == "dir" && p.holdsAllowed(cs, pth) {
				continue
			}
			bad = append(bad, fmt.Sprintf("%s (%s)", pth, ch.Kind))
		}
	}
	return bad
}

// holdsAllowed reports whether a change in cs below dir, other than a
// directory, is to a path the policy allows.
func (p Policy) holdsAllowed(cs Changeset, dir string) bool {
	for _, ch := range cs {
		if ch.Type != "dir" && strings.HasPrefix(ch.Path, dir+"/") && p.Decide(ch.Path) == Allowed {
			return true
		}
	}
	return false
}
