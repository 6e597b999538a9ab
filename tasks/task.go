// Package tasks reads and validates task bundles: the task.toml manifest,
// the agent-facing plan, the starting workspace, the hidden tests and
// goldens, the reference solution and the known attempts.
//
// A bundle is a directory:
//
//	task.toml        manifest (see Task)
//	instruction.md   the plan, placed at /workspace/plan.md
//	workspace/       the starting files the agent sees
//	tests/           hidden tests, oracles, goldens (never visible to the agent)
//	solution/        the reference solution: files overlaid on the workspace
//	attempts/NAME/   known attempts: files overlaid on the workspace, plus
//	                 expect.toml (pass, and the reason code a failure must carry)
package tasks

import (
	"time"

	"benchd.dev/fsmon/journal"
)

// Task is one parsed bundle.
type Task struct {
	ID          string // "rt-01": the manifest's id
	Dir         string // absolute path of the bundle
	Name        string
	Description string

	Category string
	Tags     []string

	AgentTimeout    time.Duration // [agent] timeout_sec
	VerifierTimeout time.Duration // [verifier] timeout_sec
	MemoryMB        int           // [environment] memory_mb
	AllowInternet   bool          // [environment] allow_internet

	World      string   // [bench] world
	Difficulty []string // [bench] difficulty: seed 000's tags
	Policy     journal.Policy
	// Files the task names as the agent's deliverables (the allow globs
	// are the policy; Deliverables are what the plan asks to change).
	Grader GraderSpec

	Attempts []Attempt
}

// GraderSpec names the grader kind and its parameters from [bench.grader].
type GraderSpec struct {
	Kind   string         // pytest, dual-run, workload, exact, refusal
	Params map[string]any // kind-specific
}

// Attempt is a known attempt: an overlay and the verdict it must get.
type Attempt struct {
	Name string
	Dir  string // the overlay directory
	// Delete lists workspace paths the attempt removes before its overlay.
	Delete []string
	Expect Expect
}

// Expect is the verdict a known attempt must get.
type Expect struct {
	Pass bool
	Code string // the reason code a failing attempt must carry
}
