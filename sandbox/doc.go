// Package sandbox starts a confined process tree (an agent under test, or
// a grader's python) and waits for it.
//
// It is one of benchd's kernel facilities and imports no other: the cgroup
// and the network namespace of an attempt are made by the caller (with
// benchd.dev/limits and benchd.dev/netns) and handed in through Config as
// plain values and functions (Join, CgroupFD, Kill, OOMKilled, NetnsPath).
//
//	func main() {
//		sandbox.Init() // first thing: see "The init" below
//		...
//	}
//
//	g, _ := limits.New(ctx, limits.Config{MemoryMax: 2 << 30, PidsMax: 512})
//	n, _ := netns.New(ctx, netns.Config{Mode: netns.Closed})
//	cfg := sandbox.Config{
//		Args: []string{"agent", "--plan", "/workspace/plan.md"},
//		UID: 65534, GID: 65534,
//		Workspace: view,                       // the fsmon FUSE mount
//		Mask:      []string{stateDir, taskStore, runDir},
//		Binds:     []sandbox.Bind{{Source: "/opt/tool", Target: "/opt/tool"}},
//		Files: []sandbox.File{{Path: "/etc/hosts", Data: n.Hosts()},
//			{Path: "/etc/resolv.conf", Data: n.ResolvConf()}},
//		Join: g.Add, Kill: g.Kill, NetnsPath: n.Path(),
//		OOMKilled: func() bool { u, _ := g.Usage(); return u.OOMKills > 0 },
//		Timeout: 600 * time.Second,
//		StdoutPath: out, StderrPath: errOut,
//	}
//	if fd, ok := g.FD(); ok {
//		cfg.UseCgroupFD, cfg.CgroupFD = true, fd
//	}
//	res, err := sandbox.Run(ctx, cfg)
//
// # The init
//
// Start re-executes the running binary (/proc/self/exe) with argv[0]
// "benchd-sandbox-init", in new mount, pid, IPC and UTS namespaces (and a
// new network namespace when none is given). Init, called first thing by
// main (and by TestMain in tests), recognises that argv[0] and runs the
// init instead of the program; in any other process it returns at once.
// Package init functions of the binary run before it, as in any Go
// program: keep them cheap and free of side effects.
//
// The init is pid 1 of the sandbox's pid namespace. It builds the file
// system view, sets the host name, brings lo up (in a namespace of its
// own), turns core files off (RLIMIT_CORE 0: they would land in the
// workspace), starts the agent as its only child with the agent's
// credentials, and then reaps every process that ends (orphans are
// re-parented to it) and passes SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH
// and SIGCONT on to the agent (Sandbox.Signal sends them to the init).
// When the agent ends, the init reports its status to the parent and
// exits; the kernel then kills whatever is left of the pid namespace, so
// daemons the agent left behind do not outlive it. The init keeps its
// root credentials on its other threads, is not dumpable (no ptrace, no
// /proc/1/environ, /proc/1/root for the agent) and holds no descriptor of
// the host's tree.
//
// # The gate
//
// The init starts blocked on a pipe: before anything else it reads its
// configuration from the parent until EOF. The parent writes it only after
// Config.Join (typically limits' Group.Add, which v1 cgroups need because
// they have no CLONE_INTO_CGROUP) has returned nil for the init's host
// pid. So no mount is made, no memory is charged beyond the Go runtime's
// start, and no agent code runs before the init is in its cgroups; every
// process the agent starts inherits them. The init itself (a Go process
// of a few MiB) stays in those cgroups and counts toward their limits.
// With UseCgroupFD the init is instead born in the v2 cgroup
// (CLONE_INTO_CGROUP); Join may be used as well. If Join fails, the parent closes the pipe unwritten and kills the
// init, which exits on the empty read.
//
// A second pipe carries the init's reports back: "the agent runs", or the
// error that stopped the set-up (a mount, the privilege drop, the agent's
// execve: "command not found" is an ErrSetup, an infrastructure error, not
// an agent failure); later the agent's exit status.
//
// # Network namespace
//
// With NetnsPath (or NetnsFD) the init is born in that namespace: the
// parent starts every init from one dedicated, locked OS thread, which
// joins the namespace just for the fork and returns to the process's own
// right after. The same thread serves Pdeathsig: the kernel sends it when
// the thread that forked the child ends, and this thread never ends, so
// the init is killed exactly when benchd dies. Without a given namespace
// the sandbox gets a new, empty one (CLONE_NEWNET) in which the init
// brings lo up: loopback works, nothing else is reachable, and nothing is
// recorded (the caller uses netns for that). The host's namespace is never
// shared.
//
// # File system view
//
// The new root is a small tmpfs, made read-only before the agent starts.
// It holds an allow-list, never the host's / with holes in it: a
// hostile agent finds nothing it was not given, however it searches (a
// copy of the task bundles under /var/tmp, a checkout's .git, other
// users' files, logs). Nothing else of the host's / is there: no /home,
// /root, /srv, /opt, /var, /mnt, /media, /sys.
//
//   - /usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32, as the host has
//     them: a symbolic link as the same link (merged-/usr hosts), a
//     directory as a recursive bind mount (sub-mounts included) that is
//     read-only, nosuid and nodev on every mount (mount_setattr with
//     AT_RECURSIVE). Missing ones are left out.
//   - /usr/local is an empty, read-only tmpfs: what was installed by hand
//     (other toolchains, tools and their data) is not the distribution's.
//     A Bind may name a part of it.
//   - /etc is a directory of the root tmpfs with, file by file: passwd
//     and group generated (root, the agent as "agent" with Config.UID,
//     Config.GID and $HOME, nobody and nogroup), hostname, hosts (the
//     host name on 127.0.1.1), an empty resolv.conf and an
//     nsswitch.conf of files and dns, unless Config.Files gives the path;
//     and, bound read-only from the host the same way when it has them:
//     ld.so.cache, ld.so.conf, ld.so.conf.d, host.conf, gai.conf,
//     protocols, services, networks, mime.types, ssl/certs,
//     ssl/openssl.cnf, localtime, timezone, alternatives, os-release,
//     debian_version, mtab, python3 and python3.* (Debian's python reads
//     sitecustomize.py there). That is what python3, node, git and the
//     agent CLIs read (found with strace and the agents' end-to-end
//     tests); the host's shadow files, accounts, logs and configuration
//     are not there.
//   - /proc is a new procfs of the sandbox's pid namespace: it shows the
//     sandbox's processes only, so no host pid is visible, and no
//     /proc/PID/root or /proc/PID/cwd of a host process leads to the
//     host's tree. Any procfs a bound host tree carries is detached.
//   - /dev is a read-only tmpfs with null, zero, full, random, urandom and
//     tty bound from the host, the fd, stdin, stdout, stderr and ptmx
//     links, a private devpts and a private /dev/shm.
//   - /tmp is a private tmpfs (mode 1777); /run a private tmpfs (mode
//     0755, root's), empty.
//   - $HOME (Config.Home, default /home/agent) is a private tmpfs owned by
//     the agent, mode 0700; its parents are directories of the root tmpfs.
//   - /tmp, $HOME and /dev/shm, the tmpfs mounts the agent can write, are
//     each capped at Config.TmpfsMax bytes (default DefaultTmpfsMax,
//     1 GiB; the size= option): a write past it fails with ENOSPC. Their
//     pages are memory, charged to the writer's memory cgroup (so the
//     cgroup's limit bounds their sum too), and freed when the sandbox's
//     mount namespace ends with its last process.
//   - /workspace is Config.Workspace, bound read-write, nosuid and nodev.
//     Ownership is the caller's affair: the files should belong to the
//     agent's uid.
//   - Config.Binds are bound at their targets (read-only unless Writable;
//     always nosuid, nodev): what a task ([environment] binds) or an
//     agent preset (its install tree) needs beyond the allow-list; the
//     Result lists them. Config.Files are written to a staging tmpfs and
//     bound read-only over their paths (following a symbolic link there,
//     inside the new root). A target that does not exist is made when
//     its parent is writable during set-up (the root tmpfs, /etc,
//     /usr/local, /tmp, $HOME, a writable bind); inside a read-only host
//     tree (/usr) it fails with ErrSetup.
//
// Every target path is resolved inside the new root (openat2 with
// RESOLVE_IN_ROOT), so a symbolic link in the workspace cannot send a
// mount outside it. The mount namespace is private: nothing propagates to
// or from the host, and everything vanishes with the namespace.
//
// The sandbox's /proc/self/mountinfo lists its own mounts only: for each,
// the path inside the sandbox and, as the root field, the path of the
// shown directory inside its file system. For the allow-listed trees
// that is the host's path (/usr, /etc/ssl/certs), which says nothing
// the agent cannot see. For the workspace and the binds it is the
// source's path within its file system, unless the source is a file
// system's root: benchd's workspace is its FUSE view, whose root field
// is "/" and whose source is "benchd", so no path of benchd's state
// directory shows. A Workspace that is a plain directory (tests) shows
// its path there.
//
// # What is masked, and how
//
// With the allow-list, masked content can only show through a Bind (or
// the Workspace) of a directory that holds it. Config.Mask lists host
// paths the agent must not read by any path all the same: benchd's state
// directory, its run directory (sockets, FUSE views of other attempts),
// the task store, hidden tests, goldens, and any file that holds them. A
// directory is covered by an empty, read-only tmpfs (mode 0555);
// anything else by an empty, read-only regular file.
//
// A path is only a name. The mask is applied to the content: Start
// resolves each masked path (symbolic links included) to its identity,
// the filesystem (major:minor) and the directory of that filesystem it
// names, from the host's mountinfo. The init, once the view is built,
// reads its own mountinfo and covers every place of the view where that
// content shows: under a Bind of a parent directory, under any other
// host mount of the same filesystem directory that a Bind carries (a
// bind mount of the state directory elsewhere); a mount that shows only
// a part of masked content is covered whole. A Workspace or Bind source
// that lies inside masked content is refused (ErrInvalid) rather than
// silently emptied. A masked path must exist (ErrInvalid otherwise: a
// typo must not unmask a secret), and a masked regular file must have a
// single name (a hard link elsewhere would show it).
//
// Masking is done with mounts the agent cannot undo (it has no
// capabilities, and the filter refuses mount calls) and is complete for
// what the kernel's mount tree shows. It does not follow content that is
// copied, or hard links inside a masked directory that lead out of it.
//
// # Identity
//
// The agent runs as Config.UID and Config.GID, both non-zero. On a locked
// thread of the init, in this order: PR_SET_NO_NEW_PRIVS; every
// capability dropped from the bounding set (PR_CAPBSET_DROP, while the
// thread still has CAP_SETPCAP); setgroups(0) (no supplementary group);
// setresgid(gid, gid, gid); setresuid(uid, uid, uid), which clears the
// permitted and effective sets; the ambient set cleared; capset with
// empty sets (the inheritable set); a new anonymous session keyring, so
// that benchd's keys are not the agent's (the filter below then refuses
// keyctl whole); the system call filter. The gid goes before the uid because
// changing groups needs the privilege the uid change takes away. These
// are raw per-thread system calls (Go's syscall.Setresuid changes every
// thread); the agent is forked from that thread, so it inherits exactly
// its credentials, and the thread is parked for good afterwards. With
// no_new_privs and nosuid everywhere, a setuid or file-capability binary
// gives nothing, even one the agent finds or makes in its workspace.
//
// # System call filter
//
// The agent runs under a seccomp filter, installed last on the thread
// that starts it, after no_new_privs and the privilege drop, right
// before its execve: every process of the agent's tree inherits it and
// none can remove it. The init's other threads are not filtered. The
// filter is a classic BPF program assembled here (about 240 instructions;
// golang.org/x/sys/unix's SockFilter and the seccomp system call, no
// library: the program is short enough to read whole, and the sandbox
// takes no dependency for it). It is an allow list: docs/security.md
// lists its calls by group, with why. It checks the architecture first:
// a call through another ABI than x86_64's (int 0x80, i386) or with the
// x32 bit set answers EPERM. Then:
//
//   - clone with any namespace flag (CLONE_NEWUSER above all, which an
//     unprivileged process may otherwise use to get every capability in
//     a namespace of its own), unshare with any, and setns: EPERM.
//     clone3 answers ENOSYS: its flags are in memory, which a filter
//     cannot read, and on ENOSYS glibc, musl and Go fall back to clone,
//     whose flags it can (container runtimes do the same).
//   - personality: only the default, PER_LINUX32, UNAME26 with either,
//     and the query 0xffffffff, as in Docker's profile; anything else
//     (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC) is EPERM.
//   - socket: AF_UNIX, AF_INET, AF_INET6, and AF_NETLINK with
//     NETLINK_ROUTE only (route and address queries); another family
//     (AF_VSOCK, AF_PACKET, AF_ALG, AF_BLUETOOTH, ...) answers
//     EAFNOSUPPORT, another netlink protocol EPROTONOSUPPORT, the
//     errors of a kernel built without them. socketpair: AF_UNIX only.
//   - EPERM whatever the arguments (refusedCalls): the mount API (mount,
//     umount2, pivot_root, chroot, open_tree, open_tree_attr,
//     move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr), the
//     keyring (keyctl, add_key, request_key), bpf, perf_event_open,
//     userfaultfd, io_uring_setup, io_uring_enter, io_uring_register,
//     kexec_load, kexec_file_load, init_module, finit_module,
//     delete_module and the obsolete module calls, open_by_handle_at and
//     name_to_handle_at, swapon, swapoff, reboot, settimeofday,
//     clock_settime, clock_adjtime, adjtimex, sethostname,
//     setdomainname, acct, quotactl, quotactl_fd, syslog, vhangup,
//     fanotify_init, iopl, ioperm, kcmp, pidfd_getfd, lookup_dcookie,
//     nfsservctl, uselib, ustat, sysfs, _sysctl. (vm86, vm86old, stime
//     and umount exist only on i386, which the architecture check
//     refuses whole.)
//   - The calls of allowedCalls are allowed.
//   - Everything else answers ENOSYS, as a kernel without the call
//     would: libc and language runtimes then fall back to an older call
//     (statx to fstatat, listmount to /proc/self/mountinfo), and a call
//     added to the kernel after the list was written is refused until
//     someone judges it and lists it. statmount, listmount, listns,
//     modify_ldt, the lsm_* calls and unknown numbers are among them.
//
// Docker's default profile is the anchor, nsjail's seccomp policies the
// second: the refused calls are those Docker refuses to a container
// without capabilities (the agent has none), plus io_uring (refused by
// Docker since 25.0) and the new mount API. Where this differs:
//
//   - Docker's profile answers EPERM for a call off its list; here it is
//     ENOSYS, so that a runtime's probe for a new call falls back
//     instead of failing.
//   - Docker refuses unshare whole; here only its namespace flags are
//     (unshare(CLONE_FS), CLONE_FILES stay possible).
//   - ptrace and process_vm_readv/writev are allowed, as Docker allows
//     them on kernels from 4.8 (where seccomp is checked again after a
//     tracer changes a call). The pid namespace holds only the agent's
//     own processes and its init, which is not dumpable and so cannot
//     be traced: the agent can trace its own descendants and nothing
//     else. kcmp and pidfd_getfd, which Docker grants only with
//     CAP_SYS_PTRACE, are refused.
//   - landlock and seccomp are allowed: both only narrow what the
//     caller may do, and agent CLIs use them to confine their own tools.
//   - Refused calls answer EPERM (Docker's errno too); nsjail's
//     examples kill the process instead, which an agent would report as a
//     crash rather than an error it can act on.
//
// A grader's commands run through the same sandbox and get the same
// filter. On other architectures than amd64 Start fails with ErrSetup:
// the filter is written for x86_64 only, and an agent never runs
// without it.
//
// # Deadline, kill and OOM
//
// Timeout counts from the moment the agent starts. When it passes while
// the agent still runs, Wait kills the tree: Config.Kill (the cgroup's
// kill, which also reaches a process that left the session or process
// group), then in every case SIGKILL to the init, which empties the pid
// namespace. Result.DeadlineHit is set only then. If the agent had already
// ended when the timer fired (the init was on its way out), there is no
// kill and no DeadlineHit. Cancelling Wait's ctx kills the tree the same
// way, without DeadlineHit, and Wait returns the Result with an error
// wrapping ctx.Err().
//
// Result.OOM is Config.OOMKilled() asked after the tree has ended. An OOM
// kill looks like any SIGKILL, so the counter is the only witness: an agent
// killed by the OOM killer before the deadline ends with Signal SIGKILL,
// OOM true and DeadlineHit false, never as a timeout. Both are true only
// when the OOM killer struck some process and the tree was still running
// at the deadline.
//
// ExitCode and Signal are the agent's (as the init saw them), not the
// init's; when the init itself was killed (deadline, cancellation), they
// are the init's: -1 and SIGKILL. Should the init end any other way
// before the agent (it is a Go program, and shares the agent's limits),
// Wait also returns an error wrapping ErrSetup. Wall runs from the agent's
// start to the init's end. When Wait returns, no process of the sandbox
// is left.
//
// The init lives in the agent's cgroups, so a fork bomb that fills the
// pids limit could stop the Go runtime from starting a thread it wants,
// which is fatal to a Go program. The init therefore makes a few spare
// threads before the agent starts and afterwards never blocks a goroutine
// in a system call: it reaps with WNOHANG when SIGCHLD arrives.
//
// # Output
//
// The agent's stdout and stderr are pipes that the parent streams through
// one fixed 32 KiB buffer each into StdoutPath and StderrPath. Past
// OutputCap bytes (default 8 MiB per stream) the file gets the trailer
// line "[benchd: output truncated after N bytes]" and nothing more, but
// the pipe is still read to the end and counted (Result.Stdout.Bytes), so
// a flood neither blocks the agent nor grows benchd's memory; draining
// costs CPU in benchd, not memory. Stdin is /dev/null unless
// Config.Stdin is set.
package sandbox
