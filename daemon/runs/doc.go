// Package runs runs one attempt: the only package that knows an attempt
// is "a FUSE view + a cgroup + a netns + a sandbox + a grader".
// Engine.Plan is the one validator of what an attempt asks (a Spec: the
// agent, its environment, gateways, model and timeout), and returns it
// resolved as a Plan, whose Request is the one form of it benchd keeps;
// Engine.RunPlan runs a plan, checking nothing of it again, in the steps
// of docs/design.md ("One attempt, step by step"), in
// order, each set-up step registering its undo on a stack that unwinds in
// reverse order, on failure and at the end alike, so that no mount,
// cgroup or namespace outlives Run.
//
// # The steps
//
// The steps are those of docs/design.md's table ("One attempt, step by
// step"), which names the method of attempt that takes each; here is
// what each does in this package.
//
//   - probe: each gateway's endpoint is dialed from the host
//     (netns.Probe, 5 s each) before anything of the attempt is made; a
//     dead one is an infra error naming the gateway, the endpoint and the
//     dial error.
//   - prepare: the attempt's disk, a sparse ext4 image of the task's
//     [environment] storage_mb (default 1024) at attempts/ID/disk.img on
//     a loop device of its own (freed at unmount), mounted nosuid,nodev
//     at StateDir/attempts/ID/backing; the view's storage size is the
//     same. The agent's writes stop at it with ENOSPC; after the agent
//     ends a disk with under 2 MiB or no inode left is journaled as the
//     cap "storage" and fails the attempt with workspace_cap (a single
//     large write refused while more room was left is not seen). It is
//     unmounted last, after grading, on every ending; start-up recovery
//     mounts a leftover image read-only to seal its journal, and Cleanup
//     unmounts leftover disks. backing then holds a copy of the bundle's
//     workspace plus plan.md (the task's instruction.md, mode 0644). For
//     a command agent the whole tree, plan.md included, is handed to the
//     agent's uid: the view has the kernel check mode bits, and an edit
//     of plan.md must reach the edit policy (refused, journaled as
//     denied) rather than be refused by the kernel unrecorded.
//   - mount: an fsmon view of the backing dir at attempts/ID/mnt, with the
//     task's edit policy, journaling to attempts/ID/journal.jsonl (blobs
//     beside it). plan.md is in the initial tree, so an unchanged plan
//     never shows in a changeset; it is outside every task's allow globs,
//     so an agent that tries to change it is refused and journaled.
//   - confine and run: a built-in agent is applied by benchd itself,
//     through the view, so the journal shows it like any agent's work
//     (builtin:null does nothing; a change the policy refuses is skipped
//     and journaled). A command agent runs as a confine job: the view at
//     /workspace and as its working directory, the task's memory limit,
//     a cgroup of its own with CPU weight AgentCPUWeight and the task's
//     [environment] cpus as a CPU quota (where the host offers no cpu
//     controller, the weight alone is dropped with a warning), the network closed unless the task allows the internet, the
//     gateways, only the named environment variables plus BENCH_PLAN,
//     a uid of its own from Config.UIDs (else Config.AgentUID and
//     AgentGID), the sandbox's allow-listed root and
//     system call filter, read-only binds of the task's [environment]
//     binds and of an agent preset's binds (its install tree), recorded
//     in Attempt.Binds, and the state directory (which holds the backing
//     dir and every other attempt) and the task store masked should a
//     bind show them. {plan} in its arguments becomes /workspace/plan.md.
//   - collect: exit status, wall time, the cgroup's peak memory, the
//     largest single-process RSS, OOM, the network report, the
//     transcript (attempts/ID/stdout and stderr), then the view is
//     unmounted, the journal sealed and the changeset taken. An agent
//     that ran out of time gets an interrupted record before the
//     unmount. An attempt cut short earlier (its context canceled, an
//     infra error) is sealed by the unmount undo, with an interrupted
//     record naming the cause, and Run returns the journal and
//     transcript paths with its error, so the daemon stores them.
//   - grade: graders.Grade on a copy of the final tree without plan.md
//     (attempts/ID/grade-*, removed afterwards), made by
//     graders.CopyWorkspace: no link followed, and what may not be
//     copied (links, FIFOs, a tree past the limits) fails the verdict
//     (unsafe_link, special_file, tree_limits), never an infra error.
//     Grade gets the journal's changeset, the agent's exit status and
//     timeout, its non-gateway network use and the last lines of its
//     stdout; every grader command runs through ConfinedGraderRunner,
//     with the task's memory limit (an OOM there is grader_oom), in a
//     private scratch below Config.ScratchDir (STATE.scratch, never
//     /tmp: the state directory is masked in graders' sandboxes).
//   - verdict: the graders' verdict as graders.Grade decides it, the
//     shared rules included (exit 0, no timeout, only allowed files
//     changed and no edit the view refused, no network on a closed task,
//     stdlib imports); the agent's facts go in through RecordedFacts,
//     and the verdict comes out unchanged: graders.Verdict is the wire
//     verdict (apitype.Verdict) and the operator's Detail. workspace_cap
//     when the view hit a cap (files, journal records, blob bytes:
//     fsmon's defaults), from the view's counters, or for a regrade from
//     the cap records of the journal in the attempt directory.
//
// A gateway that failed to dial its endpoint during the run (a dial error
// in the network report; the gateway bounds what it accepts so that the
// agent cannot cause one) makes the attempt an infra error, not graded:
// Run returns the Outcome, journal and network report included, with an
// error wrapping netns.ErrUpstream.
//
// Storing is the daemon's. An error from Run is an infra error (or the
// cancellation of its context); a failing agent is a verdict.
//
// # Progress
//
// The progress callback gets an event when each phase starts and every
// 250 ms while a command agent runs: elapsed time, the cgroup's current
// memory, and the view's counters (journal.Counts: edits are the
// operations performed, denied the ones the policy refused).
//
// # Agent identity
//
// A command agent is split like a shell line, without expansion, and
// resolved as execve inside the sandbox would: an absolute path as is, a
// bare name in the agent's PATH (the sandbox's default unless PATH is
// passed with --env). Its identity is the SHA-256 of that file (for a
// script, the script itself: the interpreter named by its #! line is not
// hashed) and its arguments as given. Version is left empty: running the
// agent to ask would execute agent code outside the sandbox. Built-ins
// are identified by the SHA-256 of their overlay's manifest (every path,
// mode and content hash) followed by the paths they delete.
//
// # Crash leftovers
//
// Cleanup removes what a crash left under a state directory: views,
// cgroups and namespaces named by confine, grading copies and grader
// scratch roots. The attempts' own records stay.
package runs
