package graders

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"benchd.dev/tasks"
)

// TestRulesHaveSentences: every reason code a bundle's grader can give
// (runCodes aside) has a row in the bundle's tests/RULES.md, and every
// row's sentence is a sentence of its instruction.md.
func TestRulesHaveSentences(t *testing.T) {
	all, err := tasks.LoadAll(repoTasks)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, task := range all {
		codes, ok := taskCodes(Input{Task: task})
		if !ok {
			continue // a kind that keeps its own table (refusal: REFUSAL.md)
		}
		checked++
		t.Run(task.ID, func(t *testing.T) {
			plan, err := os.ReadFile(task.InstructionPath())
			if err != nil {
				t.Fatal(err)
			}
			rows, err := readRules(filepath.Join(task.TestsDir(), "RULES.md"))
			if err != nil {
				t.Fatal(err)
			}
			text := plainText(string(plan))
			have := map[string]bool{}
			for _, r := range rows {
				have[r.code] = true
				if !strings.Contains(text, plainText(r.sentence)) {
					t.Errorf("rule %s (%s): got sentence %q, which instruction.md does not hold", r.code, r.rule, r.sentence)
				}
			}
			for _, c := range codes {
				if !have[c] {
					t.Errorf("the grader can fail the task with %s, and RULES.md gives it no sentence", c)
				}
			}
		})
	}
	if checked < 5 {
		t.Errorf("checked %d bundles, want rt-01..rt-05 at least", checked)
	}
}

// TestReadRules: the table's rows, and a sentence that is not in the
// text is found missing.
func TestReadRules(t *testing.T) {
	p := filepath.Join(t.TempDir(), "RULES.md")
	os.WriteFile(p, []byte("# x\n\n| code | rule | sentence |\n|---|---|---|\n| a_b | r | Edit only `x.py`. |\n| c | r2 | Not there. |\n"), 0o644)
	rows, err := readRules(p)
	if err != nil || len(rows) != 2 || rows[0].code != "a_b" || rows[0].sentence != "Edit only `x.py`." {
		t.Fatalf("got %+v, %v; want two rows, the first a_b", rows, err)
	}
	text := plainText("- Edit only\n  `x.py`. Then *more*.")
	if !strings.Contains(text, plainText(rows[0].sentence)) || strings.Contains(text, plainText(rows[1].sentence)) {
		t.Errorf("got %q: want the first sentence found across a line break and the second not", text)
	}
}

type ruleRow struct{ code, rule, sentence string }

// readRules reads the rows of a RULES.md table.
func readRules(path string) ([]ruleRow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []ruleRow
	for _, l := range strings.Split(string(b), "\n") {
		cells := strings.Split(strings.TrimSpace(l), "|")
		if len(cells) != 5 || strings.TrimSpace(cells[1]) == "code" || !reasonCodeRE.MatchString(strings.TrimSpace(cells[1])) {
			continue
		}
		rows = append(rows, ruleRow{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])})
	}
	return rows, nil
}

var (
	markupRE = regexp.MustCompile("[`*]|(?m)^\\s*(?:[-*]|\\d+\\.)\\s")
	spaceRE  = regexp.MustCompile(`\s+`)
)

// plainText is markdown as words: no code or emphasis marks, no list
// markers, one space for every run of whitespace.
func plainText(s string) string {
	return strings.TrimSpace(spaceRE.ReplaceAllString(markupRE.ReplaceAllString(s, ""), " "))
}
