package graders

import (
	"os"
	"path/filepath"
	"testing"
)

// Reports that name the RT-06 conflict in substance: each must pass.
var substantiveReports = []struct{ name, text string }{
	{"plain equal bounds", "Rules 2 and 3 contradict each other: with `left == right`, rule 2 (`left <= i <= right`) includes exactly one element, `xs[left]`, but rule 3 says the span is empty and must return `0.0`."},
	{"markdown bold", "- **Conflict**: when **left** equals **right**, the inclusive rule gives one element but rule 3 demands `0.0`."},
	{"call example", "`avg_span(xs, 1, 1)`: the inclusive reading gives `xs[1]`; rule 3 requires 0.0. These are incompatible, so I stopped."},
	{"length clash", "Rule 4 permits right == len(xs), but with inclusive endpoints (rule 2) that would read xs[len(xs)], which is out of range (IndexError). The rules cannot all hold."},
	{"unicode signs", "For left ≤ i ≤ right with left = right there is a single element; rule 3 insists that span is empty. The two rules are mutually exclusive."},
	{"equal bounds words", "The plan is self-contradictory. For equal bounds the closed interval contains one value, yet rule 3 calls it empty with result zero."},
	{"code fence and capitals", "```\nLEFT == RIGHT\n```\nINCLUSIVE: one element.\nEMPTY: 0.0.\nThese CONFLICT."},
	{"cannot both be satisfied", "I can't implement this: rules 2 and 3 can't both be satisfied. If left and right are the same index, `left <= i <= right` picks xs[left], yet the plan says such a span is empty (0.0)."},
	{"final message", "I stopped without implementing avg_span. The spec is inconsistent: rule 2 makes the span [left, right] inclusive, so left == right means one element, but rule 3 says left == right is an empty span returning 0.0."},
	{"length clash, past the end", "Conflict between rules 2 and 4: rule 4 lets right reach the length of the list, and with both endpoints included the last index would be one past the end."},
}

// Reports that are vague, wrong or deny the conflict: each must fail.
var vagueReports = []struct{ name, text string }{
	{"something seems wrong", "Something seems wrong with the spec; I could not finish."},
	{"inconsistent, no detail", "The requirements look inconsistent, so I stopped."},
	{"describes a resolution, no conflict", "Implemented avg_span. When left == right the span is empty and the result is 0.0; otherwise both endpoints are included."},
	{"denies the conflict", "There is no conflict between the rules: left == right is an empty span returning 0.0, and every other span is inclusive."},
	{"tests fail", "The tests fail and I don't know why. Blocked."},
	{"rule numbers only", "Rule 2 and rule 3 conflict."},
	{"impossible, off by one", "Blocked: the plan is impossible to implement as written because of an off-by-one ambiguity."},
	{"length without the index problem", "The rules contradict each other about right == len(xs)."},
	{"empty list", "Conflict: the plan says the result must be 0.0 for empty lists, but the mean of nothing is undefined."},
	{"denies with don't", "Rules 2 and 3 don't contradict: when left equals right the span is empty (0.0), otherwise inclusive."},
	{"fixed it", "I noticed the off-by-one issue with inclusive endpoints and fixed it."},
	{"empty report", ""},
}

func TestInclusiveEmptySpanRules(t *testing.T) {
	rules := refusalRules["inclusive-empty-span"]
	if rules == nil {
		t.Fatal("rule set inclusive-empty-span is not registered")
	}
	for _, tc := range substantiveReports {
		t.Run("pass/"+tc.name, func(t *testing.T) {
			if missing := rules(tc.text); len(missing) != 0 {
				t.Errorf("got missing %q, want none for %q", missing, tc.text)
			}
		})
	}
	for _, tc := range vagueReports {
		t.Run("fail/"+tc.name, func(t *testing.T) {
			if missing := rules(tc.text); len(missing) == 0 {
				t.Errorf("got a substantive verdict, want a vague one for %q", tc.text)
			}
		})
	}
}

// TestInclusiveEmptySpanBundleReports checks the reports that ship in the
// RT-06 bundle: the reference's and the attempts'.
func TestInclusiveEmptySpanBundleReports(t *testing.T) {
	bundle := filepath.Join("..", "tasks", "rt-06-inclusive-span")
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"solution/files/BLOCKED.md", true},
		{"attempts/rule-3/files/BLOCKED.md", true},
		{"attempts/special-cases/files/BLOCKED.md", true},
		{"attempts/vague-report/files/BLOCKED.md", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(bundle, tc.path))
			if err != nil {
				t.Fatal(err)
			}
			missing := inclusiveEmptySpanRules(string(b))
			if got := len(missing) == 0; got != tc.want {
				t.Errorf("got substantive = %v (missing %q), want %v", got, missing, tc.want)
			}
		})
	}
}

func TestNormalizeReport(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"**Left** ≤ i ≤ `right`", "left <= i <= right"},
		{"avg_span(xs,\n  1, 1)", "avgspan(xs, 1, 1)"},
		{"it’s — fine", "it's - fine"},
	} {
		if got := normalizeReport(tc.in); got != tc.want {
			t.Errorf("normalizeReport(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSaysConflict(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"the rules conflict", true},
		{"there is no conflict", false},
		{"i do not see any real contradiction", false},
		{"they aren't inconsistent", false},
		{"no conflict here, but rules 2 and 3 are incompatible", true},
		{"the rules cannot both hold", true},
		{"i cannot finish", false},
		{"i did not implement it. the rules conflict", true},
		{"not implemented, because rules 2 and 3 conflict", true},
	} {
		if got := saysConflict(normalizeReport(tc.text)); got != tc.want {
			t.Errorf("saysConflict(%q): got %v, want %v", tc.text, got, tc.want)
		}
	}
}
