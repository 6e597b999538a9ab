package draw

import (
	"fmt"
	"slices"

	"benchd.dev/client/apitype"
)

// SuiteTasks are the six tasks of the built-in reduced suite, in the
// order the board runs them: the gate first.
var SuiteTasks = []string{"rt-01", "rt-02", "rt-03", "rt-04", "rt-05", "rt-06"}

// GateTask is the canary run first. When it does not pass, the tasks of
// GatedTasks are skipped: they cost the most and would tell nothing new
// about an agent that cannot reach the code and fix a planted bug.
const GateTask = "rt-01"

// GatedTasks are skipped when the gate does not pass. The others run
// whatever the gate says.
var GatedTasks = []string{"rt-03", "rt-04", "rt-05"}

// DefaultStreak is the streak target of the suite: three consecutive
// passes on one frozen agent.
const DefaultStreak = 3

// Row statuses: what happened to a task in this run of the board.
const (
	RowPass = "pass" // every attempt of this run passed
	RowFail = "fail" // at least one attempt got a failing verdict
	// RowUnresolved: no failing verdict, but at least one attempt's
	// verdict is left to review and not yet reviewed.
	RowUnresolved = "unresolved"
	RowInfra      = "infra_error" // no failing verdict, but an attempt had no verdict (infra error or canceled)
	RowSkipped    = "skipped"     // not run: the gate did not pass
)

// GatePassed reports whether the gate's attempts of this run let the
// gated tasks run: at least one attempt, and every one done and passed.
// An infra error in the gate is no pass: the gated tasks are skipped then
// too, and the board says why.
func GatePassed(gate []apitype.Attempt) bool {
	gate = Slots(gate)
	if len(gate) == 0 {
		return false
	}
	for _, a := range gate {
		if a.State != apitype.StateDone || !a.Pass {
			return false
		}
	}
	return true
}

// Slots leaves out of a run's attempts each infra error that another
// attempt retries (RetriedBy set): a run's slot is a chain of retries,
// and only its last attempt counts. The order is kept.
func Slots(run []apitype.Attempt) []apitype.Attempt {
	out := make([]apitype.Attempt, 0, len(run))
	for _, a := range run {
		if a.RetriedBy == "" {
			out = append(out, a)
		}
	}
	return out
}

// Skipped reports whether the board skips task, given the gate's outcome.
func Skipped(task string, gatePassed bool) bool {
	return !gatePassed && slices.Contains(GatedTasks, task)
}

// BoardInput is what a board is computed from.
type BoardInput struct {
	Model  string
	Target int // the streak each task needs; DefaultStreak when 0
	// Runs holds this run's attempts, by task, in the order they were
	// made. A skipped task has none.
	Runs map[string][]apitype.Attempt
	// History holds the daemon's stored attempts of each task, newest
	// first, fetched after this run (so they include it).
	History map[string][]apitype.Attempt
}

// Row is one task of a board.
type Row struct {
	Task     string   `json:"task"`
	Status   string   `json:"status"`   // RowPass, RowFail, RowInfra, RowSkipped
	Outcomes []string `json:"outcomes"` // this run's attempts, in order: pass, fail, unresolved, infra error, canceled
	Attempts []string `json:"attempts"` // their ids
	Streak   Streak   `json:"streak"`
	Met      bool     `json:"met"` // Streak.Passes >= the target
	// Unresolved are this run's attempts whose verdict is left to review.
	Unresolved []string `json:"unresolved"`
}

// Board is the suite's state for one agent (and model).
type Board struct {
	Model      string `json:"model,omitempty"`
	Target     int    `json:"target"`
	GatePassed bool   `json:"gate_passed"`
	Rows       []Row  `json:"rows"`
	// Green is set when every task has its streak, all on one identity.
	Green bool `json:"green"`
	// NotGreen says why the board is not green, one sentence each.
	NotGreen []string `json:"not_green"`
	// Unresolved counts this run's attempts whose verdict is left to
	// review: neither passes nor fails until benchctl review decides
	// them.
	Unresolved int `json:"unresolved"`
}

// OutcomeUnresolved is the Outcome of an attempt whose verdict is left
// to review and not yet reviewed.
const OutcomeUnresolved = "unresolved"

// Outcome names what happened to one attempt: "pass", "fail",
// "unresolved", "infra error", "canceled", or its state while it has no
// verdict.
func Outcome(a apitype.Attempt) string {
	switch a.State {
	case apitype.StateDone:
		if a.Unresolved() {
			return OutcomeUnresolved
		}
		if a.Pass {
			return "pass"
		}
		return "fail"
	case apitype.StateInfraError:
		return "infra error"
	}
	return a.State
}

// Evaluate computes the board: the gate, the skips, each task's streak
// and whether the board is green.
//
// A task's streak is counted for the identity that ran it in this run
// (StreakFor on its history). A skipped task, or one whose attempts never
// resolved their agent, takes the newest identity in its history that has
// the suite key of the run's agent. The board is green when every task of
// SuiteTasks has a streak of at least Target and all the streaks are on
// identities with one suite key (Identity.SuiteKey).
func Evaluate(in BoardInput) Board {
	target := in.Target
	if target <= 0 {
		target = DefaultStreak
	}
	b := Board{Model: in.Model, Target: target, GatePassed: GatePassed(in.Runs[GateTask]), NotGreen: []string{}}
	suiteKey := ""
	for _, task := range SuiteTasks {
		if id, ok := runIdentity(in.Runs[task]); ok {
			suiteKey = id.SuiteKey()
			break
		}
	}
	keys := map[string][]string{} // suite key -> tasks
	for _, task := range SuiteTasks {
		row := Row{Task: task, Outcomes: []string{}, Attempts: []string{}, Unresolved: []string{}}
		run := Slots(in.Runs[task])
		switch {
		case Skipped(task, b.GatePassed):
			row.Status = RowSkipped
		default:
			row.Status = rowStatus(run)
		}
		for _, a := range run {
			row.Outcomes = append(row.Outcomes, Outcome(a))
			row.Attempts = append(row.Attempts, a.ID)
			if a.Unresolved() {
				row.Unresolved = append(row.Unresolved, a.ID)
			}
		}
		b.Unresolved += len(row.Unresolved)
		id, ok := runIdentity(run)
		if !ok && suiteKey != "" {
			id, ok = LatestIdentity(in.History[task], suiteKey)
		}
		if ok {
			row.Streak = StreakFor(in.History[task], id)
			keys[id.SuiteKey()] = append(keys[id.SuiteKey()], task)
		} else {
			row.Streak = Streak{Attempts: []string{}}
		}
		row.Met = ok && row.Streak.Passes >= target
		if !row.Met {
			msg := fmt.Sprintf("%s: streak %d of %d", task, row.Streak.Passes, target)
			switch {
			case row.Status == RowSkipped:
				msg += fmt.Sprintf(" (skipped: gate %s did not pass)", GateTask)
			case !ok:
				msg += " (no attempt of this agent)"
			case row.Streak.PendingOn != "":
				msg += fmt.Sprintf(" (counted up to %s, whose verdict is left to review: benchctl review decides it)", row.Streak.PendingOn)
			}
			b.NotGreen = append(b.NotGreen, msg)
		}
		b.Rows = append(b.Rows, row)
	}
	if len(keys) > 1 {
		var ids []string
		for _, r := range b.Rows {
			if !r.Streak.Identity.IsZero() {
				ids = append(ids, fmt.Sprintf("%s by %s", r.Task, r.Streak.Identity))
			}
		}
		b.NotGreen = append(b.NotGreen, fmt.Sprintf("the streaks are on %d different identities: %v", len(keys), ids))
	}
	b.Green = len(b.NotGreen) == 0
	return b
}

// runIdentity returns the identity of the newest attempt of run (in the
// order made) that resolved its agent.
func runIdentity(run []apitype.Attempt) (Identity, bool) {
	for i := len(run) - 1; i >= 0; i-- {
		if id := IdentityOf(run[i].Agent); !id.IsZero() {
			return id, true
		}
	}
	return Identity{}, false
}

func rowStatus(run []apitype.Attempt) string {
	run = Slots(run)
	if len(run) == 0 {
		return RowInfra
	}
	status := RowPass
	for _, a := range run {
		switch {
		case a.Unresolved():
			status = RowUnresolved
		case a.State == apitype.StateDone && !a.Pass:
			return RowFail
		case a.State != apitype.StateDone && status != RowUnresolved:
			status = RowInfra
		}
	}
	return status
}
