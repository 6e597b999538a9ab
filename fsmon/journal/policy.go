package journal

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Decision is what the edit policy says about a mutating operation.
type Decision string

// The decisions a record can carry.
const (
	Allowed Decision = "allowed" // the path may change; it is part of the changeset
	Ignored Decision = "ignored" // noise: written freely, never part of a changeset
	Denied  Decision = "denied"  // read-only: the operation got EACCES
)

// ErrBadGlob is returned for a glob that does not parse.
var ErrBadGlob = errors.New("bad glob")

// Policy decides, from globs, which paths the agent may change.
//
// Glob syntax (a subset of .gitignore): "*", "?" and "[...]" match within
// one path segment; "**" matches any number of whole segments; a glob
// without a slash matches the last segment at any depth ("*.pyc"); a glob
// with a slash is anchored at the workspace root ("src/counter.py"); a
// trailing slash ("__pycache__/") matches a directory of that name and
// everything below it. Ignore is checked before Allow; everything that
// matches neither is read-only.
type Policy struct {
	Allow  []string `json:"allow" toml:"allow"`
	Ignore []string `json:"ignore" toml:"ignore"`
}

// Validate reports the first glob that does not parse.
func (p Policy) Validate() error {
	for _, g := range append(append([]string{}, p.Allow...), p.Ignore...) {
		if err := validGlob(g); err != nil {
			return err
		}
	}
	return nil
}

func validGlob(g string) error {
	if g == "" || strings.HasPrefix(g, "/") || strings.Contains(g, "\x00") {
		return fmt.Errorf("%w %q: must be a non-empty relative pattern", ErrBadGlob, g)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(g, "/"), "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("%w %q: no . or .. segments", ErrBadGlob, g)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("%w %q: %v", ErrBadGlob, g, err)
		}
	}
	return nil
}

// Decide returns the decision for a change to the relative path p.
func (p Policy) Decide(rel string) Decision {
	rel = strings.Trim(rel, "/")
	for _, g := range p.Ignore {
		if MatchGlob(g, rel) {
			return Ignored
		}
	}
	for _, g := range p.Allow {
		if MatchGlob(g, rel) {
			return Allowed
		}
	}
	return Denied
}

// IsIgnored reports whether rel matches an ignore glob.
func (p Policy) IsIgnored(rel string) bool { return p.Decide(rel) == Ignored }

// MatchGlob reports whether the relative path rel matches glob g (syntax
// of Policy). A glob that does not parse matches nothing.
func MatchGlob(g, rel string) bool {
	dirOnly := strings.HasSuffix(g, "/")
	g = strings.TrimSuffix(g, "/")
	segs := strings.Split(rel, "/")
	pat := strings.Split(g, "/")
	if !strings.Contains(g, "/") {
		if !dirOnly {
			// Unanchored: the last segment, at any depth. Not any
			// segment: under allow = ["*.py"] a directory "x.py/"
			// would otherwise let every file below it change.
			ok, _ := path.Match(g, segs[len(segs)-1])
			return ok
		}
		// With a trailing slash: a directory of that name at any depth,
		// and everything below it.
		for _, s := range segs {
			if ok, _ := path.Match(g, s); ok {
				return true
			}
		}
		return false
	}
	if dirOnly {
		// "a/b/" matches a/b and everything below it.
		for n := len(segs); n >= 1; n-- {
			if matchSegs(pat, segs[:n]) {
				return true
			}
		}
		return false
	}
	return matchSegs(pat, segs)
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
