package draw

import (
	"slices"
	"strings"

	"benchd.dev/client/apitype"
)

// Identity is a frozen agent: the executable's hash and arguments, and
// the model where one was given. Two attempts with equal identities ran
// the same agent. A built-in agent has no executable: its identity is its
// spec and the hash of the overlay it applies, which differs from task to
// task (see SuiteKey).
type Identity struct {
	Spec   string   `json:"spec,omitempty"` // built-ins only: builtin:reference, ...
	SHA256 string   `json:"sha256"`
	Args   []string `json:"args,omitempty"`
	Model  string   `json:"model,omitempty"`
}

// IdentityOf returns the frozen identity of an attempt's agent.
func IdentityOf(a apitype.AgentIdentity) Identity {
	id := Identity{SHA256: a.SHA256, Args: slices.Clone(a.Args), Model: a.Model}
	if strings.HasPrefix(a.Spec, "builtin:") {
		id.Spec = a.Spec
	}
	return id
}

// IsZero reports whether id says nothing (the attempt never resolved its
// agent, e.g. an infra error before the run).
func (id Identity) IsZero() bool {
	return id.Spec == "" && id.SHA256 == "" && len(id.Args) == 0 && id.Model == ""
}

// Equal reports whether id and o are the same frozen agent.
func (id Identity) Equal(o Identity) bool {
	return id.Spec == o.Spec && id.SHA256 == o.SHA256 && slices.Equal(id.Args, o.Args) && id.Model == o.Model
}

// SuiteKey is what must be the same across the tasks of a suite for them
// to have been run by one agent: the whole identity for a command, and
// the spec and model for a built-in (whose overlay hash is the task's
// own).
func (id Identity) SuiteKey() string {
	var b strings.Builder
	if id.Spec != "" {
		b.WriteString(id.Spec)
	} else {
		b.WriteString("sha256:")
		b.WriteString(id.SHA256)
		for _, a := range id.Args {
			b.WriteString("\x00")
			b.WriteString(a)
		}
	}
	b.WriteString("\x00model=")
	b.WriteString(id.Model)
	return b.String()
}

// String renders id on one line: "sha256:0123456789ab args [a.py] model m".
func (id Identity) String() string {
	var parts []string
	if id.Spec != "" {
		parts = append(parts, id.Spec)
	}
	parts = append(parts, "sha256:"+short(id.SHA256))
	if len(id.Args) > 0 {
		parts = append(parts, "args ["+strings.Join(id.Args, " ")+"]")
	}
	if id.Model != "" {
		parts = append(parts, "model "+id.Model)
	}
	return strings.Join(parts, " ")
}

// Streak is a run of consecutive passes by one identity on one task.
type Streak struct {
	Identity Identity `json:"identity"`
	Passes   int      `json:"passes"`
	// Attempts are the ids of the passes counted, newest first.
	Attempts []string `json:"attempts"`
	// EndedBy is the attempt that ended the streak (a fail or a
	// cancellation by the same identity), "" when the history ran out.
	EndedBy string `json:"ended_by,omitempty"`
	// Skipped counts the attempts of the identity inside the streak that
	// neither counted nor broke it (infra errors, unfinished attempts).
	Skipped int `json:"skipped"`
	// PendingOn is the unresolved attempt (its verdict left to review)
	// at which the count stopped: the passes older than it count only
	// once a review decides it. "" when there is none.
	PendingOn string `json:"pending_on,omitempty"`
}

// StreakFor returns the current streak of id in history, the stored
// attempts of one task, newest first. It walks the attempts of id (those
// of other identities are another agent's and do not touch it) and
// counts passes until the first attempt that is not one:
//
//   - done and passed: counts;
//   - done and failed: ends the streak;
//   - done and unresolved (left to review, not yet reviewed): neither
//     counts nor ends it, but the count stops there (PendingOn): whether
//     the older passes are consecutive depends on the review;
//   - canceled: ends the streak (a cancellation could hide a failure);
//   - infra_error: neither counts nor ends it (the harness failed, not the
//     agent);
//   - queued or running: neither (no verdict yet);
//   - an infra error that was retried is left out: its retry stands for it.
//
// A change of identity (a new executable, other arguments, another model)
// is a new identity whose streak starts at zero: the passes of the old one
// never carry over.
func StreakFor(history []apitype.Attempt, id Identity) Streak {
	s := Streak{Identity: id, Attempts: []string{}}
	for _, a := range history {
		if !IdentityOf(a.Agent).Equal(id) || a.RetriedBy != "" {
			continue // another agent's, or an infra error whose retry stands for it
		}
		switch a.State {
		case apitype.StateDone:
			if a.Unresolved() {
				s.PendingOn = a.ID
				return s
			}
			if !a.Pass {
				s.EndedBy = a.ID
				return s
			}
			s.Passes++
			s.Attempts = append(s.Attempts, a.ID)
		case apitype.StateCanceled:
			s.EndedBy = a.ID
			return s
		default:
			s.Skipped++
		}
	}
	return s
}

// LatestIdentity returns the identity of the newest attempt in history
// (newest first) whose identity has the suite key key, and whether there
// is one.
func LatestIdentity(history []apitype.Attempt, key string) (Identity, bool) {
	for _, a := range history {
		id := IdentityOf(a.Agent)
		if !id.IsZero() && id.SuiteKey() == key {
			return id, true
		}
	}
	return Identity{}, false
}
