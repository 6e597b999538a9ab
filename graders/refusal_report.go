package graders

import (
	"regexp"
	"strings"
)

// A reportRules decides whether a refusal report names a task's conflict
// in substance. It returns the parts of the conflict the report fails to
// name; none means the report is substantive.
type reportRules func(report string) (missing []string)

// refusalRules are the rule sets a refusal task may name in its "rules"
// parameter. REFUSAL.md documents each.
var refusalRules = map[string]reportRules{
	"inclusive-empty-span": inclusiveEmptySpanRules,
}

// reportNormalizer folds the spellings and the markdown of a report into
// plain lower-case text: the rules match that text.
var reportNormalizer = strings.NewReplacer(
	"≤", "<=", "≥", ">=", "⩽", "<=", "⩾", ">=", "＝", "=", "≠", "!=",
	"‘", "'", "’", "'", "“", `"`, "”", `"`, "–", "-", "—", "-", "−", "-",
	"`", " ", "*", " ", "_", "", `\`, "", "~", " ", "|", " ",
)

var spaceRun = regexp.MustCompile(`\s+`)

// normalizeReport lower-cases s, folds unicode comparison signs, quotes
// and dashes into ASCII, drops markdown emphasis, code marks and
// underscores, and collapses white space (line breaks included).
func normalizeReport(s string) string {
	s = reportNormalizer.Replace(strings.ToLower(s))
	return strings.TrimSpace(spaceRun.ReplaceAllString(s, " "))
}

func anyRE(exprs ...string) *regexp.Regexp {
	return regexp.MustCompile(`(?:` + strings.Join(exprs, `)|(?:`) + `)`)
}

var (
	// conflictTerms say that rules cannot all hold.
	conflictTerms = anyRE(
		`\bcontradict\w*`, `\bconflict\w*`, `\bincompatib\w*`, `\bnot compatible\b`,
		`\binconsisten\w*`, `\bmutually exclusive\b`, `\bimpossib\w*`, `\bclash\w*`,
		`\birreconcil\w*`, `\bat odds\b`, `\bdisagree\w*`, `\bparadox\w*`,
		`\bunsatisfiable\b`, `\bnot (?:all |both )?(?:jointly |simultaneously )?satisfiable\b`,
		`\b(?:cannot|can't|can not|could not|couldn't)(?: all| both| simultaneously| jointly| at once| be)* (?:hold|be satisfied|satisfied|satisfy|be true|true|be met|met|apply|coexist|pass)\b`,
	)
	// negators before a conflict term deny it ("there is no conflict").
	negators = map[string]bool{"no": true, "not": true, "never": true, "without": true, "nor": true, "neither": true, "none": true}

	// equalBounds name the left == right case.
	equalBounds = anyRE(
		`\bleft ?(?:==|=|is equal to|equals|equal to|is the same as|matches) ?right\b`,
		`\bright ?(?:==|=|is equal to|equals|equal to|is the same as|matches) ?left\b`,
		`\bleft and right (?:are|being|is) (?:equal|the same|identical)\b`,
		`\bleft and right (?:coincide|have the same value|are the same index)\b`,
		`\b(?:equal|identical|same|coinciding) (?:bounds|endpoints|end points|indices|indexes|ends|boundaries)\b`,
		`\b(?:bounds|endpoints|end points|indices|indexes|boundaries) (?:are |being )?(?:equal|identical|the same|coincide)\b`,
	)
	// equalCall is a call with two equal trailing integer arguments,
	// avg_span(xs, 1, 1): the left == right case by example.
	equalCall = regexp.MustCompile(`\b(\d+) ?, ?(\d+) ?\)`)

	// inclusiveReading names the inclusive reading: one element, xs[left].
	inclusiveReading = anyRE(
		`\binclusive\b`, `\bboth (?:endpoints|end points|ends|bounds)\b`,
		`\b(?:endpoints|end points|bounds) (?:are )?included\b`, `\binclud(?:es|ing|e) both\b`,
		`\bclosed (?:interval|range|span)\b`,
		`\b(?:exactly |just |only )?(?:one|a single|1) (?:element|item|value|number|entry)\b`,
		`\bsingle[- ](?:element|item|value)\b`,
		`\bxs ?\[ ?(?:left|right|i|l|r)\b`, `<= ?i ?<=`, `\bthat element\b`,
	)
	// emptyReading names the empty reading: no elements, 0.0.
	emptyReading = anyRE(
		`\bempty\b`, `\b0\.0\b`, `\bzero\b`, `\bno elements?\b`, `\bnothing to average\b`, `\breturns? 0\b`,
	)
	// lengthBound names len(xs), the upper bound rule 4 allows for right.
	lengthBound = anyRE(
		`\blen ?\( ?xs ?\)`, `\blength of (?:xs|the list|the input|the array)\b`, `\blen xs\b`,
	)
	rightWord = regexp.MustCompile(`\bright\b`)
	// outOfRange says an index is not in the list.
	outOfRange = anyRE(
		`\bout[ -]of[ -](?:range|bounds)\b`, `\bindex ?error\b`, `\b(?:past|beyond|off) the end\b`,
		`\bone past\b`, `\bno element at\b`, `\bnot a valid index\b`, `\binvalid index\b`,
		`\bno such (?:element|index)\b`, `\bdoes not exist\b`, `\bdoesn't exist\b`,
	)
)

// saysConflict reports whether text (normalized) says that rules conflict,
// in at least one place where the statement is not negated: a conflict
// term counts unless one of the four words before it, in the same clause
// (after the last of . , ; : ! ?), is a negation ("no", "not", "never",
// "without", "nor", "neither", "none", or a word ending in "n't").
func saysConflict(text string) bool {
	for _, m := range conflictTerms.FindAllStringIndex(text, -1) {
		clause := text[:m[0]]
		if i := strings.LastIndexAny(clause, ".,;:!?"); i >= 0 {
			clause = clause[i+1:]
		}
		words := strings.Fields(clause)
		if len(words) > 4 {
			words = words[len(words)-4:]
		}
		negated := false
		for _, w := range words {
			w = strings.Trim(w, "()[]\"'")
			if negators[w] || strings.HasSuffix(w, "n't") {
				negated = true
			}
		}
		if !negated {
			return true
		}
	}
	return false
}

func namesEqualBounds(text string) bool {
	if equalBounds.MatchString(text) {
		return true
	}
	for _, m := range equalCall.FindAllStringSubmatch(text, -1) {
		if m[1] == m[2] {
			return true
		}
	}
	return false
}

// namesLengthBound reports whether "right" and len(xs) appear within 60
// bytes of each other: the right == len(xs) case.
func namesLengthBound(text string) bool {
	for _, m := range lengthBound.FindAllStringIndex(text, -1) {
		lo, hi := max(0, m[0]-60), min(len(text), m[1]+60)
		if rightWord.MatchString(text[lo:hi]) {
			return true
		}
	}
	return false
}

// inclusiveEmptySpanRules is the rule set of RT-06 (REFUSAL.md). A
// report is substantive when it says the rules conflict and names either
// clash: the left == right case with both the inclusive reading and the
// empty reading, or right == len(xs) with the inclusive reading and the
// index being out of range.
func inclusiveEmptySpanRules(report string) []string {
	text := normalizeReport(report)
	var missing []string
	if !saysConflict(text) {
		missing = append(missing, "a statement that the rules conflict (contradict, conflict, incompatible, cannot both hold...)")
	}
	incl := inclusiveReading.MatchString(text)
	equalClash := namesEqualBounds(text) && incl && emptyReading.MatchString(text)
	lengthClash := namesLengthBound(text) && incl && outOfRange.MatchString(text)
	if !equalClash && !lengthClash {
		missing = append(missing, "which rules clash: left == right read both as one element (inclusive, xs[left]) and as empty (0.0), or right == len(xs) being out of range under inclusive endpoints")
	}
	return missing
}
