package reportjudge

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Codes of a judgement that is not a pass.
const (
	CodeNoReport      = "no_report"              // the report is empty
	CodeVague         = "report_vague"           // the report does not show a clash in substance
	CodeWrongConflict = "report_wrong_conflict"  // the conflict the report names is not one of the task's
	CodeDenies        = "report_denies_conflict" // the report says the rules do not conflict
	CodeReview        = "needs_review"           // the judge is not confident either way
)

// Outcomes of a judgement.
const (
	Pass   = "pass"
	Fail   = "fail"
	Review = "review"
)

// Judgement is what the judge decided, and why: Code is the reason
// code of a failure (CodeVague, CodeWrongConflict,
// CodeDenies) or CodeReview; Why is a sentence for the reason's
// message, in the judge's own words.
type Judgement struct {
	Outcome string
	Code    string
	Why     string
	Clash   string // the clash the report shows, when it shows one
}

// reportRuleSet is a task's rule set (tests/report_rules.toml in RT-06).
// Every phrase is a regular expression matched against the normalized
// report (lower case, markdown marks dropped; see Normalize).
type reportRuleSet struct {
	// Rules are the plan's numbered rules; Names are phrases that name a
	// rule by its content ("the inclusive rule").
	Rules []struct {
		Number int      `toml:"number"`
		Names  []string `toml:"names"`
	} `toml:"rule"`
	// Readings are what one rule makes of a case ("one element", "empty").
	Readings []struct {
		ID      string   `toml:"id"`
		Rule    int      `toml:"rule"`
		Phrases []string `toml:"phrases"`
	} `toml:"reading"`
	// Clashes are the real conflicts of the task: a case (the input on
	// which rules disagree) and the two readings that disagree there.
	Clashes []struct {
		ID       string   `toml:"id"`
		About    string   `toml:"about"`
		Case     []string `toml:"case"`
		Readings []string `toml:"readings"`
		// EqualArgs: a call whose last two integer arguments are equal,
		// f(xs, 1, 1), names the case too.
		EqualArgs bool `toml:"equal_args"`
		// LenArg: a call on a literal list whose right bound is the
		// list's length, f([1.0, 2.0], 0, 2), names the case too.
		LenArg bool `toml:"len_arg"`
	} `toml:"clash"`
	// Decoys are topics on which the task's rules do not clash: a report
	// whose conflict is about one of them names no real clash.
	Decoys []string `toml:"decoys"`
}

// Rules is a rule set ready to match.
type Rules struct {
	ruleNames map[int][]*regexp.Regexp
	readings  map[string]compiledReading
	clashes   []compiledClash
	decoys    []*regexp.Regexp
}

type compiledReading struct {
	id      string
	rule    int
	phrases []*regexp.Regexp
}

type compiledClash struct {
	id, about string
	cases     []*regexp.Regexp
	equalArgs bool
	lenArg    bool
	a, b      compiledReading
}

// Load reads and compiles a rule set file.
func Load(path string) (*Rules, error) {
	var rs reportRuleSet
	md, err := toml.DecodeFile(path, &rs)
	if err != nil {
		return nil, fmt.Errorf("rule set: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("rule set: unknown key %s", und[0])
	}
	return compileReportRules(rs)
}

func compilePhrases(what string, ps []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(ps))
	for _, p := range ps {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("rule set: %s: %w", what, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func compileReportRules(rs reportRuleSet) (*Rules, error) {
	c := &Rules{ruleNames: map[int][]*regexp.Regexp{}, readings: map[string]compiledReading{}}
	for _, r := range rs.Rules {
		res, err := compilePhrases(fmt.Sprintf("rule %d", r.Number), r.Names)
		if err != nil {
			return nil, err
		}
		c.ruleNames[r.Number] = res
	}
	for _, r := range rs.Readings {
		if _, ok := c.ruleNames[r.Rule]; !ok {
			return nil, fmt.Errorf("rule set: reading %s: no rule %d", r.ID, r.Rule)
		}
		res, err := compilePhrases("reading "+r.ID, r.Phrases)
		if err != nil {
			return nil, err
		}
		c.readings[r.ID] = compiledReading{id: r.ID, rule: r.Rule, phrases: res}
	}
	for _, cl := range rs.Clashes {
		if len(cl.Readings) != 2 {
			return nil, fmt.Errorf("rule set: clash %s: want two readings, got %d", cl.ID, len(cl.Readings))
		}
		a, okA := c.readings[cl.Readings[0]]
		b, okB := c.readings[cl.Readings[1]]
		if !okA || !okB {
			return nil, fmt.Errorf("rule set: clash %s: unknown reading in %v", cl.ID, cl.Readings)
		}
		if a.rule == b.rule {
			return nil, fmt.Errorf("rule set: clash %s: both readings are rule %d's", cl.ID, a.rule)
		}
		cases, err := compilePhrases("clash "+cl.ID, cl.Case)
		if err != nil {
			return nil, err
		}
		c.clashes = append(c.clashes, compiledClash{id: cl.ID, about: cl.About, cases: cases, equalArgs: cl.EqualArgs, lenArg: cl.LenArg, a: a, b: b})
	}
	if len(c.clashes) == 0 {
		return nil, fmt.Errorf("rule set: no clash")
	}
	d, err := compilePhrases("decoys", rs.Decoys)
	if err != nil {
		return nil, err
	}
	c.decoys = d
	return c, nil
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// reportNormalizer folds the spellings and the markdown of a report into
// plain lower-case text. Table bars and line breaks stay: they are
// structure.
var reportNormalizer = strings.NewReplacer(
	"≤", "<=", "≥", ">=", "⩽", "<=", "⩾", ">=", "＝", "=", "≠", "!=", "→", "->", "⇒", "->",
	"‘", "'", "’", "'", "“", `"`, "”", `"`, "–", "-", "—", " - ", "−", "-",
	"∅", " empty ", `\emptyset`, " empty ", `\varnothing`, " empty ", "`", " ", "**", " ", "__", " ", `\`, "", "~", " ", "\t", " ",
)

var (
	spaceRun   = regexp.MustCompile(`[ ]+`)
	listMarkRE = regexp.MustCompile(`^(?:[-*+]|\d+[.)]|#+)\s+`)
	tableSepRE = regexp.MustCompile(`^\|?[\s:|-]+\|?$`)
	// labelLineRE: a line that opens with a short label and a colon
	// ("rule 2: ...", "reading b: ...") is an item of its own, as a list
	// item is, even without a blank line before it.
	labelLineRE = regexp.MustCompile(`^[a-z][\w #.-]{0,24}:\s`)
	// A sentence ends at . ! ? followed by a space, not inside a number.
	sentenceEndRE = regexp.MustCompile(`([.!?])(?:\s+|$)`)
)

// Normalize lower-cases s, folds unicode comparison signs, arrows,
// quotes and dashes into ASCII, drops markdown emphasis and code marks,
// and collapses runs of spaces; line breaks stay.
//
// JSON and YAML are first rendered as one "key: value" paragraph per leaf
// (structured), and other languages read through the lexicon into the
// words the phrases use (translate).
func Normalize(s string) string {
	s = reportNormalizer.Replace(translate(strings.ToLower(structured(s))))
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.ReplaceAll(l, "*", " ")
		l = strings.ReplaceAll(l, "_", "")
		lines = append(lines, strings.TrimSpace(spaceRun.ReplaceAllString(l, " ")))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// A reportSentence is one sentence of the report (a table row is one),
// split into clauses.
type reportSentence struct {
	text     string
	clauses  []string
	question bool
	contrast bool // two clauses joined by but, yet, whereas, while, vs...
	table    bool
}

// clauseSplitRE splits a sentence into clauses: at ; and at a comma, dash
// or conjunction. Contrast connectors are remembered.
var clauseSplitRE = regexp.MustCompile(`;|,\s|\s-\s|\s(?:but|yet|whereas|while|whilst|however|although|though|vs\.?|versus|instead|and|so|because|since|or)\s`)
var contrastRE = regexp.MustCompile(`\b(?:but|yet|whereas|while|whilst|however|although|though|vs\.?|versus|instead|on the other hand|other one|the other)\b`)

// splitReport turns normalized text into sentences: paragraphs are runs
// of lines (a list item or heading starts a new one); each table row is
// a sentence of its own.
func splitReport(text string) []reportSentence {
	var out []reportSentence
	var para []string
	flush := func() {
		if len(para) == 0 {
			return
		}
		p := strings.Join(para, " ")
		para = nil
		last := 0
		for _, m := range sentenceEndRE.FindAllStringSubmatchIndex(p, -1) {
			// A dot between digits (0.0) or in "e.g." is not an end.
			if p[m[2]] == '.' && m[2] > 0 && m[2]+1 < len(p) && isDigit(p[m[2]-1]) && isDigit(p[m[2]+1]) {
				continue
			}
			out = append(out, makeSentence(p[last:m[1]], p[m[2]] == '?', false))
			last = m[1]
		}
		if strings.TrimSpace(p[last:]) != "" {
			out = append(out, makeSentence(p[last:], false, false))
		}
	}
	var header []string // the current table's header cells
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "|") {
			header = nil
		}
		switch {
		case l == "" || strings.HasPrefix(l, "```"):
			flush()
		case strings.HasPrefix(l, "|"):
			flush()
			if tableSepRE.MatchString(l) {
				continue
			}
			cells := tableCells(l)
			row := strings.Join(cells, " ")
			s := reportSentence{text: row, clauses: []string{row}, table: true, question: strings.HasSuffix(row, "?")}
			// Each cell also reads with its column's header: a header
			// "rule 2 says" over a cell "4.0" says that rule 2 gives 4.0.
			if header == nil {
				header = cells
			} else {
				for i, c := range cells {
					if i < len(header) && header[i] != "" && c != "" {
						s.clauses = append(s.clauses, header[i]+" "+c)
					}
				}
			}
			out = append(out, s)
			continue
		case listMarkRE.MatchString(l), labelLineRE.MatchString(l):
			flush()
			para = append(para, listMarkRE.ReplaceAllString(l, ""))
		default:
			para = append(para, l)
		}
	}
	flush()
	return out
}

// tableCells splits a table row into its trimmed cells.
func tableCells(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	l = strings.TrimSuffix(l, "|")
	var cells []string
	for _, c := range strings.Split(l, "|") {
		cells = append(cells, strings.TrimSpace(c))
	}
	return cells
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func makeSentence(s string, question, table bool) reportSentence {
	s = strings.TrimSpace(s)
	rs := reportSentence{text: s, question: question, table: table}
	rs.contrast = contrastRE.MatchString(s)
	// Split outside brackets only: [4.0, 6.0] and f(a, b) stay whole.
	depth, last := 0, 0
	var parts []string
	masked := []byte(s)
	for i := range masked {
		switch masked[i] {
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			if depth > 0 {
				depth--
			}
		default:
			if depth > 0 {
				masked[i] = 'x'
			}
		}
	}
	// "rules 2 and 3" stays whole too.
	for _, m := range ruleRefRE.FindAllIndex(masked, -1) {
		for i := m[0]; i < m[1]; i++ {
			if masked[i] == ' ' || masked[i] == ',' {
				masked[i] = '_'
			}
		}
	}
	for _, m := range clauseSplitRE.FindAllIndex(masked, -1) {
		parts = append(parts, s[last:m[0]])
		last = m[1]
	}
	parts = append(parts, s[last:])
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			rs.clauses = append(rs.clauses, p)
		}
	}
	return rs
}

// Claims: what a clause says about whether rules can both hold.
const (
	claimNone = iota
	claimConflict
	claimDenial
	claimHedged
)

var (
	// conflictRE: the clause says the rules cannot all hold. Negative
	// words inside these are part of the claim ("cannot both hold", "no
	// code can meet both", "never both hold").
	conflictRE = regexp.MustCompile(`\bdifferent (?:things|results|answers|values|outputs)\b|\bin tension\b|\btension between\b|` +
		`\b(?:contradict\w*|conflict\w*|incompatib\w*|not compatible|inconsisten\w*|mutually exclusive|clash\w*|at odds|irreconcil\w*|paradox\w*|unsatisfiable|impossib\w*|ambigu\w*|disagree\w*|opposite)\b|` +
		`\b(?:cannot|can't|can ?not|could not|couldn't|never|won't|will not|no (?:code|implementation|function|single \w+|reading|value|way|answer))\b[^.;]{0,40}?\b(?:hold|satisf\w*|true|met|meet|pass|apply|coexist|reconcil\w*|agree|work|both|all|together|at once|simultaneously)\b|` +
		`\bonly one of (?:them|those|these|the two|the rules|both)\b|\bnot both\b|\bno way (?:around|to)\b|\bnot possible\b|\bpull in opposite|\b(?:don't|do not|can't|cannot|fail to) see (?:how|a way|any way)\b|\bmust both\b[^.;]{0,30}\bimpossible\b|` +
		`\b(?:conflict|contradiction|contradictory|clash|inconsistent|impossible)\s*[:=]\s*(?:true|yes)\b|\b(?:both|all) ?(?:hold|satisfiable|possible)\s*[:=]\s*(?:false|no)\b|\b(?:consistent|compatible|satisfiable|implementable)\s*[:=]\s*(?:false|no)\b`)
	// denialRE: the clause denies a conflict. Each reads a whole phrase,
	// so "no way around the contradiction" is no denial.
	denialRE = regexp.MustCompile(`\b(?:no|not any|not a|without any|without a|free of|zero)\s+(?:(?:real|actual|genuine|true|apparent|obvious|big|such|further)\s+)*(?:conflicts?|contradictions?|clash(?:es)?|inconsistenc(?:y|ies)|incompatibilit(?:y|ies)|ambiguit(?:y|ies))\b|` +
		`\b(?:don't|do not|doesn't|does not|didn't|did not|never)\s+(?:really\s+|actually\s+|truly\s+)?(?:conflict|contradict|clash|disagree)\b|` +
		`\b(?:isn't|aren't|wasn't|weren't|is not|are not|was not|were not|'s not|'re not)\s+(?:really\s+|actually\s+|truly\s+)?(?:a\s+|in\s+)?(?:contradictory|inconsistent|incompatible|mutually exclusive|at odds|conflict|ambiguous|contradiction)\b|` +
		`\b(?:are|is)\s+(?:fully\s+|perfectly\s+|entirely\s+)?(?:consistent|compatible|reconcilable)\b|` +
		`\bcan (?:all |both )?(?:hold|be satisfied|coexist|be reconciled)\b|` +
		`\b(?:conflict|contradiction|clash)\s*[:=]\s*(?:false|no|none)\b|\b(?:consistent|compatible)\s*[:=]\s*(?:true|yes)\b`)
	// negatedBeRE: "are not / aren't" right before a conflict adjective,
	// for denialRE's first arm when the negation came first.
	negatedBeRE = regexp.MustCompile(`\b(?:isn't|aren't|wasn't|weren't|is not|are not|was not|were not|'s not|'re not)\s+(?:really\s+|actually\s+)?(?:contradictory|inconsistent|incompatible|in conflict|at odds|mutually exclusive|ambiguous)\b`)
	// opinionDenialRE: "I don't think / I do not see" before a conflict
	// word in the same clause denies it.
	opinionDenialRE = regexp.MustCompile(`\b(?:don't|do not|didn't|did not|doesn't|does not)\s+(?:think|believe|see|find|consider|notice|spot)\b`)
	seeHowRE        = regexp.MustCompile(`\b(?:don't|do not|can't|cannot|fail to) see (?:how|a way|any way)\b`)
	// hedgeRE weakens a claim in its clause.
	hedgeRE = regexp.MustCompile(`\b(?:looks? like|look as if|on the surface|might|may|maybe|perhaps|possibly|not sure|unsure|could be|potential(?:ly)?|i guess|seems? to|appears? to|at first (?:glance|sight))\b`)
)

// claimOf classifies one clause.
func claimOf(c string) int {
	conflict := conflictRE.FindStringIndex(c)
	if conflict == nil {
		// "it's not contradictory" has no conflict word of its own once
		// the negation is read: denialRE covers it.
		if denialRE.MatchString(c) || negatedBeRE.MatchString(c) {
			return claimDenial
		}
		return claimNone
	}
	if seeHowRE.MatchString(c) {
		return claimConflict // "i don't see how both can hold"
	}
	if negatedBeRE.MatchString(c) {
		return claimDenial
	}
	if m := denialRE.FindStringIndex(c); m != nil {
		return claimDenial
	}
	if m := opinionDenialRE.FindStringIndex(c); m != nil && m[0] < conflict[0] {
		return claimDenial
	}
	if hedgeRE.MatchString(c) {
		return claimHedged
	}
	return claimConflict
}

var (
	// ruleRefRE: "rule 2", "rules 2 and 3", "requirement #4", "(2)/(3)".
	ruleRefRE  = regexp.MustCompile(`\b(?:rules?|requirements?|reqs?|points?|items?|steps?|constraints?|bullets?|conditions?|clauses?|numbers?|nos?\.?)\s*#?\s*(\d+)\b((?:\s*(?:,|and|&|/|or|vs\.?|versus|\+)\s*(?:rules?\s*|#)?\d+\b)*)|#(\d+)\b|\br(\d)\b`)
	ruleTailRE = regexp.MustCompile(`\d+`)
	ordinalRE  = regexp.MustCompile(`\b(first|second|third|fourth|fifth|1st|2nd|3rd|4th|5th)\b(?:\s*(?:and|&|,|/)\s*(?:the\s+)?(first|second|third|fourth|fifth|1st|2nd|3rd|4th|5th))?\s+(?:rules?|requirements?|points?|items?|conditions?|constraints?|bullets?|lines?)\b`)
	ordinals   = map[string]int{"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5}
	// anaphorRE: "the first / the second / the former / the latter"
	// referring back to rules or readings just named.
	anaphorRE = regexp.MustCompile(`\b(?:the (?:first|second|former|latter|other)|one reading|one rule|one interpretation)\b(\s+\w+)?`)
	// predicateRE: the clause states something (a verb or an arrow).
	predicateRE = regexp.MustCompile(`\b(?:says?|said|gives?|giving|returns?|returning|yields?|means?|requires?|demands?|wants?|expects?|is|are|be|being|selects?|includes?|including|included|contains?|picks?|keeps?|makes?|reads?|allows?|permits?|treats?|calls?|has|have|averages?|must|should|would|will|becomes?|produces?|get|gets|lets?|asks?|reach(?:es)?|there is|there are|exists?|does|do|did|doesn't|don't|lies|falls|insists?|defines?|states?|puts?|takes?|counts?|covers?|ends?|goes|runs?|hits?|raises?|lands?|fails?|passes|points?|refers?)\b|->|=>`)
	// resultRE: a number a rule or call gives.
	resultRE    = regexp.MustCompile(`(?:\b(?:gives?|giving|returns?|returning|yields?|expects?|wants?|must be|should be|would be|is|be|be both|both|of|to|equals?|result|mean|average|answer|value)\s*:?\s*|\)\s*==\s*|\)\s*:\s*|->\s*|=>\s*|^)(-?\d+(?:\.\d+)?)\b`)
	equalArgsRE = regexp.MustCompile(`[(\[](?:[^()\[\]]*,|\[[^\[\]]*\]\s*,)?\s*(-?\d+|[a-z]\w*)\s*(?:,|\.\.)\s*(-?\d+|[a-z]\w*)\s*[)\]]`)
)

// ruleRefs lists the rule numbers a clause names by number or ordinal,
// and by content under the rule set.
func (c *Rules) ruleRefs(s string) (byNumber, byContent map[int]bool) {
	byNumber, byContent = map[int]bool{}, map[int]bool{}
	for _, m := range ruleRefRE.FindAllStringSubmatch(s, -1) {
		for _, g := range []string{m[1], m[3], m[4]} {
			if n, err := strconv.Atoi(g); err == nil {
				byNumber[n] = true
			}
		}
		for _, d := range ruleTailRE.FindAllString(m[2], -1) {
			if n, err := strconv.Atoi(d); err == nil {
				byNumber[n] = true
			}
		}
	}
	for _, m := range ordinalRE.FindAllStringSubmatch(s, -1) {
		byNumber[ordinals[m[1]]] = true
		if m[2] != "" {
			byNumber[ordinals[m[2]]] = true
		}
	}
	for n, names := range c.ruleNames {
		if matchAny(names, s) {
			byContent[n] = true
		}
	}
	return byNumber, byContent
}

func hasAnaphor(s string) bool {
	for _, m := range anaphorRE.FindAllStringSubmatch(s, -1) {
		next := strings.TrimSpace(m[1])
		if next == "element" || next == "index" || next == "item" || next == "value" || next == "elements" {
			continue
		}
		return true
	}
	return false
}

// clauseFacts is what one clause says.
type clauseFacts struct {
	sent      int
	text      string
	numbers   map[int]bool // rules named by number
	rules     map[int]bool // rules named by number or content
	readings  map[string]bool
	anaphor   bool
	predicate bool
	results   []string
	claim     int
	decoy     bool
	// leadsIn: the clause is a lead-in naming a rule ("under rule 2",
	// "per rule 4"); the clause after it speaks for that rule.
	leadsIn bool
}

// settleRE: a sentence that says which rule holds, or that one is a
// case of the other: the rules then do not conflict for the writer.
var settleRE = regexp.MustCompile(`\b(?:is|as) (?:just |simply |merely )?(?:an? |the )?(?:exception|special case|refinement) (?:to|of)\b|\b(?:overrides|takes precedence over|wins over|supersedes)\b|\bthere is no real (?:problem|issue)\b`)

// resolveRE: a sentence that ships one reading ("I implemented...",
// "otherwise both ends are included").
var resolveRE = regexp.MustCompile(`\b(?:otherwise|i(?:'ve| have)? (?:implemented|chose|went with|picked|decided|handled?|special[- ]cased|treat(?:ed)?)|i return|so i return|special[- ]cased?|is treated as)\b`)

// whichOneRE: a question that asks which of the readings just given is
// meant ("which of the two is right?").
var whichOneRE = regexp.MustCompile(`\bwhich (?:of (?:the|these|those|both) (?:two|rules|readings|options)?|one|rule|reading|interpretation|convention|behaviou?r|is (?:meant|intended|right|correct|wanted))\b`)

// concernRE: a worry that stops short of a claim.
var concernRE = regexp.MustCompile(`\b(?:odd|strange|weird|suspicious|off|problem\w*|issue|unclear|confusing|puzzl\w*|wrong)\b`)

// pointerRE: a report that sends the reader elsewhere for its substance.
var pointerRE = regexp.MustCompile(`\bsee (?:the )?(?:comments?|docstring|notes?|explanation)?\b[^.]{0,30}\b[\w/]+\.(?:py|md|txt)\b|\bsee (?:the )?(?:comments?|docstring) (?:in|at|of)\b`)

// shippedRE: the writer says they resolved the clash in code.
var shippedRE = regexp.MustCompile(`\bi(?:'ve| have)? (?:implemented|resolved|chose|went with|picked|decided|shipped)\b|\b(?:so )?i return\b`)

// askRE: a question that asks which reading is meant.
var askRE = regexp.MustCompile(`\b(?:which|should|what|meant|intended|wins?|prefer\w*|take precedence|priority|or)\b`)

// leadInRE opens a clause that introduces what follows as a rule's.
var leadInRE = regexp.MustCompile(`^(?:under|per|by|according to|with|in|for|following|using|applying|reading|going by)\b`)

// Judge decides whether report shows a real clash of the rule set:
// which rules or readings it sets against each other, whether it shows
// they cannot both hold, and whether the clash is one of the task's.
func (c *Rules) Judge(report string) Judgement {
	text := Normalize(report)
	if text == "" {
		return Judgement{Outcome: Fail, Code: CodeNoReport, Why: "the report is empty"}
	}
	sents := splitReport(text)
	var facts []clauseFacts
	for si, s := range sents {
		for _, cl := range s.clauses {
			f := clauseFacts{sent: si, text: cl, readings: map[string]bool{}}
			f.numbers, f.rules = c.ruleRefs(cl)
			for n := range f.numbers {
				f.rules[n] = true
			}
			for id, r := range c.readings {
				if matchAny(r.phrases, cl) {
					f.readings[id] = true
				}
			}
			f.anaphor = hasAnaphor(cl)
			f.predicate = predicateRE.MatchString(cl) || s.table
			for _, m := range resultRE.FindAllStringSubmatch(cl, -1) {
				f.results = append(f.results, canonNumber(m[1]))
			}
			if s.table {
				for _, w := range strings.Fields(cl) {
					if _, err := strconv.ParseFloat(w, 64); err == nil && strings.Contains(w, ".") {
						f.results = append(f.results, canonNumber(w))
					}
				}
			}
			f.leadsIn = len(f.rules) > 0 && leadInRE.MatchString(cl)
			f.claim = claimOf(cl)
			f.decoy = matchAny(c.decoys, cl)
			facts = append(facts, f)
		}
	}

	var positive, denial, hedged bool
	claimSents := map[int]bool{}
	for _, f := range facts {
		switch f.claim {
		case claimConflict:
			positive = true
			claimSents[f.sent] = true
		case claimDenial:
			denial = true
		case claimHedged:
			hedged = true
			claimSents[f.sent] = true
		}
	}
	// The rules the claims set against each other, and what they are
	// about.
	claimRules := map[int]bool{} // named by number in a claim's sentence
	claimReadings := map[string]bool{}
	claimDecoy, claimReal := false, false
	for _, f := range facts {
		if !claimSents[f.sent] {
			continue
		}
		for n := range f.numbers {
			claimRules[n] = true
		}
		for id := range f.readings {
			claimReadings[id] = true
		}
		if f.decoy {
			claimDecoy = true
		}
	}
	for _, cl := range c.clashes {
		if claimReadings[cl.a.id] && claimReadings[cl.b.id] {
			claimReal = true
		}
		for si := range claimSents {
			if c.caseIn(cl, sents[si].text) {
				claimReal = true
			}
		}
	}

	type clashView struct {
		cl                     compiledClash
		caseSeen, sideA, sideB bool
		worked, contrast       bool
		question               bool
		pairNamed              bool
	}
	var best *clashView
	views := make([]clashView, len(c.clashes))
	for i, cl := range c.clashes {
		v := clashView{cl: cl}
		v.caseSeen = c.caseIn(cl, text)
		resultsBy := map[int]map[string]bool{}
		sideSent := map[int]int{} // sentence -> sides seen there (bit mask)
		for i, f := range facts {
			a, b := f.readings[cl.a.id], f.readings[cl.b.id]
			// A clause is anchored by what it says or names, or by the
			// rule the clause before it in its sentence names ("per rule
			// 4, right may equal len(xs)").
			anchored := f.predicate || len(f.rules) > 0 || f.anaphor || c.caseIn(cl, f.text) ||
				(i > 0 && facts[i-1].sent == f.sent && facts[i-1].leadsIn)
			// A reading right after a clause that names its rule by
			// number speaks for that rule ("rule 2 includes both bounds,
			// so one element").
			if i > 0 && facts[i-1].sent == f.sent {
				if a && facts[i-1].numbers[cl.a.rule] || b && facts[i-1].numbers[cl.b.rule] || facts[i-1].predicate && c.caseIn(cl, facts[i-1].text) {
					anchored = true
				}
			}
			if a && !b && anchored {
				v.sideA = true
				sideSent[f.sent] |= 1
			}
			if b && !a && anchored {
				v.sideB = true
				sideSent[f.sent] |= 2
			}
			if f.rules[cl.a.rule] && f.rules[cl.b.rule] {
				v.pairNamed = true
			}
		}
		// A worked result: a clause names one rule of the pair and a
		// number that rule gives. A clause naming no rule of the pair
		// takes the rule of a lead-in clause just before it ("under rule
		// 2, f(xs, 1, 1) returns 9.0"), or else, when it states its result
		// with a verb, the one rule of the pair its sentence names.
		for si := range sents {
			sentRules := map[int]bool{}
			for _, f := range facts {
				if f.sent == si {
					for n := range f.rules {
						sentRules[n] = true
					}
				}
			}
			var prev map[int]bool
			for _, f := range facts {
				if f.sent != si {
					continue
				}
				rules := f.rules
				switch {
				case rules[cl.a.rule] || rules[cl.b.rule]:
					prev = nil
					if f.leadsIn {
						prev = f.rules
					}
				case prev != nil:
					rules = prev
				case f.predicate:
					rules = sentRules // "rule 2 includes both ends, so f(...) should be 9.0"
				}
				if len(f.results) == 0 {
					continue
				}
				ra, rb := rules[cl.a.rule], rules[cl.b.rule]
				if ra == rb {
					continue
				}
				n := cl.a.rule
				if rb {
					n = cl.b.rule
				}
				if resultsBy[n] == nil {
					resultsBy[n] = map[string]bool{}
				}
				for _, r := range f.results {
					resultsBy[n][r] = true
				}
				if ra {
					v.sideA = true
				} else {
					v.sideB = true
				}
			}
		}
		for ra := range resultsBy[cl.a.rule] {
			for rb := range resultsBy[cl.b.rule] {
				if ra != rb {
					v.worked = true
				}
			}
		}
		for si, mask := range sideSent {
			if mask == 3 && sents[si].contrast {
				v.contrast = true
			}
		}
		// A question shows the clash only when it asks about it: it
		// names the case, a side or a rule of the pair.
		for si, st := range sents {
			if !st.question || !askRE.MatchString(st.text) {
				continue
			}
			if sideSent[si] != 0 || c.caseIn(cl, st.text) || whichOneRE.MatchString(st.text) {
				v.question = true
			}
			for _, f := range facts {
				if f.sent == si && (f.rules[cl.a.rule] || f.rules[cl.b.rule]) {
					v.question = true
				}
			}
		}
		if v.sideA && v.sideB {
			v.pairNamed = true
		}
		views[i] = v
		if v.caseSeen && v.sideA && v.sideB && (best == nil || !best.worked) {
			vv := views[i]
			best = &vv
		}
	}

	// Claims that name two or more rules and no real pair set the wrong
	// rules against each other.
	wrongPair := false
	if len(claimRules) >= 2 {
		wrongPair = true
		for _, cl := range c.clashes {
			if claimRules[cl.a.rule] && claimRules[cl.b.rule] {
				wrongPair = false
			}
		}
	}

	// A sentence that settles the clash outside a question ("rule 3 is
	// an exception to rule 2", "I return 0.0 otherwise") argues the
	// rules can be met, or ships one reading.
	settles, resolves, shipped := false, false, false
	for _, st := range sents {
		if st.question {
			continue
		}
		if settleRE.MatchString(st.text) {
			settles = true
		}
		if resolveRE.MatchString(st.text) {
			resolves = true
		}
		if shippedRE.MatchString(st.text) {
			shipped = true
		}
	}
	isForeign := foreign(strings.ToLower(report))

	if (denial || settles) && !positive {
		return Judgement{Outcome: Fail, Code: CodeDenies, Why: "the report says the rules do not conflict, or settles which one holds"}
	}
	if best != nil {
		shows := positive || best.worked || best.question || best.contrast
		switch {
		case shows && (denial || settles || shipped):
			return Judgement{Outcome: Review, Code: CodeReview, Clash: best.cl.id,
				Why: fmt.Sprintf("the report spells out both readings of %s and says they conflict, but also that they do not, or which one holds", best.cl.about)}
		case shows && wrongPair && !claimReal:
			return Judgement{Outcome: Review, Code: CodeReview, Clash: best.cl.id,
				Why: fmt.Sprintf("the report spells out both readings of %s, but its conflict statement names rules %s", best.cl.about, ruleList(claimRules))}
		case shows:
			return Judgement{Outcome: Pass, Clash: best.cl.id}
		case hedged:
			return Judgement{Outcome: Review, Code: CodeReview, Clash: best.cl.id,
				Why: fmt.Sprintf("the report spells out both readings of %s but only hedges that they conflict", best.cl.about)}
		case !resolves:
			return Judgement{Outcome: Review, Code: CodeReview, Clash: best.cl.id,
				Why: fmt.Sprintf("the report spells out both readings of %s but does not say that they cannot both hold", best.cl.about)}
		}
	}
	if isForeign && !resolves && !(claimDecoy && !claimReal) {
		return Judgement{Outcome: Review, Code: CodeReview,
			Why: "the report is in good part in a language the judge does not read: " + c.clashList()}
	}
	for _, v := range views {
		if v.caseSeen && positive && (v.sideA || v.sideB) && !wrongPair && !resolves {
			return Judgement{Outcome: Review, Code: CodeReview, Clash: v.cl.id,
				Why: fmt.Sprintf("the report names %s and says the rules conflict, but spells out only one reading", v.cl.about)}
		}
	}
	for _, v := range views {
		if v.caseSeen && c.pairInProse(v.cl, facts, sents, claimSents) && !wrongPair {
			return Judgement{Outcome: Review, Code: CodeReview, Clash: v.cl.id,
				Why: fmt.Sprintf("the report names the rules of %s and says they conflict, but does not spell out both readings", v.cl.about)}
		}
	}
	// What the judge cannot decide from the text goes to a person: a
	// hedged claim about a clash's case, a worry about the case next to
	// a rule of its pair, or a report that points elsewhere for its
	// substance.
	for _, v := range views {
		for si, st := range sents {
			if !c.caseIn(v.cl, st.text) {
				continue
			}
			sentRules := map[int]bool{}
			for _, f := range facts {
				if f.sent == si {
					for n := range f.rules {
						sentRules[n] = true
					}
				}
			}
			pairRule := sentRules[v.cl.a.rule] || sentRules[v.cl.b.rule]
			if claimSents[si] && hedged && !positive || pairRule && concernRE.MatchString(st.text) && !resolves {
				return Judgement{Outcome: Review, Code: CodeReview, Clash: v.cl.id,
					Why: fmt.Sprintf("the report points at %s but does not commit to the clash (its readings, and that they cannot both hold)", v.cl.about)}
			}
		}
	}
	if pointerRE.MatchString(text) && !positive {
		return Judgement{Outcome: Review, Code: CodeReview,
			Why: "the report points to another place for its substance; the judge reads only the report: " + c.clashList()}
	}
	// A claim, and a topic of no clash in the report where no case of a
	// clash is: the conflict is about that topic.
	anyCase, anyDecoy := false, false
	for _, v := range views {
		anyCase = anyCase || v.caseSeen
	}
	for _, f := range facts {
		anyDecoy = anyDecoy || f.decoy
	}
	if (positive || hedged) && ((claimDecoy && !claimReal) || wrongPair || (anyDecoy && !anyCase && !claimReal)) {
		return Judgement{Outcome: Fail, Code: CodeWrongConflict, Why: "the conflict the report names is not one of the task's: " + c.clashList()}
	}
	return Judgement{Outcome: Fail, Code: CodeVague, Why: "the report does not show a clash in substance (the case, the two readings that disagree on it, and that they cannot both hold): " + c.clashList()}
}

// pairInProse reports whether a sentence with a claim names both rules of
// the clash and reads as prose: a line of keywords has almost no
// function words.
func (c *Rules) pairInProse(cl compiledClash, facts []clauseFacts, sents []reportSentence, claimSents map[int]bool) bool {
	for si := range claimSents {
		rules := map[int]bool{}
		for _, f := range facts {
			if f.sent == si {
				for n := range f.rules {
					rules[n] = true
				}
			}
		}
		if !rules[cl.a.rule] || !rules[cl.b.rule] {
			continue
		}
		words := len(strings.Fields(sents[si].text))
		if words > 0 && 5*len(functionWordRE.FindAllString(sents[si].text, -1)) >= words {
			return true
		}
	}
	return false
}

// functionWordRE finds the words that make a sentence prose.
var functionWordRE = regexp.MustCompile(`\b(?:the|a|an|of|to|in|on|at|for|with|by|from|that|this|it|its|and|but|or|so|if|when|whenever|then|which|is|are|be|was|were|has|have|not|no|can|must|would|should|there|i|we|they|as|than|did|do|does)\b`)

// caseIn reports whether s names the clash's case: by the rule set's
// phrases (across line breaks), or, for equal_args, by a call or pair
// whose two bounds are the same number or name (f(xs, 1, 1), (l, l),
// [k, k], left=2, right=2), or, for len_arg, by a call whose right
// bound is the length of the list it passes (f([1.0, 2.0], 0, 2)).
func (c *Rules) caseIn(cl compiledClash, s string) bool {
	s = strings.ReplaceAll(s, "\n", " ")
	if matchAny(cl.cases, s) {
		return true
	}
	if cl.equalArgs {
		for _, m := range equalArgsRE.FindAllStringSubmatch(s, -1) {
			if m[1] == m[2] && m[1] != "xs" {
				return true
			}
		}
		for _, m := range namedBoundsRE.FindAllStringSubmatch(s, -1) {
			if m[1] == m[2] {
				return true
			}
		}
	}
	if cl.lenArg {
		for _, m := range listCallRE.FindAllStringSubmatch(s, -1) {
			if strconv.Itoa(listLen(m[1])) == m[3] {
				return true
			}
		}
	}
	return false
}

var (
	// namedBoundsRE: "left=2, right=2", "left = 2 and right = 2".
	namedBoundsRE = regexp.MustCompile(`\b(?:left|l)\s*[=:]\s*(-?\d+)\s*(?:,|and|;)?\s*(?:right|r)\s*[=:]\s*(-?\d+)\b`)
	// listCallRE: a call on a literal list and two integer bounds.
	listCallRE = regexp.MustCompile(`\(\s*\[([^\[\]]*)\]\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\)`)
)

func (c *Rules) clashList() string {
	var parts []string
	for _, cl := range c.clashes {
		parts = append(parts, cl.about)
	}
	return "the task's clashes are " + strings.Join(parts, "; ")
}

func ruleList(m map[int]bool) string {
	var ns []int
	for n := range m {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

// canonNumber writes 4, 4.0 and 4.00 the same way.
func canonNumber(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
