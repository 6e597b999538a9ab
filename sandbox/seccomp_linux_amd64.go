package sandbox

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system call filter of the agent (see "System call filter" in the
// package doc). It is a classic BPF program over struct seccomp_data:
// the call's number at offset 0, the audit architecture at 4, the
// arguments from 16, eight bytes each, little-endian.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // the low 32 bits of args[0]
)

// x32Bit marks the x32 ABI's system call numbers on x86_64.
const x32Bit = 0x40000000

// Namespace flags. clone's low byte is the exit signal, so CLONE_NEWTIME
// (0x80) can only be asked for through unshare (and clone3).
const (
	cloneNamespaces   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNamespaces = cloneNamespaces | unix.CLONE_NEWTIME
)

// personalities are the personality(2) arguments allowed, as in Docker's
// default profile: the default (PER_LINUX), PER_LINUX32, UNAME26 with
// either, and 0xffffffff, which only queries.
var personalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// refusedCalls answer EPERM whatever their arguments: known calls that
// could widen an agent's reach, refused with the errno Docker gives.
var refusedCalls = []struct {
	nr   uint32
	name string
}{
	// The mount API, old and new.
	{unix.SYS_MOUNT, "mount"}, {unix.SYS_UMOUNT2, "umount2"}, {unix.SYS_PIVOT_ROOT, "pivot_root"},
	{unix.SYS_CHROOT, "chroot"}, {unix.SYS_MOVE_MOUNT, "move_mount"}, {unix.SYS_OPEN_TREE, "open_tree"},
	{unix.SYS_FSOPEN, "fsopen"}, {unix.SYS_FSCONFIG, "fsconfig"}, {unix.SYS_FSMOUNT, "fsmount"},
	{unix.SYS_FSPICK, "fspick"}, {unix.SYS_MOUNT_SETATTR, "mount_setattr"},
	{unix.SYS_OPEN_TREE_ATTR, "open_tree_attr"},
	// Namespaces by descriptor.
	{unix.SYS_SETNS, "setns"},
	// The kernel keyring: not namespaced.
	{unix.SYS_KEYCTL, "keyctl"}, {unix.SYS_ADD_KEY, "add_key"}, {unix.SYS_REQUEST_KEY, "request_key"},
	// Large attack surfaces reachable without privilege.
	{unix.SYS_BPF, "bpf"}, {unix.SYS_PERF_EVENT_OPEN, "perf_event_open"}, {unix.SYS_USERFAULTFD, "userfaultfd"},
	{unix.SYS_IO_URING_SETUP, "io_uring_setup"}, {unix.SYS_IO_URING_ENTER, "io_uring_enter"},
	{unix.SYS_IO_URING_REGISTER, "io_uring_register"},
	// Kernels and modules.
	{unix.SYS_KEXEC_LOAD, "kexec_load"}, {unix.SYS_KEXEC_FILE_LOAD, "kexec_file_load"},
	{unix.SYS_INIT_MODULE, "init_module"}, {unix.SYS_FINIT_MODULE, "finit_module"},
	{unix.SYS_DELETE_MODULE, "delete_module"}, {unix.SYS_CREATE_MODULE, "create_module"},
	{unix.SYS_GET_KERNEL_SYMS, "get_kernel_syms"}, {unix.SYS_QUERY_MODULE, "query_module"},
	// File handles bypass path permission checks.
	{unix.SYS_OPEN_BY_HANDLE_AT, "open_by_handle_at"}, {unix.SYS_NAME_TO_HANDLE_AT, "name_to_handle_at"},
	// The machine's state.
	{unix.SYS_SWAPON, "swapon"}, {unix.SYS_SWAPOFF, "swapoff"}, {unix.SYS_REBOOT, "reboot"},
	{unix.SYS_SETTIMEOFDAY, "settimeofday"}, {unix.SYS_CLOCK_SETTIME, "clock_settime"},
	{unix.SYS_CLOCK_ADJTIME, "clock_adjtime"}, {unix.SYS_ADJTIMEX, "adjtimex"},
	{unix.SYS_SETHOSTNAME, "sethostname"}, {unix.SYS_SETDOMAINNAME, "setdomainname"},
	{unix.SYS_ACCT, "acct"}, {unix.SYS_QUOTACTL, "quotactl"}, {unix.SYS_QUOTACTL_FD, "quotactl_fd"},
	{unix.SYS_SYSLOG, "syslog"}, {unix.SYS_VHANGUP, "vhangup"}, {unix.SYS_FANOTIFY_INIT, "fanotify_init"},
	{unix.SYS_IOPL, "iopl"}, {unix.SYS_IOPERM, "ioperm"},
	// Other processes' memory and files beyond ptrace's own checks.
	{unix.SYS_KCMP, "kcmp"}, {unix.SYS_PIDFD_GETFD, "pidfd_getfd"},
	// Obsolete calls.
	{unix.SYS_LOOKUP_DCOOKIE, "lookup_dcookie"}, {unix.SYS_NFSSERVCTL, "nfsservctl"},
	{unix.SYS_USELIB, "uselib"}, {unix.SYS_USTAT, "ustat"}, {unix.SYS_SYSFS, "sysfs"},
	{unix.SYS__SYSCTL, "_sysctl"},
}

// allowedCalls is what an agent's processes may call (see "System call
// filter" in the package doc for each group and why). A call on neither
// this list nor refusedCalls answers ENOSYS, as a kernel without it
// would: libc and language runtimes fall back to an older call, and a
// call added to the kernel after this list is refused until it is
// judged and listed. clone, unshare, personality, socket and socketpair
// are allowed with argument checks, below.
var allowedCalls = []struct {
	group string
	nrs   []uint32
}{
	{"memory", []uint32{unix.SYS_MMAP, unix.SYS_MPROTECT, unix.SYS_MUNMAP, unix.SYS_BRK, unix.SYS_MREMAP,
		unix.SYS_MSYNC, unix.SYS_MINCORE, unix.SYS_MADVISE, unix.SYS_MLOCK, unix.SYS_MUNLOCK, unix.SYS_MLOCKALL,
		unix.SYS_MUNLOCKALL, unix.SYS_MLOCK2, unix.SYS_MEMBARRIER, unix.SYS_PKEY_MPROTECT, unix.SYS_PKEY_ALLOC,
		unix.SYS_PKEY_FREE, unix.SYS_MBIND, unix.SYS_SET_MEMPOLICY, unix.SYS_GET_MEMPOLICY, unix.SYS_REMAP_FILE_PAGES,
		unix.SYS_MAP_SHADOW_STACK, unix.SYS_MSEAL, unix.SYS_MEMFD_CREATE}},
	{"files", []uint32{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_OPEN, unix.SYS_CLOSE, unix.SYS_STAT, unix.SYS_FSTAT,
		unix.SYS_LSTAT, unix.SYS_LSEEK, unix.SYS_PREAD64, unix.SYS_PWRITE64, unix.SYS_READV, unix.SYS_WRITEV,
		unix.SYS_ACCESS, unix.SYS_PIPE, unix.SYS_DUP, unix.SYS_DUP2, unix.SYS_SENDFILE, unix.SYS_FCNTL, unix.SYS_FLOCK,
		unix.SYS_FSYNC, unix.SYS_FDATASYNC, unix.SYS_TRUNCATE, unix.SYS_FTRUNCATE, unix.SYS_GETDENTS, unix.SYS_GETCWD,
		unix.SYS_CHDIR, unix.SYS_FCHDIR, unix.SYS_RENAME, unix.SYS_MKDIR, unix.SYS_RMDIR, unix.SYS_CREAT, unix.SYS_LINK,
		unix.SYS_UNLINK, unix.SYS_SYMLINK, unix.SYS_READLINK, unix.SYS_CHMOD, unix.SYS_FCHMOD, unix.SYS_CHOWN,
		unix.SYS_FCHOWN, unix.SYS_LCHOWN, unix.SYS_UMASK, unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_MKNOD, unix.SYS_STATFS,
		unix.SYS_FSTATFS, unix.SYS_SYNC, unix.SYS_READAHEAD, unix.SYS_GETDENTS64, unix.SYS_FADVISE64, unix.SYS_OPENAT,
		unix.SYS_MKDIRAT, unix.SYS_MKNODAT, unix.SYS_FCHOWNAT, unix.SYS_FUTIMESAT, unix.SYS_NEWFSTATAT, unix.SYS_UNLINKAT,
		unix.SYS_RENAMEAT, unix.SYS_LINKAT, unix.SYS_SYMLINKAT, unix.SYS_READLINKAT, unix.SYS_FCHMODAT,
		unix.SYS_FACCESSAT, unix.SYS_SPLICE, unix.SYS_TEE, unix.SYS_SYNC_FILE_RANGE, unix.SYS_VMSPLICE,
		unix.SYS_UTIMENSAT, unix.SYS_FALLOCATE, unix.SYS_DUP3, unix.SYS_PIPE2, unix.SYS_PREADV, unix.SYS_PWRITEV,
		unix.SYS_SYNCFS, unix.SYS_RENAMEAT2, unix.SYS_COPY_FILE_RANGE, unix.SYS_PREADV2, unix.SYS_PWRITEV2,
		unix.SYS_STATX, unix.SYS_CLOSE_RANGE, unix.SYS_OPENAT2, unix.SYS_FACCESSAT2, unix.SYS_FCHMODAT2,
		unix.SYS_CACHESTAT, unix.SYS_IOCTL}},
	{"extended attributes", []uint32{unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_GETXATTR,
		unix.SYS_LGETXATTR, unix.SYS_FGETXATTR, unix.SYS_LISTXATTR, unix.SYS_LLISTXATTR, unix.SYS_FLISTXATTR,
		unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR}},
	{"waiting on descriptors", []uint32{unix.SYS_POLL, unix.SYS_SELECT, unix.SYS_PSELECT6, unix.SYS_PPOLL,
		unix.SYS_EPOLL_CREATE, unix.SYS_EPOLL_CREATE1, unix.SYS_EPOLL_CTL, unix.SYS_EPOLL_WAIT, unix.SYS_EPOLL_PWAIT,
		unix.SYS_EPOLL_PWAIT2, unix.SYS_EVENTFD, unix.SYS_EVENTFD2, unix.SYS_SIGNALFD, unix.SYS_SIGNALFD4,
		unix.SYS_TIMERFD_CREATE, unix.SYS_TIMERFD_SETTIME, unix.SYS_TIMERFD_GETTIME, unix.SYS_INOTIFY_INIT,
		unix.SYS_INOTIFY_INIT1, unix.SYS_INOTIFY_ADD_WATCH, unix.SYS_INOTIFY_RM_WATCH, unix.SYS_IO_SETUP,
		unix.SYS_IO_DESTROY, unix.SYS_IO_GETEVENTS, unix.SYS_IO_PGETEVENTS, unix.SYS_IO_SUBMIT, unix.SYS_IO_CANCEL}},
	{"processes", []uint32{unix.SYS_FORK, unix.SYS_VFORK, unix.SYS_EXECVE, unix.SYS_EXECVEAT, unix.SYS_EXIT,
		unix.SYS_EXIT_GROUP, unix.SYS_WAIT4, unix.SYS_WAITID, unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL,
		unix.SYS_GETPID, unix.SYS_GETTID, unix.SYS_GETPPID, unix.SYS_GETPGRP, unix.SYS_GETPGID, unix.SYS_SETPGID,
		unix.SYS_SETSID, unix.SYS_GETSID, unix.SYS_UNAME, unix.SYS_PRCTL, unix.SYS_ARCH_PRCTL,
		unix.SYS_SET_THREAD_AREA, unix.SYS_GET_THREAD_AREA, unix.SYS_SET_TID_ADDRESS, unix.SYS_SET_ROBUST_LIST,
		unix.SYS_GET_ROBUST_LIST, unix.SYS_RSEQ, unix.SYS_RESTART_SYSCALL, unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV,
		unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_OPEN, unix.SYS_PIDFD_SEND_SIGNAL, unix.SYS_SECCOMP,
		unix.SYS_LANDLOCK_CREATE_RULESET, unix.SYS_LANDLOCK_ADD_RULE, unix.SYS_LANDLOCK_RESTRICT_SELF,
		unix.SYS_GETRANDOM, unix.SYS_SYSINFO, unix.SYS_GETCPU}},
	{"limits and scheduling", []uint32{unix.SYS_GETRLIMIT, unix.SYS_SETRLIMIT, unix.SYS_PRLIMIT64, unix.SYS_GETRUSAGE,
		unix.SYS_TIMES, unix.SYS_GETPRIORITY, unix.SYS_SETPRIORITY, unix.SYS_SCHED_YIELD, unix.SYS_SCHED_SETPARAM,
		unix.SYS_SCHED_GETPARAM, unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_GETSCHEDULER,
		unix.SYS_SCHED_GET_PRIORITY_MAX, unix.SYS_SCHED_GET_PRIORITY_MIN, unix.SYS_SCHED_RR_GET_INTERVAL,
		unix.SYS_SCHED_SETAFFINITY, unix.SYS_SCHED_GETAFFINITY, unix.SYS_SCHED_SETATTR, unix.SYS_SCHED_GETATTR,
		unix.SYS_IOPRIO_SET, unix.SYS_IOPRIO_GET}},
	{"credentials", []uint32{unix.SYS_GETUID, unix.SYS_GETEUID, unix.SYS_GETGID, unix.SYS_GETEGID, unix.SYS_GETGROUPS,
		unix.SYS_GETRESUID, unix.SYS_GETRESGID, unix.SYS_SETUID, unix.SYS_SETGID, unix.SYS_SETREUID, unix.SYS_SETREGID,
		unix.SYS_SETRESUID, unix.SYS_SETRESGID, unix.SYS_SETGROUPS, unix.SYS_SETFSUID, unix.SYS_SETFSGID,
		unix.SYS_CAPGET, unix.SYS_CAPSET}},
	{"signals", []uint32{unix.SYS_RT_SIGACTION, unix.SYS_RT_SIGPROCMASK, unix.SYS_RT_SIGRETURN, unix.SYS_RT_SIGPENDING,
		unix.SYS_RT_SIGTIMEDWAIT, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_RT_TGSIGQUEUEINFO, unix.SYS_RT_SIGSUSPEND,
		unix.SYS_SIGALTSTACK, unix.SYS_PAUSE, unix.SYS_ALARM, unix.SYS_GETITIMER, unix.SYS_SETITIMER}},
	{"time", []uint32{unix.SYS_NANOSLEEP, unix.SYS_GETTIMEOFDAY, unix.SYS_TIME, unix.SYS_CLOCK_GETTIME,
		unix.SYS_CLOCK_GETRES, unix.SYS_CLOCK_NANOSLEEP, unix.SYS_TIMER_CREATE, unix.SYS_TIMER_SETTIME,
		unix.SYS_TIMER_GETTIME, unix.SYS_TIMER_GETOVERRUN, unix.SYS_TIMER_DELETE}},
	{"futexes", []uint32{unix.SYS_FUTEX, unix.SYS_FUTEX_WAITV, unix.SYS_FUTEX_WAKE, unix.SYS_FUTEX_WAIT,
		unix.SYS_FUTEX_REQUEUE}},
	{"IPC", []uint32{unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT, unix.SYS_SEMGET, unix.SYS_SEMOP,
		unix.SYS_SEMCTL, unix.SYS_SEMTIMEDOP, unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
		unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE, unix.SYS_MQ_NOTIFY,
		unix.SYS_MQ_GETSETATTR}},
	{"sockets", []uint32{unix.SYS_CONNECT, unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_SENDTO, unix.SYS_RECVFROM,
		unix.SYS_SENDMSG, unix.SYS_RECVMSG, unix.SYS_SENDMMSG, unix.SYS_RECVMMSG, unix.SYS_SHUTDOWN, unix.SYS_BIND,
		unix.SYS_LISTEN, unix.SYS_GETSOCKNAME, unix.SYS_GETPEERNAME, unix.SYS_SETSOCKOPT, unix.SYS_GETSOCKOPT}},
}

// socketFamilies are the address families socket(2) may ask for: local
// sockets, IPv4 and IPv6 (loopback, or the model gateway's proxy), and
// netlink for route and address queries (getaddrinfo's AI_ADDRCONFIG, ip
// addr), with NETLINK_ROUTE only. socketpair takes AF_UNIX only.
var socketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}

// offArg2 is the low 32 bits of args[2] (socket's protocol).
const offArg2 = offArg0 + 16

// callRanges sorts the allowed numbers into runs of consecutive ones.
func callRanges() [][2]uint32 {
	var nrs []uint32
	for _, g := range allowedCalls {
		nrs = append(nrs, g.nrs...)
	}
	slices.Sort(nrs)
	nrs = slices.Compact(nrs)
	var rs [][2]uint32
	for _, n := range nrs {
		if l := len(rs); l > 0 && rs[l-1][1]+1 == n {
			rs[l-1][1] = n
			continue
		}
		rs = append(rs, [2]uint32{n, n})
	}
	return rs
}

// filterProgram assembles the agent's filter. Its jumps are forward and
// at most 255 instructions long, so the calls checked by argument and the
// refused ones come first, their handlers next, and the allow list last,
// as ranges each with its own returns.
func filterProgram() ([]unix.SockFilter, error) {
	var a asm
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	a.load(offArch)
	a.jumpIf(unix.BPF_JEQ, unix.AUDIT_ARCH_X86_64, "", "deny") // another ABI: int 0x80, i386
	a.load(offNr)
	a.jumpIf(unix.BPF_JGE, x32Bit, "deny", "") // the x32 ABI
	a.jumpIf(unix.BPF_JEQ, unix.SYS_CLONE, "clone", "")
	a.jumpIf(unix.BPF_JEQ, unix.SYS_UNSHARE, "unshare", "")
	// clone3's flags are in memory, out of the filter's reach: ENOSYS
	// makes libc fall back to clone, which the filter can read.
	a.jumpIf(unix.BPF_JEQ, unix.SYS_CLONE3, "enosys", "")
	a.jumpIf(unix.BPF_JEQ, unix.SYS_PERSONALITY, "personality", "")
	a.jumpIf(unix.BPF_JEQ, unix.SYS_SOCKET, "socket", "")
	a.jumpIf(unix.BPF_JEQ, unix.SYS_SOCKETPAIR, "socketpair", "")
	for _, c := range refusedCalls {
		a.jumpIf(unix.BPF_JEQ, c.nr, "deny", "")
	}
	a.jumpIf(unix.BPF_JEQ, 0, "allowlist", "allowlist") // always

	a.label("clone")
	a.load(offArg0)
	a.jumpIf(unix.BPF_JSET, cloneNamespaces, "deny", "allow")
	a.label("unshare")
	a.load(offArg0)
	a.jumpIf(unix.BPF_JSET, unshareNamespaces, "deny", "allow")
	a.label("personality")
	a.load(offArg0)
	for _, p := range personalities {
		a.jumpIf(unix.BPF_JEQ, p, "allow", "")
	}
	a.jumpIf(unix.BPF_JEQ, 0, "deny", "deny")
	a.label("socket")
	a.load(offArg0)
	for _, f := range socketFamilies {
		a.jumpIf(unix.BPF_JEQ, f, "allow", "")
	}
	a.jumpIf(unix.BPF_JEQ, unix.AF_NETLINK, "", "nofamily")
	a.load(offArg2)
	a.jumpIf(unix.BPF_JEQ, unix.NETLINK_ROUTE, "allow", "noproto")
	a.label("socketpair")
	a.load(offArg0)
	a.jumpIf(unix.BPF_JEQ, unix.AF_UNIX, "allow", "nofamily")
	a.label("nofamily")
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT))
	a.label("noproto")
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT))
	a.label("deny")
	a.ret(deny)
	a.label("enosys")
	a.ret(enosys)
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)

	// The allow list, in ascending ranges: below a range's first number
	// the call is on none of the later ones either.
	a.label("allowlist")
	for i, r := range callRanges() {
		next, in, out := fmt.Sprintf("next%d", i), fmt.Sprintf("in%d", i), fmt.Sprintf("out%d", i)
		a.jumpIf(unix.BPF_JGT, r[1], next, "")
		a.jumpIf(unix.BPF_JGE, r[0], in, out)
		a.label(in)
		a.ret(unix.SECCOMP_RET_ALLOW)
		a.label(out)
		a.ret(enosys)
		a.label(next)
	}
	a.ret(enosys)
	return a.assemble()
}

// installFilter puts the filter on the calling thread (not the process:
// the init's other threads keep running unfiltered); every process it
// forks inherits it. The thread must have no_new_privs.
func installFilter() error {
	prog, err := filterProgram()
	if err != nil {
		return fmt.Errorf("seccomp filter: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("install seccomp filter: %w", e)
	}
	return nil
}

// asm assembles a BPF program with forward jumps to labels.
type asm struct {
	ins    []unix.SockFilter
	jumps  []jump
	labels map[string]int
}

// jump is a conditional jump of instruction at to the labels jt, jf
// ("" is the next instruction).
type jump struct {
	at     int
	jt, jf string
}

func (a *asm) load(off uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (a *asm) ret(v uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: v})
}

func (a *asm) jumpIf(op uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, jump{at: len(a.ins), jt: jt, jf: jf})
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.ins)
}

func (a *asm) assemble() ([]unix.SockFilter, error) {
	off := func(j jump, l string) (uint8, error) {
		if l == "" {
			return 0, nil
		}
		to, ok := a.labels[l]
		if !ok {
			return 0, fmt.Errorf("no label %q", l)
		}
		d := to - j.at - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("jump from %d to %q (%d) out of range", j.at, l, to)
		}
		return uint8(d), nil
	}
	for _, j := range a.jumps {
		jt, err := off(j, j.jt)
		if err != nil {
			return nil, err
		}
		jf, err := off(j, j.jf)
		if err != nil {
			return nil, err
		}
		a.ins[j.at].Jt, a.ins[j.at].Jf = jt, jf
	}
	return a.ins, nil
}
