package tasks

import (
	"os"
	"testing"
)

// TestRepoBundles loads every bundle shipped in this directory and checks
// what needs no Python: each bundle is valid, has a real plan, a
// non-empty solution, at least four known attempts each with a note, and
// at least one known attempt that must fail.
func TestRepoBundles(t *testing.T) {
	all, err := LoadAll(".")
	if err != nil {
		t.Fatalf("LoadAll: %v", err)
	}
	if len(all) < 3 {
		t.Fatalf("got %d bundles, want at least the 3 of rt-01..rt-03", len(all))
	}
	for _, task := range all {
		t.Run(task.ID, func(t *testing.T) {
			if got := len(task.Attempts); got < 4 {
				t.Errorf("got %d attempts, want at least 4", got)
			}
			fails := 0
			for _, a := range task.Attempts {
				if !a.Expect.Pass {
					fails++
				}
				if a.Note == "" {
					t.Errorf("attempt %s has no note", a.Name)
				}
			}
			if fails == 0 {
				t.Error("no known attempt fails: the bundle proves nothing about the grader")
			}
			b, err := os.ReadFile(task.InstructionPath())
			if err != nil || len(b) < 100 {
				t.Errorf("plan %s: %d bytes, err %v; want a real plan", task.InstructionPath(), len(b), err)
			}
			entries, err := os.ReadDir(task.SolutionDir())
			if err != nil || len(entries) == 0 {
				t.Errorf("solution/files is empty (err %v)", err)
			}
		})
	}
}
