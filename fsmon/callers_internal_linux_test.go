package fsmon

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestCallers: a thread is named by its process and its command name
// as it is at each operation (a rename shows at once), and a thread
// that is gone keeps its id and gets no name, though the table kept its
// descriptors.
func TestCallers(t *testing.T) {
	var c callers
	defer c.close()

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := uint32(unix.Gettid())
	pid, name := c.process(tid)
	if pid != uint32(os.Getpid()) || name == "" {
		t.Fatalf("this thread: got %d %q, want %d and its name", pid, name, os.Getpid())
	}
	old := name
	if err := setThreadName("renamed-thread"); err != nil {
		t.Fatal(err)
	}
	defer setThreadName(old)
	if pid, name := c.process(tid); pid != uint32(os.Getpid()) || name != "renamed-thread" {
		t.Errorf("after a rename: got %d %q, want %d %q", pid, name, os.Getpid(), "renamed-thread")
	}

	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := uint32(cmd.Process.Pid)
	if pid, name := c.process(child); pid != child || name != "sleep" {
		t.Errorf("child: got %d %q, want %d %q", pid, name, child, "sleep")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if pid, name := c.process(child); pid != child || name != "" {
		t.Errorf("child gone: got %d %q, want %d and no name", pid, name, child)
	}
}

// setThreadName sets the calling thread's command name.
func setThreadName(name string) error {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	return unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0)
}
