// Package reason names the reason codes of a verdict that more than one
// package reads: the graders, which give them, and the checks that
// re-derive or compare a verdict (benchctl verify, its regrade). A code
// is a stable identifier: it is on the wire (apitype.Reason.Code), in
// every signed statement and in the bundles' expect.toml, so a code is
// never renamed. What each rule means is graders' package doc; the codes
// a kind gives only itself stay with the kind.
//
// It imports nothing, so that both sides can.
package reason

// The shared rules, which hold for every task (graders.Grade).
const (
	AgentExit    = "agent_exit_nonzero" // the agent exited with a non-zero status
	Timeout      = "timeout"            // the agent hit its wall-clock limit: no partial credit
	WrongFiles   = "wrong_files"        // a change the edit policy does not allow, or an operation it refused
	Network      = "network_used"       // the agent used the network on a closed task
	NonStdlib    = "non_stdlib_import"  // changed Python imports a module outside the standard library
	NoReward     = "no_reward"          // the kind gave reward 0 without a reason of its own
	GraderOOM    = "grader_oom"         // a grader command (the agent's code ran there) hit the task's memory limit
	WorkspaceCap = "workspace_cap"      // the agent hit a cap of the workspace view or filled its disk
)

// The tree rules, checked before any kind runs: a tree that fails one is
// graded by no kind, and its changed files are not judged (only its
// refused operations give wrong_files).
const (
	UnsafeLink  = "unsafe_link"  // a symbolic link outside the ignored paths, or one leaving the tree anywhere
	SpecialFile = "special_file" // a FIFO, socket or device, ignored paths included
	TreeLimits  = "tree_limits"  // too many entries, a path too long or a chain of directories too deep
)

// NeedsReview is the one reason of a verdict left to review: its message
// says why the grader was not confident.
const NeedsReview = "needs_review"

// TreeRule reports whether code is one of the tree rules'.
func TreeRule(code string) bool {
	return code == UnsafeLink || code == SpecialFile || code == TreeLimits
}
