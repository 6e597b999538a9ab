package reason_test

import (
	"testing"

	"benchd.dev/graders"
	"benchd.dev/reason"
	"benchd.dev/tasks"
)

// TestCodesAreTheGradersAndTasks holds the codes that graders and tasks
// still name on their own to this package's.
func TestCodesAreTheGradersAndTasks(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"graders.CodeNeedsReview", graders.CodeNeedsReview, reason.NeedsReview},
		{"tasks.CodeReview", tasks.CodeReview, reason.NeedsReview},
		{"graders.CodeWrongFiles", graders.CodeWrongFiles, reason.WrongFiles},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestTreeRule(t *testing.T) {
	for code, want := range map[string]bool{
		reason.UnsafeLink: true, reason.SpecialFile: true, reason.TreeLimits: true,
		reason.WrongFiles: false, reason.NeedsReview: false, "": false,
	} {
		if got := reason.TreeRule(code); got != want {
			t.Errorf("TreeRule(%q): got %v, want %v", code, got, want)
		}
	}
}
