package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

// A second benchd on a state directory another benchd owns refuses to
// start, naming the owner's pid, and changes nothing: the first one's
// running attempt keeps running, and no socket is made.
func TestStateDirOneOwner(t *testing.T) {
	require(t)
	first := startDaemon(t, newDaemonDir(t))
	defer func() {
		first.stopBounded(t)
		os.RemoveAll(first.dir)
	}()
	id := startEditing(t, first)

	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "benchd.sock")
	out, err := exec.Command(benchdBin, "--socket", socket, "--state", first.state, "--tasks", tasksDir).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("second benchd on the same state directory: got %v, want exit status 1\n%s", err, out)
	}
	want := fmt.Sprintf("in use by another benchd (pid %d holds", first.cmd.Process.Pid)
	if !strings.Contains(string(out), want) {
		t.Errorf("second benchd's error: got %q, want it to contain %q", out, want)
	}
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Errorf("second benchd's socket: got %v, want none made", err)
	}
	a, err := first.client.Attempt(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != apitype.StateRunning {
		t.Errorf("first benchd's attempt after the second's start: got state %s, want %s", a.State, apitype.StateRunning)
	}
	// The lock ends with its owner: once the first has stopped, a benchd
	// on the same directory starts.
	first.stopBounded(t)
	second := startDaemon(t, dir, "--state", first.state)
	second.stopBounded(t)
}
