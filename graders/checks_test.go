package graders

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"benchd.dev/internal/testenv"
)

// counterFix is a correct RT-01 counter in a style of its own.
const counterFix = `
class CircularCounter:
    def __init__(self, capacity):
        if capacity < 1:
            raise ValueError(capacity)
        self._n, self._v = capacity, 0

    @property
    def value(self):
        return self._v

    def inc(self):
        self._v = (self._v + 1) % self._n
        return self._v
`

// TestChecksSeed: the verdict records the seed of its checks, a given
// seed is kept, and the generator makes other cases for another seed.
func TestChecksSeed(t *testing.T) {
	testenv.Require(t, testenv.Python)
	task := loadRepoTask(t, "rt-01")
	ws := materialize(t, task, task.Reference())
	zero := 0
	for _, seed := range []uint64{0, 42} {
		v, err := Grade(context.Background(), Input{Task: task, Workspace: ws, AgentExit: &zero, ScratchRoot: t.TempDir(), Seed: seed}, ExecRunner{})
		if err != nil {
			t.Fatal(err)
		}
		if !v.Pass || v.Seed == 0 || (seed != 0 && v.Seed != seed) {
			t.Fatalf("seed %d: got pass %v seed %d (reasons %v), want a pass recording the seed", seed, v.Pass, v.Seed, v.Reasons)
		}
	}
	in := Input{Task: task, ScratchRoot: t.TempDir(), Seed: 1}
	a, _, err := generateChecks(context.Background(), in, ExecRunner{}, "gen_checks.py")
	if err != nil {
		t.Fatal(err)
	}
	in.Seed = 2
	b, _, err := generateChecks(context.Background(), in, ExecRunner{}, "gen_checks.py")
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Cases, b.Cases) {
		t.Fatal("seeds 1 and 2 made the same cases")
	}
}

// TestChecksProbe: what the agent's code prints, or writes where the
// probe's answers go, does not decide; its answers do.
func TestChecksProbe(t *testing.T) {
	testenv.Require(t, testenv.Python)
	task := loadRepoTask(t, "rt-01")
	bug, err := os.ReadFile(filepath.Join(task.WorkspaceDir(), "src", "counter.py"))
	if err != nil {
		t.Fatal(err)
	}
	// forge writes a line of answers to every descriptor above stderr
	// (the probe's saved stdout among them) before the probe answers.
	const forge = `
import json as _j, os as _o
for _fd in range(3, 64):
    try:
        _o.write(_fd, (_j.dumps({"results": [[{"value": None}]] * 60}) + "\n").encode())
    except OSError:
        pass
`
	for _, tc := range []struct {
		name, src string
		pass      bool
	}{
		{"a fix that prints", "print('importing')\n" + counterFix + "\nprint('ready')\n", true},
		{"a fix that prints from inc", counterFix + "\n_inc = CircularCounter.inc\nCircularCounter.inc = lambda self: (print('inc'), _inc(self))[1]\n", true},
		{"the bug", string(bug), false},
		{"the bug with forged answers", string(bug) + forge, false},
		{"a fix with forged answers", counterFix + forge, false},
		{"exits at import", string(bug) + "\nimport os\nos._exit(0)\n", false},
		{"fails to import", "raise ImportError('no')\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := materialize(t, task, task.Reference())
			if err := os.WriteFile(filepath.Join(ws, "src", "counter.py"), []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			in := Input{Task: task, Workspace: ws, ScratchRoot: t.TempDir(), Seed: 7}
			rs, detail, err := runChecks(context.Background(), in, ExecRunner{})
			if err != nil {
				t.Fatalf("runChecks: %v", err)
			}
			if got := len(rs) == 0; got != tc.pass {
				t.Fatalf("got pass %v (reasons %v, detail %s), want %v", got, rs, detail, tc.pass)
			}
			for _, r := range rs {
				if r.Code != CodeChecksFailed {
					t.Errorf("got code %s, want %s", r.Code, CodeChecksFailed)
				}
			}
		})
	}
}
