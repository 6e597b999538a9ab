// Package scrub replaces the values of an attempt's --env variables by
// markers in text that enters benchd's records: the transcript, the
// infra error and reasons, the DNS names, the log, and the model calls
// an HTTP gateway stores. The values are secrets the caller passed by
// name (API keys); only their names may be kept.
//
// A value shorter than MinSecretBytes is left alone: it would blot out
// ordinary text ("1", "true") and hide little. Matches are exact, byte
// for byte; a value the agent encodes (base64, split across lines) is not
// found, which is why the gateway also redacts credential headers by
// name, whatever their value.
package scrub

import (
	"slices"
	"strings"

	"benchd.dev/client/apitype"
)

// MinSecretBytes is the shortest value that is scrubbed.
const MinSecretBytes = 6

// Marker is what replaces the value of the variable name.
func Marker(name string) string { return "[env " + name + "]" }

// Replacer replaces the values of a set of variables by their markers.
// The zero value replaces nothing. It is safe for concurrent use.
type Replacer struct{ r *strings.Replacer }

// New returns the Replacer of env: every value of MinSecretBytes or
// more. Longer values go first, so that a value that holds another is
// replaced whole; of two variables with the same value the first names
// it.
func New(env []apitype.EnvVar) Replacer {
	var vs []apitype.EnvVar
	for _, e := range env {
		if len(e.Value) >= MinSecretBytes {
			vs = append(vs, e)
		}
	}
	if len(vs) == 0 {
		return Replacer{}
	}
	slices.SortStableFunc(vs, func(a, b apitype.EnvVar) int { return len(b.Value) - len(a.Value) })
	pairs := make([]string, 0, 2*len(vs))
	for _, e := range vs {
		pairs = append(pairs, e.Value, Marker(e.Name))
	}
	return Replacer{strings.NewReplacer(pairs...)}
}

// Empty reports whether r replaces nothing.
func (r Replacer) Empty() bool { return r.r == nil }

// String returns s scrubbed.
func (r Replacer) String(s string) string {
	if r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Bytes returns b scrubbed (b itself when nothing matched).
func (r Replacer) Bytes(b []byte) []byte {
	if r.r == nil {
		return b
	}
	s := r.r.Replace(string(b))
	if s == string(b) {
		return b
	}
	return []byte(s)
}
