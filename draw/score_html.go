package draw

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// WriteHTML writes sc as one self-contained HTML page: inline CSS and
// SVG, no script, no external resource. Each series is its own column
// with its own plot (agents of one task set together, by name; an axis
// from 0 to 100%; rates as dots, the reported interval as a thin line
// with caps, the bootstrap interval as a shaded bar, or as a tick when it
// collapses to a point), its separation sentences and the task sets it
// does not compare, its per-task rates and outcomes, and a section per
// attempt (anchor #attempt-ID) with the verdict's reasons and the
// commands that show its verdict and journal.
func WriteHTML(w io.Writer, sc Scorecard, generated time.Time) error {
	page := htmlPage{Rules: sc.RulesVersion, Generated: generated.UTC().Format(time.RFC3339)}
	for _, c := range sc.Series {
		page.Series = append(page.Series, newHTMLSeries(c))
	}
	return scoreTemplate.Execute(w, page)
}

// WritePlotSVG writes the plot of one series as WriteHTML draws it, as
// a standalone SVG document (image/svg+xml): for a page that shows it
// as an image, where nothing in it can run or load anything.
func WritePlotSVG(w io.Writer, c SeriesCard) error {
	return scoreTemplate.ExecuteTemplate(w, "plot", newHTMLSeries(c))
}

// svgText is s with what XML does not allow in text (control
// characters, invalid UTF-8) replaced by U+FFFD, so that an agent's
// label cannot make the standalone plot unreadable.
func svgText(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0xFFFE || r == 0xFFFF {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

type htmlPage struct {
	Rules     string
	Generated string
	Series    []htmlSeries
}

type htmlSeries struct {
	Card       SeriesCard
	Dates      string
	Plot       htmlPlot
	Separation []string // SeparationLines
	Attempts   []htmlAttempt
}

type htmlAttempt struct {
	Task  string
	Agent string
	AttemptOutcome
}

// Plot geometry, in SVG user units.
const (
	plotW      = 520
	plotLeft   = 10
	plotRight  = 500
	plotRowH   = 34
	plotTop    = 24
	plotBottom = 30
)

type htmlPlot struct {
	W, H   int
	Ticks  []htmlTick
	Rows   []htmlPlotRow
	AxisY  int
	TitleY int
	MidX   float64
}

type htmlTick struct {
	X     float64
	Label string
}

type htmlPlotRow struct {
	Y                  int
	LabelY             int
	Agent              string
	HasRate            bool
	Rate               string
	X                  float64
	HasIv, HasBoot     bool
	Collapsed          bool // the bootstrap interval is a point: drawn as a tick
	ILo, IHi, BLo, BHi float64
	BW                 float64
	TickTop, TickBot   int
	BoxY               int
	CapTop, CapBottom  int
	Text               string
}

func xOf(r float64) float64 { return plotLeft + r*(plotRight-plotLeft) }

func newHTMLSeries(c SeriesCard) htmlSeries {
	hs := htmlSeries{Card: c, Dates: "no attempts", Separation: SeparationLines(c.Separation, len(c.Agents))}
	if c.First != nil {
		hs.Dates = fmt.Sprintf("%s to %s", c.First.UTC().Format("2006-01-02 15:04"), c.Last.UTC().Format("2006-01-02 15:04 MST"))
	}
	p := htmlPlot{W: plotW}
	for i := 0; i <= 10; i += 2 {
		p.Ticks = append(p.Ticks, htmlTick{X: xOf(float64(i) / 10), Label: fmt.Sprintf("%d%%", i*10)})
	}
	for i, a := range PlotOrder(c.Agents) {
		y := plotTop + i*plotRowH + 18
		row := htmlPlotRow{Y: y, LabelY: y - 9, BoxY: y - 5, CapTop: y - 5, CapBottom: y + 5, TickTop: y - 13, TickBot: y + 13, Agent: a.Agent}
		text := a.Agent
		if a.Rate != nil {
			row.HasRate, row.X, row.Rate = true, xOf(*a.Rate), fmt.Sprintf("%.0f%%", *a.Rate*100)
			text += fmt.Sprintf(": mean of per-task rates over %d tasks (%d of %d scored attempts passed)", a.Tasks, a.Passes, a.Scored)
		} else {
			text += ": no scored attempt"
		}
		if a.Interval != nil {
			row.HasIv, row.ILo, row.IHi = true, xOf(a.Interval.Lo), xOf(a.Interval.Hi)
		}
		if a.Bootstrap != nil {
			row.HasBoot, row.BLo, row.BHi = true, xOf(a.Bootstrap.Lo), xOf(a.Bootstrap.Hi)
			row.BW = row.BHi - row.BLo
			row.Collapsed = a.Bootstrap.Lo == a.Bootstrap.Hi
			if row.Collapsed {
				text += fmt.Sprintf("; the bootstrap interval is the point %.0f%%", a.Bootstrap.Lo*100)
			}
		}
		row.Text = text
		p.Rows = append(p.Rows, row)
	}
	p.AxisY = plotTop + len(c.Agents)*plotRowH + 4
	p.TitleY = p.AxisY + 32
	p.MidX = xOf(0.5)
	p.H = p.AxisY + plotBottom + 16
	hs.Plot = p
	for _, t := range c.Tasks {
		for _, ag := range t.Agents {
			for _, at := range ag.Attempts {
				hs.Attempts = append(hs.Attempts, htmlAttempt{Task: t.Task, Agent: ag.Agent, AttemptOutcome: at})
			}
		}
	}
	return hs
}

var scoreTemplate = template.Must(template.New("scorecard").Funcs(template.FuncMap{
	"pct": func(i *Interval) string {
		if i == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.1f–%.1f%%", i.Lo*100, i.Hi*100)
	},
	"model": ModelText,
	"rate": func(r *float64) string {
		if r == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", *r*100)
	},
	"join":     strings.Join,
	"svgtext":  svgText,
	"xof":      xOf,
	"taskrate": TaskRateText,
	"class":    func(outcome string) string { return strings.ReplaceAll(outcome, " ", "-") },
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		if s == "" {
			return "-"
		}
		return s
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>benchd scorecard</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.5em; margin: 0 0 .2em; }
h2 { font-size: 1.2em; margin: .2em 0; }
h3 { font-size: 1em; margin: 1.2em 0 .4em; }
.meta { color: #555; }
.columns { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.series { flex: 1 1 460px; min-width: 0; max-width: 760px; overflow-x: auto; border: 1px solid #ccc; border-radius: 6px; padding: 1em; }
table { border-collapse: collapse; margin: .3em 0; }
th, td { border-bottom: 1px solid #e2e2e2; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.rates { font-size: .9em; }
td.iv { white-space: nowrap; font-variant-numeric: tabular-nums; }
.pass { color: #116329; } .fail { color: #b3261e; } .infra-error, .canceled, .unresolved { color: #8a6d00; }
a { color: inherit; }
.sep li { margin: .15em 0; }
.attempt { border-top: 1px solid #eee; padding: .4em 0; }
code { background: #f4f4f4; padding: 0 .25em; border-radius: 3px; }
svg text { font: 12px system-ui, sans-serif; }
.note { color: #555; font-size: .9em; }
</style>
</head>
<body>
<h1>Scorecard</h1>
<p class="meta">Grading rules {{.Rules}}. Generated {{.Generated}}. Each series stands alone: series are never joined into one line or one figure.
Agents are listed by name, not by rate; a rate is the mean of per-task rates (each task weighs the same); agents are compared only with agents measured on the same task set, and those whose intervals overlap cannot be separated and are not ranked.</p>
<div class="columns">
{{range .Series}}{{$s := .}}
<section class="series" id="series-{{.Card.ID}}">
<h2>Series {{.Card.Series.Name}}</h2>
<p class="meta">id <code>{{.Card.ID}}</code>, {{.Dates}}<br>
tasks: {{join .Card.Series.Tasks ", "}}<br>
draw rule: {{.Card.Series.DrawRule}}<br>
grading rules: {{.Card.Series.RulesVersion}}{{if .Card.LeftOut}}; {{.Card.LeftOut}} attempt(s) graded by another bundle left out{{end}}{{if .Card.Retried}}; {{.Card.Retried}} retried infra error(s) left out{{end}}{{if .Card.Unfinished}}; {{.Card.Unfinished}} unfinished{{end}}</p>
<h3>Completion rate, 95% intervals</h3>
{{template "plot" .}}
<p class="note">Dot: rate (mean of per-task rates). Thin line with caps: 95% interval. Shaded bar: bootstrap interval over tasks and attempts; an orange tick where it collapses to a point. Agents of one task set are drawn together, by name.</p>
<p class="note grouped-by">{{.Card.GroupedBy}}{{if .Card.InfraOnly}}; {{.Card.InfraOnly}} infra error(s) of agents that never ran left out (not rows){{end}}</p>
<table class="rates">
<tr><th>agent</th><th>task set</th><th>tasks</th><th>passed</th><th>scored</th><th>rate</th><th>95% interval</th><th>bootstrap 95% (tasks, attempts)</th><th>Wilson 95% (tasks)</th><th>not scored</th><th>model calls</th></tr>
{{range .Card.Agents}}<tr><td>{{.Agent}}</td><td class="iv">{{.TaskSet}}</td><td class="num">{{.Tasks}}</td><td class="num">{{.Passes}}</td><td class="num">{{.Scored}}</td><td class="num">{{rate .Rate}}</td><td class="iv">{{pct .Interval}}</td><td class="iv">{{pct .Bootstrap}}</td><td class="iv">{{pct .TaskWilson}}</td><td>{{if .InfraErrors}}{{.InfraErrors}} infra error(s) {{end}}{{if .Canceled}}{{.Canceled}} canceled {{end}}{{if .Unresolved}}{{.Unresolved}} unresolved (left to review){{end}}{{if .Note}} <span class="note">{{.Note}}</span>{{end}}</td><td class="iv">{{model .Model}}</td></tr>
{{end}}</table>
<h3>Separation</h3>
<ul class="sep">{{range .Separation}}<li class="separation">{{.}}</li>{{end}}{{range .Card.NotCompared}}<li class="not-compared">{{.}}</li>{{end}}{{if not (or .Card.Separation .Card.NotCompared)}}<li>one agent or none: nothing to compare</li>{{end}}</ul>
<h3>Per task: rates and what happened</h3>
<table class="tasks">
<tr><th>task</th><th>agent</th><th>rate</th><th>attempts, oldest first</th><th>model calls</th></tr>
{{range .Card.Tasks}}{{$t := .}}{{range .Agents}}<tr><td>{{$t.Task}}</td><td>{{.Agent}}</td><td class="num">{{taskrate .}}</td><td>{{range $i, $a := .Attempts}}{{if $i}}, {{end}}<a class="{{class $a.Outcome}}" href="#attempt-{{$a.ID}}">{{$a.Outcome}}</a>{{end}}</td><td class="iv">{{model .Model}}</td></tr>
{{else}}<tr><td>{{$t.Task}}</td><td colspan="4">no attempt{{if $t.LeftOut}} ({{$t.LeftOut}} graded by another bundle, left out){{end}}</td></tr>
{{end}}{{end}}</table>
<h3>Attempts</h3>
{{range .Attempts}}<div class="attempt" id="attempt-{{.ID}}">
<strong>{{.ID}}</strong> {{.Task}}, {{.Agent}}: <span class="{{class .Outcome}}">{{.Outcome}}</span> <span class="meta">{{.Created.UTC.Format "2006-01-02 15:04:05 MST"}}</span>
{{if .Reasons}}<ul>{{range .Reasons}}<li><code>{{.Code}}</code> {{.Message}}</li>{{end}}</ul>{{end}}
{{if .InfraError}}<div class="note">infra error: {{.InfraError}}</div>{{end}}
<div>verdict: <code>benchctl show {{.ID}}</code> &middot; journal: <code>benchctl log {{.ID}}</code></div>
</div>
{{else}}<p>no attempts</p>{{end}}
</section>
{{end}}
</div>
</body>
</html>
{{define "plot"}}<svg class="plot" role="img" font-family="system-ui, sans-serif" font-size="12" aria-label="completion rates of series {{svgtext .Card.Series.Name}} with their intervals" style="width: 100%; max-width: {{.Plot.W}}px" viewBox="0 0 {{.Plot.W}} {{.Plot.H}}" xmlns="http://www.w3.org/2000/svg">
{{$s := .}}{{range .Plot.Ticks}}<line x1="{{.X}}" y1="16" x2="{{.X}}" y2="{{$s.Plot.AxisY}}" stroke="#e6e6e6"/>
<text x="{{.X}}" y="{{$s.Plot.AxisY}}" dy="16" text-anchor="middle" fill="#555">{{.Label}}</text>
{{end}}{{range .Plot.Rows}}<g class="agent-row"><title>{{svgtext .Text}}</title>
<text x="10" y="{{.LabelY}}" fill="#1b1b1b">{{svgtext .Agent}}{{if .HasRate}} ({{.Rate}}){{end}}</text>
{{if .HasBoot}}{{if .Collapsed}}<line class="bootstrap collapsed" x1="{{.BLo}}" y1="{{.TickTop}}" x2="{{.BLo}}" y2="{{.TickBot}}" stroke="#c05a00" stroke-width="3"/>{{else}}<rect class="bootstrap" x="{{.BLo}}" y="{{.BoxY}}" width="{{.BW}}" height="10" fill="#1f4e8c" opacity="0.3"/>{{end}}{{end}}
{{if .HasIv}}<g class="interval" stroke="#5b7fae" stroke-width="2"><line x1="{{.ILo}}" y1="{{.Y}}" x2="{{.IHi}}" y2="{{.Y}}"/><line x1="{{.ILo}}" y1="{{.CapTop}}" x2="{{.ILo}}" y2="{{.CapBottom}}"/><line x1="{{.IHi}}" y1="{{.CapTop}}" x2="{{.IHi}}" y2="{{.CapBottom}}"/></g>{{end}}
{{if .HasRate}}<circle class="rate" cx="{{.X}}" cy="{{.Y}}" r="5" fill="#1f4e8c" stroke="#fff" stroke-width="1.5"/>{{end}}
</g>
{{end}}<line class="axis" x1="{{xof 0}}" y1="{{.Plot.AxisY}}" x2="{{xof 1}}" y2="{{.Plot.AxisY}}" stroke="#555"/>
<text class="axis-title" x="{{.Plot.MidX}}" y="{{.Plot.TitleY}}" text-anchor="middle" fill="#555">completion rate, mean of per-task rates (0–100%)</text>
</svg>{{end}}`))
