package graders

import (
	"testing"

	"benchd.dev/internal/testenv"
	"benchd.dev/tasks"
)

// TestAllBundles grades, for every bundle of the repository, the
// reference solution and every known attempt three times, and requires
// the verdict each expects every time: a pass, a verdict left to review,
// or a failure carrying the expected reason code.
func TestAllBundles(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	all, err := tasks.LoadAll(repoTasks)
	if err != nil {
		t.Fatalf("LoadAll: %v", err)
	}
	if len(all) == 0 {
		t.Fatal("no bundles found")
	}
	for _, task := range all {
		t.Run(task.ID, func(t *testing.T) {
			t.Parallel()
			if len(task.Attempts) < 4 {
				t.Errorf("task %s has %d known attempts, want at least 4", task.ID, len(task.Attempts))
			}
			for _, a := range append([]tasks.Attempt{task.Reference()}, task.Attempts...) {
				t.Run(a.Name, func(t *testing.T) {
					if a.Expect.Confined {
						// Graded under the daemon's confined runner by
						// daemon/runs TestConfinedWorkload and the daemon's
						// tasks check; ExecRunner has no cgroup to measure.
						t.Skip("the verdict needs the confined runner")
					}
					dir := materialize(t, task, a)
					for i := range 3 {
						v := gradeDir(t, task, dir)
						if v.Pass != a.Expect.Pass {
							t.Fatalf("run %d: got pass %v (reasons %v), want pass %v\n%s", i, v.Pass, v.Reasons, a.Expect.Pass, v.Detail)
						}
						if v.Review() != a.Expect.Review() {
							t.Fatalf("run %d: got outcome %s (reasons %v), want review %v\n%s", i, v.Outcome, v.Reasons, a.Expect.Review(), v.Detail)
						}
						if a.Expect.Pass {
							if v.Reward != 1 || len(v.Reasons) != 0 {
								t.Fatalf("run %d: a pass got reward %d, reasons %v; want 1 and none", i, v.Reward, v.Reasons)
							}
							continue
						}
						if v.Reward != 0 {
							t.Errorf("run %d: a failure got reward %d, want 0", i, v.Reward)
						}
						if !v.Has(a.Expect.Code) {
							t.Fatalf("run %d: got codes %v, want %s among them\n%s", i, v.Codes(), a.Expect.Code, v.Detail)
						}
					}
				})
			}
		})
	}
}

// TestEveryKindRegistered checks that every kind a manifest may name has
// a grader, so no bundle can name a kind that only fails at grade time.
func TestEveryKindRegistered(t *testing.T) {
	got := map[string]bool{}
	for _, k := range Kinds() {
		got[k] = true
	}
	for _, k := range tasks.Kinds {
		if !got[k] {
			t.Errorf("kind %q is valid in task.toml but has no registered grader", k)
		}
	}
}
