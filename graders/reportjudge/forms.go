package reportjudge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The forms a report takes besides English prose: JSON and YAML (read
// as one "key: value" item per leaf), other languages (read through a
// small lexicon into the words the rule set's phrases use), and
// notation (l = r, (k, k), a call whose arguments make the case).

// lexicon maps the words of other languages that carry a report's
// structure (rules, the conflict, both, cannot, empty, one element,
// equal, gives, but, or, which) onto the English words the judge and
// the rule sets read. Each entry is applied in order to lower-case
// text; Latin-script entries match whole words.
var lexicon = func() []struct {
	re  *regexp.Regexp
	rep string
} {
	latin := [][2]string{
		// French.
		{`r[èe]gles`, "rules"}, {`r[èe]gle`, "rule"}, {`et`, "and"}, {`donc`, "so"}, {`se contredisent|se contredit|contradictoires?`, "contradict"},
		{`ne (?:peuvent|peut|pourront|pourrait) pas|impossible de`, "cannot"},
		{`toutes les deux|tous les deux|les deux|[àa] la fois|en m[êe]me temps|simultan[ée]ment`, "both"},
		{`[êe]tre (?:vraies?|satisfaites?|respect[ée]es?)|s'appliquer`, "hold"},
		{`(?:pas de|aucune?) (?:contradiction|conflit)`, "no contradiction"}, {`ne se contredisent pas`, "do not contradict"},
		{`sont (?:coh[ée]rentes|compatibles)`, "are consistent"},
		{`vides?`, "empty"}, {`(?:exactement |un seul |seulement )?un (?:seul )?[ée]l[ée]ment`, "one element"}, {`[ée]l[ée]ments?`, "element"},
		{`les deux bornes`, "both endpoints"}, {`bornes?`, "bounds"}, {`inclusi(?:f|ve|ves)`, "inclusive"}, {`inclu(?:s|se|ses)|inclut`, "included"},
		{`[ée]ga(?:l|le|les|ux)(?: [àa])?`, "equal"}, {`renvoie|retourne|donne|vaut`, "gives"}, {`dit que|indique que|exige que`, "says"},
		{`mais|alors que|tandis que|cependant`, "but"}, {`ou bien|ou`, "or"}, {`laquelle|lequel|quelle|quel`, "which"},
		{`doit|devrait`, "should"}, {`est`, "is"}, {`sont`, "are"}, {`la longueur|longueur`, "the length"},
		{`hors (?:des )?(?:limites|bornes)|hors de la liste`, "out of range"}, {`(?:d[ée]passe|au-del[àa] de|apr[èe]s) la fin`, "past the end"},
		{`n'existe pas`, "does not exist"}, {`autorise|permet`, "allows"}, {`selon|d'apr[èe]s`, "per"}, {`quand|lorsque`, "when"},
		{`peut-[êe]tre|semble`, "maybe"}, {`(?:un )?cas particulier`, "a special case"},
		// German.
		{`regeln`, "rules"}, {`regel`, "rule"}, {`und`, "and"}, {`also|daher|deshalb`, "so"}, {`widersprechen sich|widerspricht|widerspr[üu]chlich|widerspruch|widerspr[üu]che`, "contradict"},
		{`unvereinbar`, "incompatible"}, {`kein(?:en)? widerspruch`, "no contradiction"},
		{`nicht beide|nicht beides|beides nicht|nicht gleichzeitig|nicht zugleich`, "cannot both"},
		{`kann nicht|k[öo]nnen nicht`, "cannot"}, {`beides|beide|gleichzeitig|zugleich`, "both"}, {`gelten|erf[üu]llt (?:sein|werden)`, "hold"},
		{`leer|leere|leeren`, "empty"}, {`(?:genau |nur )?ein(?:em|en)? (?:einzigen? )?element`, "one element"},
		{`beide endpunkte|beide grenzen`, "both endpoints"}, {`endpunkte`, "endpoints"}, {`bei`, "when"}, {`eingeschlossen|einschlie(?:ß|ss)lich|inklusive`, "included"},
		{`gleich`, "equal"}, {`gibt|liefert|ergibt`, "gives"}, {`sagt`, "says"}, {`aber|jedoch|w[äa]hrend|hingegen`, "but"},
		{`oder`, "or"}, {`welche[rs]?`, "which"}, {`soll(?:te)?`, "should"}, {`ist`, "is"}, {`sind`, "are"}, {`l[äa]nge`, "the length"},
		{`au(?:ß|ss)erhalb (?:des bereichs|der liste|der grenzen)|ung[üu]ltiger index`, "out of range"},
		{`existiert nicht`, "does not exist"}, {`erlaubt`, "allows"}, {`nach|laut|gem[äa](?:ß|ss)`, "per"}, {`wenn|falls`, "when"},
		{`vielleicht|scheint`, "maybe"}, {`unm[öo]glich`, "impossible"}, {`verlangt|fordert`, "requires"}, {`dagegen`, "but"},
		{`enth[äa]lt`, "contains"}, {`zur[üu]ckgegeben|zur[üu]ckgeben`, "returned"}, {`erwartet`, "expects"},
		// Portuguese.
		{`regras`, "rules"}, {`regra`, "rule"}, {`se contradizem|contradiz(?:em)?|contradi[çc][ãa]o|contradit[óo]ri[oa]s?`, "contradict"},
		{`n[ãa]o h[áa] contradi[çc][ãa]o`, "no contradiction"}, {`n[ãa]o podem|n[ãa]o pode`, "cannot"}, {`ao mesmo tempo`, "both"},
		{`vazi[oa]s?`, "empty"}, {`(?:exatamente |apenas )?um (?:[úu]nico )?elemento`, "one element"}, {`os dois extremos|ambos os extremos`, "both endpoints"},
		{`inclu[íi]d[oa]s?|inclui`, "included"}, {`pela|pelo`, "per"}, {`deveria ser|deve ser`, "should be"}, {`ent[ãa]o`, "so"},
		{`devolve|retorna`, "gives"}, {`mas`, "but"}, {`[ée]`, "is"}, {`comprimento`, "the length"},
		// Spanish.
		{`reglas`, "rules"}, {`regla`, "rule"}, {`o`, "or"}, {`devolver|retornar`, "return"}, {`qu[ée]`, "what"}, {`y`, "and"}, {`por lo tanto|as[íi] que`, "so"}, {`se contradicen|se contradice|contradictori[oa]s?|contradicci[óo]n`, "contradict"},
		{`no hay (?:contradicci[óo]n|conflicto)|ninguna contradicci[óo]n`, "no contradiction"},
		{`no pueden|no puede`, "cannot"}, {`ambas|ambos|a la vez|al mismo tiempo`, "both"}, {`cumplirse|cumplir|ser ciertas`, "hold"},
		{`vac[íi][oa]s?`, "empty"}, {`(?:un solo|un [úu]nico|exactamente un|un) elemento`, "one element"}, {`elementos?`, "element"},
		{`(?:ambos|los dos) extremos`, "both endpoints"}, {`extremos`, "endpoints"}, {`incluid[oa]s?|incluye`, "included"},
		{`iguales|igual(?: a)?`, "equal"}, {`devuelve|retorna|da`, "gives"}, {`dice que|dice`, "says"},
		{`pero|mientras que|sin embargo`, "but"}, {`cu[áa]l`, "which"}, {`deber[íi]a|debe`, "should"},
		{`est[áa]`, "is"}, {`longitud`, "the length"}, {`fuera de (?:rango|los l[íi]mites)`, "out of range"},
		{`seg[úu]n`, "per"}, {`cuando`, "when"}, {`permite`, "allows"}, {`quiz[áa]s?|parece`, "maybe"},
	}
	var out []struct {
		re  *regexp.Regexp
		rep string
	}
	// CJK first: no word boundaries, and the replacement brings its own
	// spaces.
	for _, e := range [][2]string{
		{`。`, ". "}, {`，|、`, ", "}, {`；`, "; "}, {`：`, ": "}, {`？`, "? "}, {`（`, " ("}, {`）`, ") "},
		{`没有矛盾|不矛盾|没有冲突`, " no contradiction "},
		{`第\s*(\d)\s*条(?:规则)?`, " rule $1 "}, {`规则|ルール|規則`, " rule "}, {`和|与`, " and "}, {`所以|因此`, " so "},
		{`相互矛盾|自相矛盾|矛盾|冲突|衝突`, " contradict "},
		{`不能同时|无法同时|不可能同时|両立しない|同時に満たせない`, " cannot both "}, {`成立|满足`, " hold "},
		{`一个元素|单个元素|1つの要素|一つの要素|要素が1つ`, " one element "}, {`两个端点|两端|両端`, " both endpoints "},
		{`为空|是空的|空`, " empty "}, {`包含`, " included "}, {`相等|等于`, " equal "},
		{`返回|结果是|得到|を返す`, " gives "}, {`但是|但|而|然而`, " but "}, {`还是|或者|或`, " or "},
		{`哪个|哪一个|どちら`, " which "}, {`应该`, " should "}, {`长度`, " the length "}, {`越界|超出范围`, " out of range "},
		{`当`, " when "}, {`时`, " "}, {`允许`, " allows "}, {`说`, " says "}, {`是`, " is "}, {`也许|可能`, " maybe "},
	} {
		out = append(out, struct {
			re  *regexp.Regexp
			rep string
		}{regexp.MustCompile(e[0]), e[1]})
	}
	for _, e := range latin {
		out = append(out, struct {
			re  *regexp.Regexp
			rep string
		}{regexp.MustCompile(`(^|[^\pL\d])(?:` + e[0] + `)([^\pL\d]|$)`), "${1}" + e[1] + "${2}"})
	}
	return out
}()

// foreignWordRE: words of the languages above (and others) that English
// does not have; three of them, or three words with a letter outside
// ASCII, make a report foreign.
var foreignWordRE = regexp.MustCompile(`(?:^|[^\pL])(?:les|des|une|est|sont|pas|mais|avec|pour|dans|der|die|das|und|nicht|ist|ein|eine|mit|f[üu]r|los|las|el|una|que|y|con|para|del|es|ja|och|het|een|ei|og|ikke)(?:[^\pL]|$)`)
var nonASCIILetterWordRE = regexp.MustCompile(`\pL*[^\x00-\x7F\pP\pS\pZ\pN]\pL*`)

// foreign reports whether lower-case text is, in good part, in a
// language other than English.
func foreign(s string) bool {
	if len(nonASCIILetterWordRE.FindAllString(s, 4)) >= 3 {
		return true
	}
	return len(foreignWordRE.FindAllString(s, 4)) >= 3
}

// translate reads lower-case text through the lexicon. Applied twice so
// that adjacent matches (which share a boundary) are all replaced.
func translate(s string) string {
	for _, e := range lexicon {
		s = e.re.ReplaceAllString(s, e.rep)
		s = e.re.ReplaceAllString(s, e.rep)
	}
	return s
}

// structured renders a report that is JSON, or holds JSON or YAML
// blocks, as one "key: value" paragraph per leaf, and says what it found
// in the leaves' keys (equal left and right, right equal to the list's
// length) as a case line of its own. Prose is returned as it is.
func structured(s string) string {
	t := strings.TrimSpace(s)
	if flat, ok := flattenJSON(t); ok {
		return flat
	}
	// Fenced blocks of JSON.
	var out []string
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "```") {
			j := i + 1
			for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
				j++
			}
			if flat, ok := flattenJSON(strings.Join(lines[i+1:min(j, len(lines))], "\n")); ok {
				out = append(out, flat)
				i = j
				continue
			}
		}
		out = append(out, lines[i])
	}
	s = strings.Join(out, "\n")
	if yamlLike(s) {
		return yamlItems(s)
	}
	return csvTables(doctests(s))
}

var doctestRE = regexp.MustCompile(`^\s*>>>\s*(.*?)\s*(?:#\s*(.*))?$`)

// doctests makes each ">>> call  # comment" line and the output line
// after it one paragraph, "comment: call -> output", so that a result
// reads with the rule its comment names.
func doctests(s string) string {
	lines := strings.Split(s, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		m := doctestRE.FindStringSubmatch(lines[i])
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		p := m[1]
		if i+1 < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), ">>>") && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "```") && strings.TrimSpace(lines[i+1]) != "" {
			p += " -> " + strings.TrimSpace(lines[i+1])
			i++
		}
		if m[2] != "" {
			p = m[2] + ": " + p
		}
		out = append(out, "", p, "")
	}
	return strings.Join(out, "\n")
}

// csvTables rewrites runs of two or more comma-separated lines with the
// same number of top-level fields (three or more) as markdown tables.
func csvTables(s string) string {
	lines := strings.Split(s, "\n")
	var out []string
	for i := 0; i < len(lines); {
		n := len(csvFields(lines[i]))
		j := i
		for j < len(lines) && n >= 3 && len(csvFields(lines[j])) == n {
			j++
		}
		if j-i < 2 {
			out = append(out, lines[i])
			i++
			continue
		}
		for k := i; k < j; k++ {
			out = append(out, "| "+strings.Join(csvFields(lines[k]), " | ")+" |")
			if k == i {
				out = append(out, "|"+strings.Repeat("---|", n))
			}
		}
		out = append(out, "")
		i = j
	}
	return strings.Join(out, "\n")
}

// csvFields splits a line at commas outside quotes and brackets, and
// only where no space follows (prose has one); nil when it has none.
func csvFields(l string) []string {
	var f []string
	depth, quote, last := 0, false, 0
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c == '"':
			quote = !quote
		case quote:
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			if i+1 < len(l) && l[i+1] == ' ' {
				return nil
			}
			f = append(f, strings.Trim(strings.TrimSpace(l[last:i]), `"`))
			last = i + 1
		}
	}
	if f == nil {
		return nil
	}
	return append(f, strings.Trim(strings.TrimSpace(l[last:]), `"`))
}

// flattenJSON renders a JSON document as leaf paragraphs, in document
// order.
func flattenJSON(s string) (string, bool) {
	if !strings.HasPrefix(s, "{") && !strings.HasPrefix(s, "[") {
		return "", false
	}
	if !json.Valid([]byte(s)) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var b strings.Builder
	var keys []string // the current key at each object depth
	var inObj []bool  // whether each open container is an object
	var expectKey []bool
	var items []string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key := ""
		if n := len(keys); n > 0 {
			key = keys[n-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if n := len(expectKey); n > 0 && inObj[n-1] {
					expectKey[n-1] = true
				}
				inObj = append(inObj, v == '{')
				expectKey = append(expectKey, v == '{')
				keys = append(keys, key)
			default:
				inObj, expectKey, keys = inObj[:len(inObj)-1], expectKey[:len(expectKey)-1], keys[:len(keys)-1]
				if n := len(expectKey); n > 0 && inObj[n-1] {
					expectKey[n-1] = true
				}
			}
			continue
		case string:
			if n := len(expectKey); n > 0 && expectKey[n-1] {
				keys[n-1] = v
				expectKey[n-1] = false
				continue
			}
		}
		leaf := fmt.Sprint(tok)
		if tok == nil {
			leaf = "null"
		}
		if key != "" {
			leaf = key + ": " + leaf
		}
		items = append(items, leaf)
		if n := len(expectKey); n > 0 && inObj[n-1] {
			expectKey[n-1] = true
		}
	}
	items = append(items, keyCases(items)...)
	b.WriteString(strings.Join(items, "\n\n"))
	return b.String(), true
}

var (
	yamlLineRE = regexp.MustCompile(`^\s*(?:- )?["']?[\pL\w .-]{1,40}["']?:(?:\s|$)|^\s*- \S`)
	kvRE       = regexp.MustCompile(`^\s*(?:- )?["']?(left|l|lo|start|right|r|hi|end)["']?\s*[:=]\s*(-?\d+)\s*,?$`)
	xsRE       = regexp.MustCompile(`^\s*(?:- )?["']?(xs|list|values|input)["']?\s*[:=]\s*\[([^\]]*)\]\s*,?$`)
)

// yamlLike reports whether most lines of s are YAML keys or items.
func yamlLike(s string) bool {
	n, y := 0, 0
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "```") || strings.TrimSpace(l) == "---" {
			continue
		}
		n++
		if yamlLineRE.MatchString(l) {
			y++
		}
	}
	return n >= 3 && 5*y >= 3*n
}

// yamlItems makes each YAML line a paragraph of its own (a block
// scalar's continuation lines stay with their key) and adds the case
// lines its keys show.
func yamlItems(s string) string {
	var items []string
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || t == "---" || strings.HasPrefix(t, "```"):
		case yamlLineRE.MatchString(l) || len(items) == 0:
			t = strings.TrimPrefix(t, "- ")
			t = strings.TrimSuffix(strings.TrimSuffix(t, "|"), ">")
			items = append(items, strings.Trim(t, `"'`))
		default:
			items[len(items)-1] += " " + strings.Trim(t, `"'`)
		}
	}
	items = append(items, keyCases(items)...)
	return strings.Join(items, "\n\n")
}

// keyCases reads "left: 1" and "right: 1" near each other (within four
// items) as the case left == right, and "xs: [a, b]" with "right: 2" as
// right == len(xs).
func keyCases(items []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for i, it := range items {
		m := kvRE.FindStringSubmatch(strings.ToLower(it))
		if m == nil || !isLeft(m[1]) {
			continue
		}
		for j := max(0, i-4); j < min(len(items), i+5); j++ {
			n := kvRE.FindStringSubmatch(strings.ToLower(items[j]))
			if n == nil || isLeft(n[1]) {
				continue
			}
			if n[2] == m[2] {
				add("case: left == right")
			}
			for k := max(0, i-4); k < min(len(items), i+5); k++ {
				if x := xsRE.FindStringSubmatch(strings.ToLower(items[k])); x != nil && fmt.Sprint(listLen(x[2])) == n[2] {
					add("case: right == len(xs)")
				}
			}
		}
	}
	return out
}

func isLeft(k string) bool { return k == "left" || k == "l" || k == "lo" || k == "start" }

// listLen counts the items of a list's inside ("1.0, 2.0" is 2).
func listLen(inside string) int {
	if strings.TrimSpace(inside) == "" {
		return 0
	}
	return strings.Count(inside, ",") + 1
}
