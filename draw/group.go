package draw

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// GroupKey is the group a task belongs to, as seed 000 states the rule.
//
// A task that makes changes is grouped by its world and the set of
// changes its reference solution makes. A change is the pair (kind,
// path), so the kind counts: adding report.csv and modifying report.csv
// are different work. A rename is one change, from its old path to its new
// one. The key is "WORLD/changes:" and the first 16 hex digits of the
// SHA-256 of the sorted changeset lines, each ending in "\n".
//
// A task that makes no changes (reply-only) is grouped by its world, then
// by what it needs and by the faults it injects:
// "WORLD/reply:needs=A+B:faults=X+Y", lists sorted, "-" for none.
func GroupKey(t Task) string {
	if t.ReplyOnly() {
		return t.World + "/reply:needs=" + joinOr(t.Needs) + ":faults=" + joinOr(t.Faults)
	}
	return t.World + "/changes:" + ChangesetDigest(t.Changeset)
}

// ChangesetDigest is the first 16 hex digits of the SHA-256 of the
// changeset lines, sorted bytewise, each followed by "\n".
func ChangesetDigest(changes []string) string {
	c := slices.Clone(changes)
	slices.Sort(c)
	h := sha256.New()
	for _, l := range c {
		h.Write([]byte(l + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func joinOr(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, "+")
}

// Group is a set of tasks with one GroupKey.
type Group struct {
	Key   string   `json:"key"`
	World string   `json:"world"`
	Tasks []string `json:"tasks"` // ids, sorted bytewise
}

// Groups groups tasks, sorted by key.
func Groups(ts []Task) []Group {
	idx := map[string]int{}
	var out []Group
	for _, t := range ts {
		k := GroupKey(t)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Group{Key: k, World: t.World})
		}
		out[i].Tasks = append(out[i].Tasks, t.ID)
	}
	for i := range out {
		slices.Sort(out[i].Tasks)
	}
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Exclusion reasons.
const (
	// ReasonAccountsInternet excludes a task before the draw.
	ReasonAccountsInternet = "needs real accounts and the public internet"
	// ReasonRobotCheck removes a drawn task after the draw.
	ReasonRobotCheck = "blocked by a check for automated browsers, which the exam's browser cannot pass: unrunnable for every product"
)

// ExcludedBefore says whether t is left out before the draw, and why: it
// needs real accounts on real services and the public internet, so it
// cannot start from the same state for every product. Either need alone
// does not exclude.
func ExcludedBefore(t Task) (reason string, excluded bool) {
	if t.NeedsAccounts && t.NeedsInternet {
		return ReasonAccountsInternet, true
	}
	return "", false
}

// RemovedAfter says whether a drawn task is removed after the draw, and
// why: it is unrunnable for every product. Its place is not refilled.
func RemovedAfter(t Task) (reason string, removed bool) {
	if t.RobotCheck {
		return ReasonRobotCheck, true
	}
	return "", false
}
