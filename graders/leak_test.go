package graders

import (
	"strings"
	"testing"

	"benchd.dev/tasks"
)

// TestWithholdHidden: a message that names hidden test material is
// replaced, and the original goes to Detail; others are left alone.
func TestWithholdHidden(t *testing.T) {
	byID := map[string]*tasks.Task{}
	for _, id := range []string{"rt-01", "rt-05"} {
		byID[id] = loadRepoTask(t, id)
	}
	// No repository bundle runs hidden pytest tests now: a small one.
	byID["hidden-pytest"], _ = pytestBundle(t, "def test_secret_rule():\n    pass\n", "def f():\n    return 0\n")
	for _, tc := range []struct {
		name     string
		task     string
		msg      string
		withheld bool
	}{
		{"counts only", "rt-01", "the tests did not all pass: 2 failed, 3 passed", false},
		{"public name", "rt-01", "1 failed, public among them: test_counter.py::test_wraps", false},
		{"hidden file", "hidden-pytest", "FAILED test_hid.py::x", true},
		{"checks generator", "rt-01", "as gen_checks.py draws them", true},
		{"hidden test name", "hidden-pytest", "1 failed: test_secret_rule", true},
		{"golden digits", "rt-05", "returned 1, want 137035999177", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := byID[tc.task]
			v := verdictOf("", []Reason{{Code: CodeTestsFailed, Message: tc.msg}}, "")
			if tc.name == "hidden test name" {
				// A test function the hidden file really defines.
				toks := hiddenTokens(task)
				name := ""
				for _, tok := range toks {
					if strings.HasPrefix(tok, "test_") && !strings.HasSuffix(tok, ".py") {
						name = tok
						break
					}
				}
				if name == "" {
					t.Fatalf("no hidden test names among %v", toks)
				}
				v.Reasons[0].Message = "1 failed: " + name
			}
			orig := v.Reasons[0].Message
			withholdHidden(task, &v)
			got := v.Reasons[0].Message
			if tc.withheld {
				if got == orig || !strings.Contains(v.Detail, orig) {
					t.Errorf("message %q, detail %q: want it withheld and in Detail", got, v.Detail)
				}
			} else if got != orig || v.Detail != "" {
				t.Errorf("message %q, detail %q: want %q untouched", got, v.Detail, orig)
			}
		})
	}
}
