// Package limits is benchd's cgroup facility: one cgroup per agent attempt
// (and per grading run) that limits memory, tasks and CPU, measures peak
// memory and OOM kills, and kills every process in it, however it tried to
// get away.
//
// A group's life:
//
//	g, err := limits.New(ctx, limits.Config{MemoryMax: 2 << 30, PidsMax: 512, Name: "benchd-a42"})
//	// start the child held at a gate, then:
//	err = g.Add(pid)        // before the child runs any code of its own
//	// release the gate; run; on timeout:
//	err = g.Kill(ctx)       // every process, and wait until the group is empty
//	u, err := g.Usage()     // PeakBytes, PeakAnonBytes, MaxRSSBytes, OOMKills, ...
//	err = g.Close(ctx)      // Kill + remove every directory New made
//
// # Layouts
//
// The layout of the host is detected at run time with containerd's
// cgroups.Mode() (see Mode), or forced with Config.Layout:
//
//   - Unified (cgroup v2 only, most production hosts): one directory in the
//     v2 hierarchy at Root. The memory, pids and (when a CPU limit is set)
//     cpu controllers are enabled for its parent's children.
//   - Hybrid (v1 controllers at Root/<controller>, a controller-less v2
//     hierarchy at Root/unified, as on the development machines): one
//     directory in each of the memory and pids hierarchies, in cpu when a
//     CPU limit is set, and a parallel directory in the v2 hierarchy, used
//     only for cgroup.kill and cgroup.events. No other v1 controller is
//     touched.
//   - Legacy (v1 only): memory, pids, cpu when needed, and the freezer,
//     which Kill uses instead of cgroup.kill. On a hybrid host Legacy can be
//     forced, which is how the tests cover it.
//
// Everything except the detection is raw reads and writes of control
// files: containerd's cgroup1 and cgroup2 packages pull in a dozen modules
// (OCI runtime spec, eBPF, D-Bus, protobuf) for what is a few file writes
// here, and they were measured about 6.7 times slower (0.94 ms against
// 0.14 ms for create, add, read peak, remove of a v1 memory group).
// BenchmarkLifecycle compares New, Add, Usage and Close of a whole hybrid
// group (memory, pids and v2 directories, two intermediates, limits, a
// sample of its process) with that raw cycle for the memory group alone,
// in the same run: about 1.2-1.8 ms against 0.23-0.26 ms here. The
// root of the cgroup filesystems is Config.Root, so the parsers and the
// planning logic are tested against a fake tree in a temporary directory.
//
// # Where groups are made
//
// Below Config.Parent, which defaults to the cgroup this process is in,
// hierarchy by hierarchy (from /proc/self/cgroup; under systemd with
// Delegate=yes, the service's delegated subtree). A group is never made at
// a hierarchy's root: where the parent is "/" (on a hybrid host benchd is
// often in the root of pids, cpu and the v2 hierarchy), one intermediate
// group of this process, Config.Intermediate ("benchd-<pid>" by default),
// is made there and the groups below it. It is shared by every Group of
// the process and removed when the last of them closes.
//
// On cgroup v2 a group whose parent holds processes cannot have
// controllers enabled for its children (the "no internal processes" rule),
// and a daemon starts inside the very group it is delegated: systemd's
// Delegate=yes puts the service's main process in the service's group.
// Delegate, called once at start, prepares that group as container
// runtimes do: it moves this process into a leaf of its own,
// DefaultLeaf ("supervisor"), below the delegated group, and enables
// memory, pids and cpu in the delegated group's cgroup.subtree_control.
// From then on New makes groups beside the leaf, in the delegated group
// (a process whose own cgroup is a DefaultLeaf, or systemd's ".control"
// group of a delegated unit, makes its groups in the leaf's parent:
// DelegatedParent). Where systemd already put the process in a leaf of
// that name (DelegateSubgroup=supervisor, systemd 254 and later) nothing
// moves. Where the process shares its group with processes that are not
// its own, as in a login shell's session scope, it asks systemd over
// D-Bus for a transient scope with Delegate=yes holding only itself, and
// starts again from there. Delegate never touches a group outside the
// delegated one; its errors say which controller is missing from which
// file and what to set (ErrNoController), or which processes share the
// group and how to start the daemon instead (ErrParentBusy). Without
// Delegate, New enables what it needs in the parent's subtree_control
// (never in the root's: there the controllers must already be enabled,
// as systemd does), and returns ErrParentBusy when the kernel refuses
// because the parent holds processes.
//
// On hybrid and legacy hosts the controllers are in v1, which has no such
// rule, and Delegate does nothing.
//
// # Starting a process inside its group
//
// A process must be inside its group before it runs any code of its own,
// or it could allocate, fork or escape before the limits apply. On v2,
// FD returns a directory fd for SysProcAttr.UseCgroupFD (CLONE_INTO_CGROUP)
// and the child is born in the group. On hybrid and legacy hosts the
// memory controller is in v1, which CLONE_INTO_CGROUP cannot reach, so the
// launcher starts the child held at a gate (a re-exec of itself that waits
// for one byte on a pipe before it execs the agent), calls Add with its
// pid, and then opens the gate. Add writes the pid to cgroup.procs in every
// hierarchy of the group, the v2 one included on hybrid hosts. Memory the
// gate touched before Add stays charged to the launcher's group (v1 does
// not move charges with a task), and exec gives the agent a fresh address
// space, so none of the launcher's memory is counted in the group.
//
// # Limits
//
// MemoryMax sets v1 memory.limit_in_bytes (and memory.memsw.limit_in_bytes
// to the same value where swap is accounted) or v2 memory.max with
// memory.swap.max 0: swap is never a way around the limit. PidsMax sets
// pids.max, which counts threads as well as processes. CPUWeight is v2's
// cpu.weight (1..10000, default 100), written in v1 as cpu.shares =
// weight*1024/100 so that both defaults agree. CPUQuota per CPUPeriod
// (100ms by default) is v2's cpu.max or v1's cpu.cfs_quota_us and
// cpu.cfs_period_us. A zero field sets nothing: the parent's limits still
// apply.
//
// # Peak memory semantics
//
// Usage reports three different peaks, because "how much memory did the
// agent need" has no single answer:
//
// PeakBytes is the group's peak charge as the kernel keeps it: v1
// memory.max_usage_in_bytes, v2 memory.peak (Linux 5.19 and later; before
// that, the largest memory.current the sampler saw). It counts anonymous
// memory, the page cache of the files the group read or wrote, tmpfs and
// shared memory, and in v1 kernel memory (page tables, slab, socket
// buffers). Page cache is charged to the group that first brought a page
// in: a file already cached by someone else costs the group nothing, and a
// file the group read is charged to it even if others read it later. A dd
// of a 300 MiB file has an 8 MiB RSS and a 310 MiB group peak. Cache is
// reclaimable: near MemoryMax the kernel drops cache instead of killing
// (MemoryLimitHits counts those encounters), so page cache alone never
// causes an OOM kill. After the processes exit their cache stays charged
// until the group is removed, when the kernel moves it to the parent. The
// peak is never reset by this package: a group is made per run, so its
// peak is the run's.
//
// PeakAnonBytes is the largest anonymous memory of the group (v1
// memory.stat total_rss, which includes transparent huge pages and the
// swap cache; v2 memory.stat anon) seen by the sampler, every
// SampleInterval (100ms by default) and once more in every Usage, Kill and
// Close. It is what "RAM needed, without cache" usually means. Because it
// is sampled, it is a lower bound: a spike shorter than the interval
// between two samples is missed. The kernel keeps no peak of it.
//
// MaxRSSBytes is the largest peak resident set of a single process of the
// group: the kernel's VmHWM from /proc/<pid>/status, read by the sampler
// for every process listed in the group's cgroup.procs, with MaxRSSPid the
// process that had it. VmHWM is a true peak kept by the kernel for the
// life of an address space, so a spike between samples is not missed as
// long as the process is still alive at the next sample. Its limits: a
// process that exits (or execs, which starts a new address space) between
// two samples takes its VmHWM with it; VmHWM counts resident file-backed
// and shared pages too (the interpreter's mapped libraries, shared memory
// counted once in every process that maps it), so it can exceed the
// process's anonymous memory; threads share one figure. Kill and Close
// take a last sample before killing, so processes alive at the end are
// always counted. The sampler reads /proc/<pid>/cgroup and status through
// one directory fd and only counts a process that is still in the group,
// so a recycled pid is not mistaken for one of ours. The launcher's
// ru_maxrss (wait4) is a different figure: the largest of the reaped
// descendants, lost for orphans, and it counts shared file pages; use it
// only as a cross-check.
//
// Measured on the development machine (Linux 6.18, hybrid and forced
// legacy), Debian's python3 touching a 200 MiB bytes object, compared with
// the same interpreter touching nothing, each in a fresh group (the
// accuracy test): the group peak was 203.5 MiB against a 3.0 MiB baseline,
// the largest VmHWM 208.0 MiB against 8.0 MiB, the peak anon 202.7 MiB
// against 2.7 MiB; each within 0.3% of baseline + 200 MiB.
//
// # OOM kills and timeout kills
//
// To the parent an OOM kill and a Kill look the same: the process died of
// SIGKILL. Only the kernel's counter tells them apart, and Usage.OOMKills
// reads it (v1 memory.oom_control oom_kill, v2 memory.events oom_kill,
// which counts descendants). Kill never raises it. A run that was killed
// at its time limit and also had an OOM kill earlier reports both.
//
// # Killing
//
// Kill kills every process of the group, those that called setsid or were
// orphaned by a double fork included, since cgroup membership is inherited
// and cannot be left without privileges: on v2 and hybrid hosts by writing
// 1 to cgroup.kill of the v2 group (Linux 5.14 and later); on legacy hosts
// by freezing the v1 freezer group, sending SIGKILL to each of its
// processes while none can fork, and thawing it. If neither works (an old
// kernel), or processes are still there after two seconds, every listed
// pid gets SIGKILL until none is left. Kill then waits until the group is
// empty (v2 cgroup.events "populated 0", v1 cgroup.procs empty in every
// hierarchy) or ctx ends (ErrNotEmpty). Zombies do not keep a group
// populated: reaping the launcher's direct child stays the launcher's job.
// A process stuck in an uninterruptible sleep (for instance on a FUSE
// mount whose daemon is gone) cannot die; Kill then returns ErrNotEmpty
// when ctx ends.
//
// Close is Kill, a final Usage reading (which Usage returns from then on),
// and the removal of every directory New made, deepest first, retried
// while the kernel still reports the group busy.
//
// # Cleanup after a crash
//
// Groups are named so that a crash can be cleaned up: Cleanup kills and
// removes every group whose name has a given prefix below the parent (or,
// at a root, below the intermediate groups of this process and of
// processes that no longer exist) in every hierarchy, then removes empty
// intermediates. `benchd cleanup` calls it before the daemon makes any
// group.
package limits
