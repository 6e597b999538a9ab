package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"benchd.dev/client/apitype"
)

// The progress of a set of attempts that benchctl learns of as each one
// ends, not from a run's status: tasks check (benchd streams the check's
// attempts as they end) and library index (one reference run per bundle,
// in turn). It has the three forms of a run's progress:
//
//   - on a terminal, a status line redrawn in place (done of total,
//     passed, failed, infra errors, the estimate of the time left), a
//     line per ended attempt printed above it;
//   - off a terminal, a plain line as each attempt ends ("... [K of N
//     done]") and a status line every --every;
//   - with --json, newline-delimited JSON: the command's own "start",
//     "attempt" and "end" events, and {"type":"progress","time":...,
//     "view":...} every --every.

// setProgress prints the progress of a set of attempts in one form. Its
// methods may be called while its ticker prints the periodic line.
type setProgress struct {
	w     io.Writer
	form  int
	label string        // the command, which starts each status line
	every time.Duration // between periodic lines
	now   func() time.Time

	mu          sync.Mutex
	slots       []apitype.Attempt // one per attempt of the set; queued until it ends
	concurrency int               // attempts run at once, for the estimate
	suffix      func() string     // more words for the status line, or nil
	drawn       bool              // the status line is on the screen
	last        time.Time         // of the last periodic line
	stop        chan struct{}
	stopped     chan struct{}
}

// newSetProgress returns a writer of the progress of slots (attempts not
// ended are queued) in form, of which concurrency run at once.
func newSetProgress(w io.Writer, form int, label string, every time.Duration, slots []apitype.Attempt, concurrency int) *setProgress {
	return &setProgress{w: w, form: form, label: label, every: every, now: time.Now, slots: slots, concurrency: concurrency}
}

// view is the set's counts now; p.mu is held.
func (p *setProgress) view() runView {
	return viewOf("", p.slots, p.concurrency)
}

// statusLine is the line of the counts: the attempts not ended are not
// told apart (benchctl does not see which are running), only counted in
// the estimate.
func (p *setProgress) statusLine(v runView) string {
	c := v.Total
	c.Running, c.Queued = 0, 0
	line := p.label + ": " + countsText(c)
	if p.suffix != nil {
		if s := p.suffix(); s != "" {
			line += "; " + s
		}
	}
	if c.Done < c.Attempts {
		line += "; eta " + formatETA(v.ETAMS)
	}
	return line
}

// emit writes one JSON event; p.mu is held.
func (p *setProgress) emit(ev any) {
	b, _ := json.Marshal(ev)
	p.w.Write(append(b, '\n'))
}

// print writes a line of text, above the status line on a terminal;
// p.mu is held.
func (p *setProgress) print(line string) {
	if p.form == formTable && p.drawn {
		fmt.Fprintf(p.w, "\r\x1b[2K%s\n", line)
		p.drawn = false
		p.redraw()
		return
	}
	fmt.Fprintln(p.w, line)
}

// redraw draws the status line over the one drawn before; p.mu is held.
func (p *setProgress) redraw() {
	fmt.Fprintf(p.w, "\r\x1b[2K%s", p.statusLine(p.view()))
	p.drawn = true
}

// begin prints what is done: text, or in JSON ev; then the status line
// on a terminal, and starts the periodic lines.
func (p *setProgress) begin(text string, ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.form == formJSON {
		p.emit(ev)
	} else {
		fmt.Fprintln(p.w, text)
	}
	if p.form == formTable {
		p.redraw()
	}
	p.last = p.now()
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go p.tick()
}

// tick prints the periodic line until end stops it. On a terminal the
// line is redrawn as attempts end, not by the clock.
func (p *setProgress) tick() {
	defer close(p.stopped)
	if p.form == formTable {
		<-p.stop
		return
	}
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.periodic()
		}
	}
}

// periodic prints the status line (or the "progress" event) if every
// has passed since the last one.
func (p *setProgress) periodic() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.now().Sub(p.last) < p.every {
		return
	}
	p.last = p.now()
	v := p.view()
	switch p.form {
	case formJSON:
		p.emit(struct {
			Type string    `json:"type"`
			Time time.Time `json:"time"`
			View runView   `json:"view"`
		}{"progress", p.now().UTC(), v})
	case formPlain:
		fmt.Fprintln(p.w, p.statusLine(v))
	}
}

// set makes slot i attempt a (an attempt that has not ended yet) without
// printing anything.
func (p *setProgress) set(i int, a apitype.Attempt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slots[i] = a
}

// ended records a, slot i's attempt, as ended and prints it: text (its
// first line followed by the count of the attempts done) or, in JSON, the event event makes of
// the set's view.
func (p *setProgress) ended(i int, a apitype.Attempt, text string, event func(runView) any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slots[i] = a
	v := p.view()
	switch p.form {
	case formJSON:
		p.emit(event(v))
	default:
		first, rest, more := strings.Cut(text, "\n")
		line := fmt.Sprintf("%s [%d of %d done]", first, v.Total.Done, v.Total.Attempts)
		if more {
			line += "\n" + rest
		}
		p.print(line)
	}
	if p.form == formTable {
		p.redraw()
	}
}

// end stops the periodic lines and prints the last: the status line, or
// in JSON the event event makes of the set's view.
func (p *setProgress) end(event func(runView) any) {
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.view()
	switch p.form {
	case formJSON:
		p.emit(event(v))
	case formPlain:
		fmt.Fprintln(p.w, p.statusLine(v))
	case formTable:
		p.redraw()
		fmt.Fprintln(p.w)
	}
}

// abort stops the periodic lines of a set that did not finish, leaving
// the status line as it was.
func (p *setProgress) abort() {
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
		p.stop = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// attemptTime is " in D" of an attempt that started and finished, else "".
func attemptTime(a apitype.Attempt) string {
	if a.Started != nil && a.Finished != nil {
		return " in " + formatMS(a.Finished.Sub(*a.Started).Milliseconds())
	}
	return ""
}
