package runs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/graders"
	"benchd.dev/internal/testenv"
)

// TestAgentRoot runs a command agent that reads its mount tables and a
// file a task names in [environment] binds: no path of benchd's (state
// directory, task store, grader scratch) is in the tables, the bind is
// there, read-only, and the attempt records it.
func TestAgentRoot(t *testing.T) {
	e := newEngine(t)
	data := t.TempDir()
	os.Chmod(data, 0o755)
	if err := os.WriteFile(filepath.Join(data, "words"), []byte("bound-data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := *findTask(t, "rt-01")
	task.Binds = []string{data}
	script := `cat /proc/self/mountinfo /proc/self/mounts; cat ` + data + `/words; ` +
		`if echo x > ` + data + `/new 2>/dev/null; then echo bind-writable; fi; ls /var /opt /srv 2>&1; true`
	out, _ := runAttempt(t, e, Spec{AttemptID: "r1", Task: &task, Agent: "sh -c '" + script + "'"})
	b, err := os.ReadFile(out.StdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.Contains(text, " /workspace ") || !strings.Contains(text, "bound-data") {
		t.Fatalf("the agent saw no /workspace mount or no bound file:\n%s", text)
	}
	if strings.Contains(text, "bind-writable") {
		t.Error("the task's bind was writable")
	}
	for _, p := range []string{e.cfg.StateDir, e.cfg.TasksDir, e.cfg.ScratchDir} {
		if strings.Contains(text, p) {
			t.Errorf("the agent's mount tables name %s:\n%s", p, text)
		}
	}
	for _, d := range []string{"/var", "/opt", "/srv"} {
		if !strings.Contains(text, "ls: cannot access '"+d+"': No such file or directory") {
			t.Errorf("%s: want it absent in the sandbox; the agent saw:\n%s", d, text)
		}
	}
	if !slices.Equal(out.Attempt.Binds, []string{data}) {
		t.Errorf("got the attempt's binds %q, want [%s], the task's", out.Attempt.Binds, data)
	}
}

// TestGraderFilter: a grader's command, which runs the agent's code,
// gets the agent's system call filter and root: unshare -Ur fails (it
// works on the host as the same uid), /var is not there and /home holds
// only the command's own $HOME.
func TestGraderFilter(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Cgroups, testenv.Netns, testenv.Userns)
	if out, err := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "unshare", "-Ur", "true").CombinedOutput(); err != nil {
		t.Fatalf("control: unshare -Ur as uid 65534 on the host: %v: %s", err, out)
	}
	root := t.TempDir()
	os.Chmod(root, 0o711)
	dir := filepath.Join(root, "g1")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	runner := ConfinedGraderRunner(GraderRunnerConfig{ScratchRoot: root, NetnsRunDir: filepath.Join(t.TempDir(), "netns")})
	res, err := runner.Run(context.Background(), graders.RunSpec{
		Args: []string{"/bin/sh", "-c", "if unshare -Ur true 2>/dev/null; then echo userns-made; fi; ls /var 2>&1; echo home: $(ls /home); true"},
		Dir:  dir, Timeout: 30 * time.Second,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("got %v, exit %d (%s), want success", err, res.ExitCode, res.Stderr)
	}
	out := string(res.Stdout)
	if strings.Contains(out, "userns-made") {
		t.Errorf("a grader command made a user namespace:\n%s", out)
	}
	if !strings.Contains(out, "ls: cannot access '/var': No such file or directory") {
		t.Errorf("/var is in the grader's root:\n%s", out)
	}
	if !strings.Contains(out, "home: agent\n") {
		t.Errorf("got /home other than [agent] in the grader's root:\n%s", out)
	}
}
