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
//	solution/files/  the reference solution: files overlaid on the workspace
//	attempts/NAME/   a known attempt: files/ overlaid on the workspace, plus
//	                 expect.toml (pass, and the reason code a failure must carry)
//
// # Manifest
//
// task.toml has these tables (every key but the grader's parameters is
// listed; unknown keys are an error, so a typo cannot pass silently):
//
//	[task]         id, name, description
//	[metadata]     category, tags
//	[agent]        timeout_sec                 (default 600)
//	[verifier]     timeout_sec                 (default 120)
//	[environment]  memory_mb, cpus, storage_mb, allow_internet, binds
//	[bench]        world, difficulty           (difficulty tags: the Tag constants)
//	[bench.policy] allow, ignore               (globs, see journal.Policy)
//	[bench.grader] kind, and the kind's parameters
//
// The grader's parameters are every key of [bench.grader] other than kind;
// a [bench.grader.params] sub-table is accepted too and merged in. Kind
// must be one of the Kind constants; the graders package registers a
// function for each.
//
// # Overlays
//
// The reference solution and every known attempt are overlays: applying
// one to a copy of workspace/ (ApplyOverlay) first removes the paths the
// attempt deletes, then copies its files/ tree over the copy, replacing
// files of the same path. The solution is solution/files/ and deletes
// nothing. An attempt is attempts/NAME/files/ (optional: an attempt may
// only delete, or change nothing at all, like an agent that does nothing)
// and attempts/NAME/expect.toml:
//
//	pass   = false                        # required
//	code   = "tests_failed"               # required: "pass" when pass = true,
//	                                      # "needs_review" for a verdict left to review
//	delete = ["tests/test_public.py"]     # optional, workspace paths
//	note   = "edits the public tests"     # optional, for people
//	confined = true                       # optional: the verdict needs the daemon's
//	                                      # confined runner (see Expect.Confined)
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
	// CPUs is how much CPU time the agent may use, in CPUs ([environment]
	// cpus, after Harbor's field: 1.5 is one and a half CPUs, enforced as
	// a cgroup CPU quota); 0, when the key is absent, means no quota.
	CPUs float64
	// StorageMB is the size in MiB of the attempt's disk, which holds its
	// workspace ([environment] storage_mb, after Harbor's field): writes
	// past it fail with ENOSPC. DefaultStorageMB when the key is absent.
	StorageMB     int64
	AllowInternet bool // [environment] allow_internet
	// Binds are host paths the agent's and the graders' sandboxes show,
	// read-only, at the same path ([environment] binds), beyond the
	// sandbox's allow-listed root (/usr, a minimal /etc): data a task
	// needs that the distribution's trees do not hold.
	Binds []string

	World      string   // [bench] world
	Difficulty []string // [bench] difficulty: seed 000's tags
	// Policy is the edit policy: the allow globs name the files the agent
	// may change, the ignore globs name noise (caches) that is never part
	// of a changeset; everything else is read-only.
	Policy journal.Policy
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
	Dir  string // the overlay directory (attempts/NAME/files); may not exist
	// Delete lists workspace paths the attempt removes before its overlay.
	Delete []string
	Expect Expect
	Note   string // what the attempt does, for people
}

// Expect is the verdict a known attempt must get.
type Expect struct {
	Pass bool
	Code string // the reason code a failing attempt must carry; CodePass when Pass; CodeReview when Review
	// Confined: the verdict holds only under the daemon's confined
	// runner (cgroup memory accounting, paths hidden from the probe), not
	// when graders run commands directly (graders.ExecRunner).
	Confined bool
}

// Review reports whether the attempt's verdict must be left to review:
// neither passed nor failed.
func (e Expect) Review() bool { return !e.Pass && e.Code == CodeReview }
