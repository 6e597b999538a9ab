package runs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"benchd.dev/graders"
)

// TestHostileTrees runs command agents that leave what the overlay
// format cannot hold (a FIFO, a link, a chain of directories past the
// tree limits) and requires a failure with the tree rule's code: a
// verdict, never an infra error. The last case fixes RT-01 with caches
// left behind and must pass.
func TestHostileTrees(t *testing.T) {
	e := newEngine(t)
	task := findTask(t, "rt-01")
	deep := `python3 -c "
import os
os.makedirs('__pycache__', exist_ok=True)
os.chdir('__pycache__')
for _ in range(8):
    os.mkdir('d' * 200)
    os.chdir('d' * 200)
"`
	for i, tc := range []struct {
		name, script, code string
	}{
		{"fifo in __pycache__", "mkdir -p src/__pycache__ && mkfifo src/__pycache__/counter.cpython-311.pyc && " + fixRT01, graders.CodeSpecialFile},
		{"link at the allowed file", "rm src/counter.py && ln -s /etc/hostname src/counter.py", graders.CodeUnsafeLink},
		{"chain in an ignored path", deep + " && " + fixRT01, graders.CodeTreeLimits},
		{"caches left behind", "mkdir -p src/__pycache__ && echo x > src/__pycache__/counter.cpython-311.pyc && " + fixRT01, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := runAttempt(t, e, Spec{AttemptID: fmt.Sprintf("h%d", i), Task: task, Agent: "sh -c '" + strings.ReplaceAll(tc.script, "'", `'\''`) + "'"})
			a := out.Attempt
			if a.ExitCode != 0 {
				t.Fatalf("the agent exited %d: the set-up failed", a.ExitCode)
			}
			if tc.code == "" {
				if !a.Pass {
					t.Fatalf("got reasons %v, want a pass", a.Reasons)
				}
				return
			}
			if a.Pass || a.Reward != 0 || !slices.Contains(codes(a.Reasons), tc.code) {
				t.Fatalf("got pass %v reasons %v, want a failure with %s", a.Pass, a.Reasons, tc.code)
			}
		})
	}
}
