package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// run interprets the filter's instructions (the few it uses) on one
// struct seccomp_data, as the kernel would, and returns the verdict.
func run(prog []unix.SockFilter, arch, nr uint32, args ...uint64) (uint32, error) {
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	for i, v := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], v)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_RET | unix.BPF_K:
			return in.K, nil
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K,
			unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K:
			var ok bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				ok = acc == in.K
			case unix.BPF_JGE:
				ok = acc >= in.K
			case unix.BPF_JGT:
				ok = acc > in.K
			case unix.BPF_JSET:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			return 0, fmt.Errorf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	return 0, fmt.Errorf("the program ran off its end")
}

// TestFilterProgram checks the filter's verdict on every call it lists
// and on calls it must let through, without installing it.
func TestFilterProgram(t *testing.T) {
	prog, err := filterProgram()
	if err != nil {
		t.Fatal(err)
	}
	const x86 = unix.AUDIT_ARCH_X86_64
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	eafnosupport := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT))
	eprotonosupport := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT))
	type call struct {
		name     string
		arch, nr uint32
		arg0     uint64
		want     uint32
		arg2     uint64
	}
	calls := []call{
		{"read", x86, unix.SYS_READ, 0, allow, 0},
		{"execve", x86, unix.SYS_EXECVE, 0, allow, 0},
		{"ptrace", x86, unix.SYS_PTRACE, 0, allow, 0},
		{"seccomp", x86, unix.SYS_SECCOMP, 0, allow, 0},
		{"fork-like clone", x86, unix.SYS_CLONE, uint64(unix.SIGCHLD), allow, 0},
		{"thread clone", x86, unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID, allow, 0},
		{"clone NEWUSER", x86, unix.SYS_CLONE, unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), eperm, 0},
		{"clone NEWNET", x86, unix.SYS_CLONE, unix.CLONE_NEWNET, eperm, 0},
		{"clone NEWNS", x86, unix.SYS_CLONE, unix.CLONE_NEWNS, eperm, 0},
		{"clone with high bits and NEWUSER", x86, unix.SYS_CLONE, 1<<40 | unix.CLONE_NEWUSER, eperm, 0},
		{"unshare FS", x86, unix.SYS_UNSHARE, unix.CLONE_FS, allow, 0},
		{"unshare NEWUSER", x86, unix.SYS_UNSHARE, unix.CLONE_NEWUSER, eperm, 0},
		{"unshare NEWTIME", x86, unix.SYS_UNSHARE, unix.CLONE_NEWTIME, eperm, 0},
		{"unshare NEWCGROUP", x86, unix.SYS_UNSHARE, unix.CLONE_NEWCGROUP, eperm, 0},
		{"clone3", x86, unix.SYS_CLONE3, 0, enosys, 0},
		{"personality default", x86, unix.SYS_PERSONALITY, 0, allow, 0},
		{"personality query", x86, unix.SYS_PERSONALITY, 0xffffffff, allow, 0},
		{"personality LINUX32", x86, unix.SYS_PERSONALITY, 0x8, allow, 0},
		{"personality ADDR_NO_RANDOMIZE", x86, unix.SYS_PERSONALITY, 0x0040000, eperm, 0},
		{"personality READ_IMPLIES_EXEC", x86, unix.SYS_PERSONALITY, 0x0400000, eperm, 0},
		{"x32 read", x86, x32Bit | unix.SYS_READ, 0, eperm, 0},
		{"x32 mount", x86, x32Bit | unix.SYS_MOUNT, 0, eperm, 0},
		{"i386 ABI", unix.AUDIT_ARCH_I386, 3, 0, eperm, 0},
		{"aarch64 ABI", unix.AUDIT_ARCH_AARCH64, unix.SYS_READ, 0, eperm, 0},
		{"open_tree_attr", x86, unix.SYS_OPEN_TREE_ATTR, 0, eperm, 0},
		{"statmount", x86, unix.SYS_STATMOUNT, 0, enosys, 0},
		{"listmount", x86, unix.SYS_LISTMOUNT, 0, enosys, 0},
		{"listns", x86, unix.SYS_LISTNS, 0, enosys, 0},
		{"lsm_get_self_attr", x86, unix.SYS_LSM_GET_SELF_ATTR, 0, enosys, 0},
		{"modify_ldt", x86, unix.SYS_MODIFY_LDT, 0, enosys, 0},
		{"a number past the table", x86, 1000, 0, enosys, 0},
		{"the number after the last known", x86, unix.SYS_RSEQ_SLICE_YIELD + 1, 0, enosys, 0},
		{"a gap in the table", x86, 400, 0, enosys, 0},
		{"socket AF_UNIX", x86, unix.SYS_SOCKET, unix.AF_UNIX, allow, 0},
		{"socket AF_INET", x86, unix.SYS_SOCKET, unix.AF_INET, allow, 0},
		{"socket AF_INET6", x86, unix.SYS_SOCKET, unix.AF_INET6, allow, 0},
		{"socket AF_NETLINK route", x86, unix.SYS_SOCKET, unix.AF_NETLINK, allow, unix.NETLINK_ROUTE},
		{"socket AF_NETLINK audit", x86, unix.SYS_SOCKET, unix.AF_NETLINK, eprotonosupport, unix.NETLINK_AUDIT},
		{"socket AF_NETLINK uevent", x86, unix.SYS_SOCKET, unix.AF_NETLINK, eprotonosupport, unix.NETLINK_KOBJECT_UEVENT},
		{"socket AF_VSOCK", x86, unix.SYS_SOCKET, unix.AF_VSOCK, eafnosupport, 0},
		{"socket AF_PACKET", x86, unix.SYS_SOCKET, unix.AF_PACKET, eafnosupport, 0},
		{"socket AF_ALG", x86, unix.SYS_SOCKET, unix.AF_ALG, eafnosupport, 0},
		{"socket AF_BLUETOOTH", x86, unix.SYS_SOCKET, unix.AF_BLUETOOTH, eafnosupport, 0},
		{"socket AF_INET in high bits only", x86, unix.SYS_SOCKET, 1<<32 | unix.AF_VSOCK, eafnosupport, 0},
		{"socketpair AF_UNIX", x86, unix.SYS_SOCKETPAIR, unix.AF_UNIX, allow, 0},
		{"socketpair AF_INET", x86, unix.SYS_SOCKETPAIR, unix.AF_INET, eafnosupport, 0},
	}
	// A call on both lists, or one checked by its arguments, would be
	// judged by whichever comes first: none may be.
	special := map[uint32]bool{unix.SYS_CLONE: true, unix.SYS_UNSHARE: true, unix.SYS_CLONE3: true,
		unix.SYS_PERSONALITY: true, unix.SYS_SOCKET: true, unix.SYS_SOCKETPAIR: true}
	for _, c := range refusedCalls {
		special[c.nr] = true
	}
	for _, g := range allowedCalls {
		for _, nr := range g.nrs {
			if special[nr] {
				t.Errorf("call %d of group %s is also refused or checked by its arguments", nr, g.group)
			}
			calls = append(calls, call{fmt.Sprintf("allowed %s %d", g.group, nr), x86, nr, 0, allow, 0})
		}
	}
	// Named here too, so that dropping one from refusedCalls fails.
	for name, nr := range map[string]uint32{"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "keyctl": unix.SYS_KEYCTL,
		"bpf": unix.SYS_BPF, "io_uring_setup": unix.SYS_IO_URING_SETUP, "userfaultfd": unix.SYS_USERFAULTFD, "setns": unix.SYS_SETNS,
		"perf_event_open": unix.SYS_PERF_EVENT_OPEN, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "kexec_load": unix.SYS_KEXEC_LOAD,
		"init_module": unix.SYS_INIT_MODULE, "pivot_root": unix.SYS_PIVOT_ROOT, "fsopen": unix.SYS_FSOPEN, "add_key": unix.SYS_ADD_KEY} {
		calls = append(calls, call{"named " + name, x86, nr, 0, eperm, 0})
	}
	for _, c := range refusedCalls {
		calls = append(calls, call{c.name, x86, c.nr, 0, eperm, 0})
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			got, err := run(prog, c.arch, c.nr, c.arg0, 0, c.arg2)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got verdict %#x, want %#x", got, c.want)
			}
		})
	}
	n := 0
	for _, g := range allowedCalls {
		n += len(g.nrs)
	}
	t.Logf("%d instructions, %d calls allowed (in %d ranges), %d refused outright", len(prog), n, len(callRanges()), len(refusedCalls))
}
