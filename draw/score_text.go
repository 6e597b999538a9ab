package draw

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// PlotOrder returns agents in the order plots draw them: the agents of
// one task set together (task sets in order of their first agent by
// name), by name within a set. It never orders by rate.
func PlotOrder(agents []AgentScore) []AgentScore {
	out := slices.Clone(agents)
	first := map[string]int{}
	for i, a := range agents {
		if _, ok := first[a.TaskSet]; !ok {
			first[a.TaskSet] = i
		}
	}
	slices.SortStableFunc(out, func(a, b AgentScore) int {
		if d := first[a.TaskSet] - first[b.TaskSet]; d != 0 {
			return d
		}
		return strings.Compare(a.Agent, b.Agent)
	})
	return out
}

// TaskRateText writes an agent's rate on one task as "passes/scored
// (rate%)", or "-" when nothing was scored.
func TaskRateText(o AgentOutcomes) string {
	if o.Rate == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d (%.0f%%)", o.Passes, o.Scored, *o.Rate*100)
}

// TextPlotWidth is the number of columns of a text plot's axis, from 0 to
// 100% in steps of 2%.
const TextPlotWidth = 51

// Text plot marks.
const (
	MarkRate      = 'o' // the rate
	MarkCollapsed = '*' // the rate, where the bootstrap interval collapses to that point
	MarkInterval  = '-' // the 95% interval
	MarkEnd       = '|' // the 95% interval's ends
	MarkBootstrap = '=' // the bootstrap interval
)

// TextColumn is the column of rate r on a text plot's axis.
func TextColumn(r float64) int {
	return int(math.Round(math.Max(0, math.Min(1, r)) * (TextPlotWidth - 1)))
}

// WriteTextPlot draws card's agents (in PlotOrder) on an axis from 0 to
// 100%: per agent, the 95% interval between MarkEnd marks, the bootstrap
// interval in MarkBootstrap over it, and the rate as MarkRate, or as
// MarkCollapsed when the bootstrap interval is that one point; an
// interval whose ends meet is one MarkEnd, never nothing. indent starts
// every line.
func WriteTextPlot(w io.Writer, card SeriesCard, indent string) {
	agents := PlotOrder(card.Agents)
	width := 0
	for _, a := range agents {
		width = max(width, len(a.Agent))
	}
	axis := []byte(strings.Repeat(" ", TextPlotWidth))
	for i := 0; i <= 10; i++ {
		axis[TextColumn(float64(i)/10)] = '+'
	}
	labels := []byte(strings.Repeat(" ", TextPlotWidth+2))
	for i := 0; i <= 10; i += 5 {
		l := fmt.Sprintf("%d%%", i*10)
		c := TextColumn(float64(i) / 10)
		start := min(max(0, c-len(l)/2), len(labels)-len(l))
		copy(labels[start:], l)
	}
	for _, a := range agents {
		row := []byte(strings.Repeat(" ", TextPlotWidth))
		if a.Interval != nil {
			for c := TextColumn(a.Interval.Lo); c <= TextColumn(a.Interval.Hi); c++ {
				row[c] = MarkInterval
			}
		}
		collapsed := false
		if b := a.Bootstrap; b != nil {
			collapsed = b.Lo == b.Hi
			for c := TextColumn(b.Lo); c <= TextColumn(b.Hi); c++ {
				row[c] = MarkBootstrap
			}
		}
		if a.Interval != nil { // the ends show over the bootstrap
			row[TextColumn(a.Interval.Lo)], row[TextColumn(a.Interval.Hi)] = MarkEnd, MarkEnd
		}
		rate := "no scored attempt"
		if a.Rate != nil {
			mark := byte(MarkRate)
			if collapsed && TextColumn(a.Bootstrap.Lo) == TextColumn(*a.Rate) {
				mark = MarkCollapsed
			}
			row[TextColumn(*a.Rate)] = mark
			rate = fmt.Sprintf("%5.1f%%", *a.Rate*100)
		}
		fmt.Fprintf(w, "%s%-*s %s %s\n", indent, width, a.Agent, row, rate)
	}
	fmt.Fprintf(w, "%s%-*s %s\n", indent, width, "", axis)
	fmt.Fprintf(w, "%s%-*s %s\n", indent, width, "", strings.TrimRight(string(labels), " "))
	fmt.Fprintf(w, "%s%c rate (mean of per-task rates), %c%c 95%% interval, %c bootstrap, %c rate where the bootstrap collapses to a point\n",
		indent, MarkRate, MarkEnd, MarkInterval, MarkBootstrap, MarkCollapsed)
}

// SeparationLines writes pairs (as Separate makes them) as lines a reader
// can take in: each pair's sentence when there are no more pairs than
// agents, else one line per agent, in the pairs' order, naming the later
// agents it completes more or less than and those it cannot be separated
// from, so that n agents take at most n lines, not n(n-1)/2.
func SeparationLines(pairs []Pair, agents int) []string {
	lines := []string{}
	if len(pairs) <= agents {
		for _, p := range pairs {
			lines = append(lines, p.Sentence)
		}
		return lines
	}
	type groups struct{ above, below, close []string }
	var order []string
	by := map[string]*groups{}
	for _, p := range pairs {
		g := by[p.A]
		if g == nil {
			g = &groups{}
			by[p.A] = g
			order = append(order, p.A)
		}
		switch {
		case !p.Separated:
			g.close = append(g.close, p.B)
		case p.Higher == p.A:
			g.above = append(g.above, p.B)
		default:
			g.below = append(g.below, p.B)
		}
	}
	for _, a := range order {
		g := by[a]
		var parts []string
		if len(g.above) > 0 {
			parts = append(parts, "completes more than "+strings.Join(g.above, ", "))
		}
		if len(g.below) > 0 {
			parts = append(parts, "completes less than "+strings.Join(g.below, ", "))
		}
		if len(g.close) > 0 {
			parts = append(parts, "cannot be separated from "+strings.Join(g.close, ", ")+" (intervals overlap)")
		}
		lines = append(lines, a+": "+strings.Join(parts, "; "))
	}
	return lines
}
