package modelfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
)

// ErrInvalid is wrapped by every error about a bad script.
var ErrInvalid = errors.New("invalid script")

// Script is a scripted session (see the package doc).
type Script struct {
	Workdir string `json:"workdir,omitempty"`
	Hang    bool   `json:"hang,omitempty"`
	Steps   []Step `json:"steps"`
}

// Step is one turn of the script: exactly one field is set.
type Step struct {
	Shell string `json:"shell,omitempty"`
	Edit  *Edit  `json:"edit,omitempty"`
	Final string `json:"final,omitempty"`
}

// Edit replaces Old by New, once, in Path (relative to the workdir).
// Via chooses the route: "" the agent's own editing tool when it has one
// the server knows, else its shell; "tool" that tool or an error; "shell"
// always the shell.
type Edit struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
	Via  string `json:"via,omitempty"`
}

// DefaultWorkdir is the agent's working directory unless the script says.
const DefaultWorkdir = "/workspace"

// LoadScript reads and checks a script file.
func LoadScript(file string) (*Script, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unable to read script: %w", err)
	}
	s, err := ParseScript(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return s, nil
}

// ParseScript decodes and checks a JSON script. Unknown fields are errors.
func ParseScript(b []byte) (*Script, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks that every step sets exactly one field, that edits name
// a relative path and change something, and that a final step is last.
func (s *Script) Validate() error {
	if s.Workdir == "" {
		s.Workdir = DefaultWorkdir
	}
	if !path.IsAbs(s.Workdir) {
		return fmt.Errorf("%w: workdir %q is not absolute", ErrInvalid, s.Workdir)
	}
	if len(s.Steps) == 0 && !s.Hang {
		return fmt.Errorf("%w: no steps", ErrInvalid)
	}
	for i, st := range s.Steps {
		n := 0
		if st.Shell != "" {
			n++
		}
		if st.Edit != nil {
			n++
			e := st.Edit
			if e.Path == "" || path.IsAbs(e.Path) || strings.HasPrefix(path.Clean(e.Path), "..") {
				return fmt.Errorf("%w: step %d: edit path %q must be relative to the workdir", ErrInvalid, i+1, e.Path)
			}
			if e.Via != "" && e.Via != "tool" && e.Via != "shell" {
				return fmt.Errorf("%w: step %d: via %q: want tool or shell", ErrInvalid, i+1, e.Via)
			}
			if e.Old == "" || e.Old == e.New {
				return fmt.Errorf("%w: step %d: an edit needs a non-empty old text different from new", ErrInvalid, i+1)
			}
		}
		if st.Final != "" {
			n++
			if i != len(s.Steps)-1 {
				return fmt.Errorf("%w: step %d: final must be the last step", ErrInvalid, i+1)
			}
		}
		if n != 1 {
			return fmt.Errorf("%w: step %d: want exactly one of shell, edit, final; got %d", ErrInvalid, i+1, n)
		}
	}
	return nil
}

// final is the closing message.
func (s *Script) final() string {
	if n := len(s.Steps); n > 0 && s.Steps[n-1].Final != "" {
		return s.Steps[n-1].Final
	}
	return "Done."
}

// abs is p inside the workdir.
func (s *Script) abs(p string) string { return path.Join(s.Workdir, p) }
