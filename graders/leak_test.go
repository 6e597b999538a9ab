package graders

import (
	"strings"
	"testing"
)

// TestWithholdHidden: a message that names hidden test material is
// replaced, and the original goes to Detail; others are left alone.
func TestWithholdHidden(t *testing.T) {
	rt01 := loadRepoTask(t, "rt-01")
	rt05 := loadRepoTask(t, "rt-05")
	for _, tc := range []struct {
		name     string
		task     string
		msg      string
		withheld bool
	}{
		{"counts only", "rt-01", "the tests did not all pass: 2 failed, 3 passed", false},
		{"public name", "rt-01", "1 failed, public among them: test_counter.py::test_wraps", false},
		{"hidden file", "rt-01", "FAILED test_counter_hidden.py::x", true},
		{"hidden test name", "rt-01", "1 failed: test_modulus_path_hidden", true},
		{"golden digits", "rt-05", "returned 1, want 137035999177", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := rt01
			if tc.task == "rt-05" {
				task = rt05
			}
			v := Verdict{Reasons: []Reason{{CodeTestsFailed, tc.msg}}}
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
