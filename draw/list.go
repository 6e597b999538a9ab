package draw

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Rule is what a draw is made with besides the library.
type Rule struct {
	Seed uint64 `json:"seed"` // the draw's date as a number: 20261004 for 4 October 2026
	Cap  int    `json:"cap"`  // at most this many tasks per group
}

// DefaultCap is seed 000's cap: two tasks per group.
const DefaultCap = 2

// The rule's sentences, as the list prints them.
const (
	ShuffleRule = "SplitMix64 seeded with the seed; Fisher-Yates (Durstenfeld) from the last index down, " +
		"j uniform in [0, i] by rejection; applied to the eligible task ids sorted bytewise"
	GroupingRule = "same world and same set of (kind, path) changes made by the reference solution, reads never count; " +
		"reply-only tasks (no changes) by world, then by what they need and by injected faults"
	GapFillingRule = "a group's first pick is its first task in the shuffle; each next pick is the first later task " +
		"carrying a difficulty tag no earlier pick carries, else the next in the shuffle; at most cap per group"
	ExcludeRule = "before the draw, tasks that need real accounts and the public internet"
	RemoveRule  = "after the draw, drawn tasks unrunnable for every product (a robot check); not refilled"
)

// ListVersion is the first line of a list.
const ListVersion = "benchd draw list 1"

// Pick is one drawn task.
type Pick struct {
	ID      string `json:"id"`
	World   string `json:"world"`
	Group   string `json:"group"`
	Shuffle int    `json:"shuffle"` // 0-based position in the shuffle
	// How is "first" for a group's first pick, "fills:TAG,..." for a pick
	// taken for the difficulty tags it adds, "next" for a pick taken as
	// the next in the shuffle because no task filled a gap.
	How string `json:"how"`
}

// Removal is a task left out, and why.
type Removal struct {
	ID     string `json:"id"`
	World  string `json:"world"`
	Reason string `json:"reason"`
}

// WorldCount is one world's part of the list.
type WorldCount struct {
	World   string `json:"world"`
	Listed  int    `json:"listed"`
	Percent int    `json:"percent"` // of the list, rounded half up to a whole percent
	Groups  int    `json:"groups"`  // groups of this world
	Tasks   int    `json:"tasks"`   // eligible tasks of this world
}

// Result is a draw: the rule, the list, and the counts.
type Result struct {
	Rule        Rule         `json:"rule"`
	LibraryHash string       `json:"library_hash"`
	LibrarySize int          `json:"library_size"`
	Excluded    []Removal    `json:"excluded"`
	Eligible    int          `json:"eligible"`
	Groups      int          `json:"groups"`
	Drawn       []Pick       `json:"drawn"` // every pick, in draw order
	Removed     []Removal    `json:"removed_after"`
	List        []Pick       `json:"list"` // Drawn without Removed
	Worlds      []WorldCount `json:"worlds"`
	WorldsAll   int          `json:"worlds_in_library"`
	WorldsIn    int          `json:"worlds_in_list"`
}

// Percent is 100*n/total rounded half up, in integers:
// (200n + total) div (2 total).
func Percent(n, total int) int {
	if total == 0 {
		return 0
	}
	return (200*n + total) / (2 * total)
}

// Draw draws from lib by rule:
//
//  1. Tasks ExcludedBefore are left out; the rest are eligible.
//  2. The eligible ids are shuffled (Shuffle with rule.Seed).
//  3. The eligible tasks are grouped (GroupKey); each group's tasks are
//     taken in shuffle order.
//  4. From each group: the first task; then, while fewer than rule.Cap
//     are picked and tasks remain, the first remaining task (in shuffle
//     order) carrying a difficulty tag none of the picks carries, else the
//     first remaining one.
//  5. The picks of all groups, in shuffle order, are the draw.
//  6. Drawn tasks RemovedAfter are taken out; the rest is the list.
func Draw(lib *Library, rule Rule) (*Result, error) {
	if rule.Cap < 1 {
		return nil, invalidf("cap %d: want at least 1", rule.Cap)
	}
	res := &Result{Rule: rule, LibraryHash: lib.Hash(), LibrarySize: len(lib.Tasks),
		Excluded: []Removal{}, Removed: []Removal{}, Drawn: []Pick{}, List: []Pick{}}
	byID := map[string]Task{}
	var eligible []Task
	var ids []string
	for _, t := range lib.Tasks {
		if why, ok := ExcludedBefore(t); ok {
			res.Excluded = append(res.Excluded, Removal{t.ID, t.World, why})
			continue
		}
		eligible = append(eligible, t)
		ids = append(ids, t.ID)
		byID[t.ID] = t
	}
	res.Eligible = len(eligible)
	pos := map[string]int{}
	for i, id := range Shuffle(ids, rule.Seed) {
		pos[id] = i
	}
	groups := Groups(eligible)
	res.Groups = len(groups)
	for _, g := range groups {
		members := slices.Clone(g.Tasks)
		slices.SortFunc(members, func(a, b string) int { return pos[a] - pos[b] })
		res.Drawn = append(res.Drawn, pickGroup(g, members, byID, pos, rule.Cap)...)
	}
	slices.SortFunc(res.Drawn, func(a, b Pick) int { return a.Shuffle - b.Shuffle })
	for _, p := range res.Drawn {
		if why, ok := RemovedAfter(byID[p.ID]); ok {
			res.Removed = append(res.Removed, Removal{p.ID, p.World, why})
			continue
		}
		res.List = append(res.List, p)
	}
	res.Worlds = worldCounts(lib, eligible, groups, res.List)
	res.WorldsAll = len(Worlds(lib.Tasks))
	for _, w := range res.Worlds {
		if w.Listed > 0 {
			res.WorldsIn++
		}
	}
	return res, nil
}

// pickGroup applies the gap-filling rule to a group's members, given in
// shuffle order.
func pickGroup(g Group, members []string, byID map[string]Task, pos map[string]int, cap int) []Pick {
	covered := map[string]bool{}
	var picks []Pick
	take := func(i int, how string) {
		id := members[i]
		for _, d := range byID[id].Difficulty {
			covered[d] = true
		}
		picks = append(picks, Pick{ID: id, World: g.World, Group: g.Key, Shuffle: pos[id], How: how})
		members = slices.Delete(members, i, i+1)
	}
	take(0, "first")
	for len(picks) < cap && len(members) > 0 {
		filled := false
		for i, id := range members {
			var fills []string
			for _, d := range byID[id].Difficulty {
				if !covered[d] {
					fills = append(fills, d)
				}
			}
			if len(fills) > 0 {
				take(i, "fills:"+strings.Join(fills, ","))
				filled = true
				break
			}
		}
		if !filled {
			take(0, "next")
		}
	}
	return picks
}

func worldCounts(lib *Library, eligible []Task, groups []Group, list []Pick) []WorldCount {
	idx := map[string]*WorldCount{}
	var out []*WorldCount
	for _, w := range Worlds(lib.Tasks) {
		wc := &WorldCount{World: w}
		idx[w] = wc
		out = append(out, wc)
	}
	for _, t := range eligible {
		idx[t.World].Tasks++
	}
	for _, g := range groups {
		idx[g.World].Groups++
	}
	for _, p := range list {
		idx[p.World].Listed++
	}
	res := make([]WorldCount, len(out))
	for i, wc := range out {
		wc.Percent = Percent(wc.Listed, len(list))
		res[i] = *wc
	}
	slices.SortStableFunc(res, func(a, b WorldCount) int { return b.Listed - a.Listed })
	return res
}

// Render writes the list. Every line ends in "\n"; the sections are
// separated by one blank line:
//
//	benchd draw list 1
//	seed N
//	cap N
//	shuffle SENTENCE
//	grouping SENTENCE
//	gap-filling SENTENCE
//	exclude SENTENCE
//	remove SENTENCE
//	library sha256:HEX
//
//	tasks
//	N ID WORLD GROUP HOW                 one line per listed task, in draw order
//
//	counts
//	library N                            tasks in the library
//	excluded-before N
//	excluded ID WORLD: REASON            one line per excluded task, by id
//	eligible N
//	groups N
//	drawn N
//	removed-after N
//	removed ID WORLD: REASON             one line per removed task, in draw order
//	listed N
//	worlds N of M                        worlds in the list, of worlds in the library
//	world W listed N share P% groups G tasks T   most listed first, then by name
func (r *Result) Render() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nseed %d\ncap %d\n", ListVersion, r.Rule.Seed, r.Rule.Cap)
	fmt.Fprintf(&b, "shuffle %s\ngrouping %s\ngap-filling %s\n", ShuffleRule, GroupingRule, GapFillingRule)
	fmt.Fprintf(&b, "exclude %s\nremove %s\nlibrary %s\n", ExcludeRule, RemoveRule, r.LibraryHash)
	b.WriteString("\ntasks\n")
	for i, p := range r.List {
		fmt.Fprintf(&b, "%d %s %s %s %s\n", i+1, p.ID, p.World, p.Group, p.How)
	}
	b.WriteString("\ncounts\n")
	fmt.Fprintf(&b, "library %d\nexcluded-before %d\n", r.LibrarySize, len(r.Excluded))
	for _, e := range r.Excluded {
		fmt.Fprintf(&b, "excluded %s %s: %s\n", e.ID, e.World, e.Reason)
	}
	fmt.Fprintf(&b, "eligible %d\ngroups %d\ndrawn %d\nremoved-after %d\n", r.Eligible, r.Groups, len(r.Drawn), len(r.Removed))
	for _, e := range r.Removed {
		fmt.Fprintf(&b, "removed %s %s: %s\n", e.ID, e.World, e.Reason)
	}
	fmt.Fprintf(&b, "listed %d\nworlds %d of %d\n", len(r.List), r.WorldsIn, r.WorldsAll)
	for _, w := range r.Worlds {
		fmt.Fprintf(&b, "world %s listed %d share %d%% groups %d tasks %d\n", w.World, w.Listed, w.Percent, w.Groups, w.Tasks)
	}
	return b.Bytes()
}

// ReadRule reads the version, seed and cap from the head of a list.
func ReadRule(list []byte) (Rule, error) {
	var r Rule
	sc := bufio.NewScanner(bytes.NewReader(list))
	sc.Buffer(nil, 1<<20)
	var seed, cap bool
	for n := 1; sc.Scan() && sc.Text() != ""; n++ {
		line := sc.Text()
		if n == 1 {
			if line != ListVersion {
				return r, invalidf("list: first line %q, want %q", line, ListVersion)
			}
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		var err error
		switch k {
		case "seed":
			r.Seed, err = strconv.ParseUint(v, 10, 64)
			seed = true
		case "cap":
			r.Cap, err = strconv.Atoi(v)
			cap = true
		}
		if err != nil {
			return r, invalidf("list line %d: %s %q: not a number", n, k, v)
		}
	}
	if !seed || !cap {
		return r, invalidf("list: no seed or cap line in its head")
	}
	return r, nil
}

// Difference is the first place where a list and the list the rule
// gives differ.
type Difference struct {
	Line int `json:"line"` // 1-based line of the list
	// What is "seed" (the list's seed is not the one asked for),
	// "head" (a rule line differs, such as the library's hash),
	// "changed", "added", "removed" or "reordered" (a task line),
	// "counts" (a line of the counts), or "format" (the same lines with
	// other line endings).
	What    string `json:"what"`
	List    string `json:"list"` // the list's line; "" past its end
	Rule    string `json:"rule"` // the rule's line; "" past its end
	Message string `json:"message"`
}

func (d *Difference) Error() string { return d.Message }

// Verify draws again from lib with the seed and cap the list states,
// and returns the first difference, or nil when the list is exactly the
// one the rule gives. When seed is not nil, the list must also state that
// seed. The redrawn result is returned as well.
func Verify(list []byte, lib *Library, seed *uint64) (*Result, *Difference, error) {
	rule, err := ReadRule(list)
	if err != nil {
		return nil, nil, err
	}
	if seed != nil && *seed != rule.Seed {
		return nil, &Difference{Line: 2, What: "seed", List: fmt.Sprintf("seed %d", rule.Seed), Rule: fmt.Sprintf("seed %d", *seed),
			Message: fmt.Sprintf("line 2: the list is drawn with seed %d, want seed %d", rule.Seed, *seed)}, nil
	}
	res, err := Draw(lib, rule)
	if err != nil {
		return nil, nil, err
	}
	return res, Compare(list, res.Render()), nil
}

// Compare returns the first difference between a list and the list the
// rule gives, or nil when they are byte for byte the same.
func Compare(list, want []byte) *Difference {
	if bytes.Equal(list, want) {
		return nil
	}
	got, exp := splitLines(list), splitLines(want)
	section := "head"
	for i := 0; i < len(got) || i < len(exp); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(exp) {
			w = exp[i]
		}
		if i < len(exp) && (w == "tasks" || w == "counts") {
			section = w
		}
		if i < len(got) && i < len(exp) && g == w {
			continue
		}
		d := &Difference{Line: i + 1, List: g, Rule: w}
		switch section {
		case "tasks":
			d.What, d.Message = taskDifference(i+1, g, w, got, exp)
		case "counts":
			d.What = "counts"
			d.Message = fmt.Sprintf("line %d: the list has %q, the rule gives %q", i+1, g, w)
		default:
			d.What = "head"
			d.Message = fmt.Sprintf("line %d: the list has %q, the rule gives %q", i+1, g, w)
		}
		if i >= len(got) {
			d.Message = fmt.Sprintf("line %d: the list ends; the rule gives %q", i+1, w)
		} else if i >= len(exp) {
			d.Message = fmt.Sprintf("line %d: the rule's list has ended; the list goes on with %q", i+1, g)
		}
		return d
	}
	// Same lines, different bytes: a missing final newline.
	return &Difference{Line: len(got), What: "format", Message: "the list differs from the rule's only in its line endings"}
}

func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// taskIDs returns the ids of the task lines of a list, in order.
func taskIDs(lines []string) []string {
	var ids []string
	in := false
	for _, l := range lines {
		switch {
		case l == "tasks":
			in = true
		case l == "" || l == "counts":
			in = false
		case in:
			if f := strings.Fields(l); len(f) >= 2 {
				ids = append(ids, f[1])
			}
		}
	}
	return ids
}

// taskDifference says what a difference in the tasks section is.
func taskDifference(line int, g, w string, got, exp []string) (what, msg string) {
	gf, wf := strings.Fields(g), strings.Fields(w)
	gid, wid := "", ""
	if len(gf) >= 2 && g != "counts" && g != "" {
		gid = gf[1]
	}
	if len(wf) >= 2 && w != "counts" && w != "" {
		wid = wf[1]
	}
	gids, wids := taskIDs(got), taskIDs(exp)
	switch {
	case gid != "" && gid == wid:
		return "changed", fmt.Sprintf("line %d: task %s: the list has %q, the rule gives %q", line, gid, g, w)
	case gid != "" && !slices.Contains(wids, gid):
		return "added", fmt.Sprintf("line %d: task %s is in the list but the rule does not draw it (the rule gives %q)", line, gid, w)
	case wid != "" && !slices.Contains(gids, wid):
		return "removed", fmt.Sprintf("line %d: the rule draws task %s here, which the list lacks (the list has %q)", line, wid, g)
	default:
		return "reordered", fmt.Sprintf("line %d: the list has task %s where the rule puts task %s", line, gid, wid)
	}
}
