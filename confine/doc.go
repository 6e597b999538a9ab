// Package confine runs one command confined: the composition of benchd's
// three kernel facilities, limits (a cgroup), netns (a network namespace)
// and sandbox (namespaces, mounts, an unprivileged uid), into a single
// call. The daemon runs agents with it, and graders through a runner
// built on it, so that both get the same confinement.
//
//	res, err := confine.Run(ctx, confine.Spec{
//		Args:      []string{"agent", "--plan", "/workspace/plan.md"},
//		Workspace: view, // bound at /workspace
//		UID:       uid, GID: gid,
//		Timeout:   10 * time.Minute,
//		MemoryMax: 2 << 30,
//		Mask:      []string{stateDir, taskStore},
//		StdoutPath: out, StderrPath: errOut,
//	})
//
// Start and Job.Wait split Run in two, so that a caller can watch the
// job's cgroup (Job.Usage) while it runs.
//
// # What one job is
//
// Start sets up, in this order, each step registering its undo on a
// stack: a cgroup below Spec.CgroupParent (default: the cgroup this
// process is in) with MemoryMax, PidsMax, CPUWeight and CPUQuota; a network namespace, closed
// (loopback only, every outbound attempt recorded) unless Spec.Network
// is netns.Open, with Spec.Gateways reachable on loopback addresses; and
// the sandbox, started inside both: its init joins the cgroup while it is
// still gated (Config.Join is the group's Add; on a unified host it is
// also born there with CLONE_INTO_CGROUP), is born in the namespace, and
// gets the namespace's /etc/hosts and /etc/resolv.conf, and, read-only at
// its host path, the group's own memory cgroup directory (the sandbox's
// root has no /sys; node reads its memory limit there and sizes its heap
// by it). The sandbox's
// deadline and kill are the group's kill, which also reaches processes
// that left the session; an OOM kill is told from any other SIGKILL by
// the group's OOM counter. If a step fails, the steps already taken are
// undone in reverse order and nothing is left.
//
// Job.Wait waits for the tree, then undoes everything in reverse order:
// the group is killed (anything left) and removed, after a last usage
// reading; the namespace is closed, after which its report is final.
// Nothing survives a job: no process, cgroup, namespace or mount.
//
// # Memory figures
//
// Result.PeakMemory is the group's peak charge (limits.Usage.PeakBytes):
// anonymous memory plus page cache, the figure the limit applies to.
// Result.MaxRSS is the largest peak resident set of a single process:
// the larger of the sandbox init's getrusage(RUSAGE_CHILDREN) ru_maxrss,
// a true peak kept by the kernel for every process the init reaped,
// however briefly it lived, and the cgroup sampler's VmHWM, which covers
// processes still alive at the end (a tree killed at its deadline, whose
// init cannot report). Both count resident file pages (the interpreter's
// libraries), so a baseline run of the same interpreter is the fair
// comparison. The init's figure has a floor of the init's own resident
// set (a few MiB): the agent is forked from it before it execs.
//
// # Names and crash leftovers
//
// The cgroup and the namespace of a job are both named
// NamePrefix<pid>-<Spec.Name>, pid being the process that made them.
// Cleanup removes the groups of owners that no longer run, and the
// namespaces netns.Cleanup finds orphaned, and leaves every live
// process's jobs alone, so several daemons (or test binaries) may share
// a parent cgroup.
package confine
