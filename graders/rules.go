package graders

import (
	"sort"
)

// The instruction is the contract: every rule a grader applies to a task
// is traceable to a sentence of the task's instruction.md. Each bundle
// keeps the table in tests/RULES.md, one row per rule:
//
//	| code | rule | sentence |
//	|---|---|---|
//	| wrong_files | only src/counter.py may change | Edit only `src/counter.py`. |
//
// where the sentence is quoted from instruction.md (markdown and line
// breaks aside), and TestRulesHaveSentences fails when a code the task's
// grader can give has no row, or a row's sentence is not in the
// instruction.

// runCodes are the rules of the run rather than of the task: how an
// attempt ended (its exit, its time limit), what the view and the copy
// refuse for every task (its caps, links, special files, sizes) and the
// grader's own failures. They hold for every task alike, are stated in
// docs/design.md ("Grading"), and no instruction repeats them.
var runCodes = []string{
	CodeAgentExit, CodeTimeout, CodeCap, CodeGraderOOM, CodeNoReward,
	CodeUnsafeLink, CodeSpecialFile, CodeTreeLimits, CodeGraderTimeout, CodeNeedsReview,
}

// taskRules are the shared rules that each instruction states in its own
// words: which files may change, the standard library only, and no
// network unless the task allows it.
var taskRules = []string{CodeWrongFiles, CodeNonStdlib, CodeNetwork}

// kindCodes are the reason codes each kind gives, besides the shared
// ones and those its parameters name (codes, checks_poisoned_code).
var kindCodes = map[string][]string{
	"pytest":   {CodeTestsFailed},
	"dual-run": {CodeTestsFailReference, CodeBugNotCaught, CodeTestsDetectFile},
	"workload": {CodeWorkloadWrong, CodeMemoryCap, CodeTimeCap, CodeForbiddenModule},
	"exact":    {CodeImportError, CodeCallError, CodeWrongType, CodeWrongValue, CodeCallNetwork},
}

// taskCodes lists the codes in's task can fail with that its
// instruction must state (runCodes left out), sorted; ok is false for a
// kind without a table here.
func taskCodes(in Input) (codes []string, ok bool) {
	kc, ok := kindCodes[in.Task.Grader.Kind]
	if !ok {
		return nil, false
	}
	set := map[string]bool{}
	for _, c := range append(append([]string{}, taskRules...), kc...) {
		set[c] = true
	}
	if !in.Task.AllowInternet {
		set[CodeNetwork] = true
	} else {
		delete(set, CodeNetwork)
	}
	if gen, _ := paramString(in, "checks", ""); gen != "" {
		set[CodeChecksFailed] = true
	}
	if c, _ := paramString(in, "checks_poisoned_code", ""); c != "" {
		set[c] = true
	}
	byTest, _ := paramCodes(in, "codes")
	for c := range byTest {
		set[c] = true
	}
	for _, c := range runCodes {
		delete(set, c)
	}
	out := sortedKeys(set)
	sort.Strings(out)
	return out, true
}
