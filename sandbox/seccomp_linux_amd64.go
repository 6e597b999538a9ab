package sandbox

import (
	"fmt"
	"runtime"
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

// refusedCalls answer EPERM whatever their arguments.
var refusedCalls = []struct {
	nr   uint32
	name string
}{
	// The mount API, old and new.
	{unix.SYS_MOUNT, "mount"}, {unix.SYS_UMOUNT2, "umount2"}, {unix.SYS_PIVOT_ROOT, "pivot_root"},
	{unix.SYS_CHROOT, "chroot"}, {unix.SYS_MOVE_MOUNT, "move_mount"}, {unix.SYS_OPEN_TREE, "open_tree"},
	{unix.SYS_FSOPEN, "fsopen"}, {unix.SYS_FSCONFIG, "fsconfig"}, {unix.SYS_FSMOUNT, "fsmount"},
	{unix.SYS_FSPICK, "fspick"}, {unix.SYS_MOUNT_SETATTR, "mount_setattr"},
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

// filterProgram assembles the agent's filter.
func filterProgram() ([]unix.SockFilter, error) {
	var a asm
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
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
	for _, c := range refusedCalls {
		a.jumpIf(unix.BPF_JEQ, c.nr, "deny", "")
	}
	a.ret(unix.SECCOMP_RET_ALLOW)

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
	a.label("deny")
	a.ret(deny)
	a.label("enosys")
	a.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
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
