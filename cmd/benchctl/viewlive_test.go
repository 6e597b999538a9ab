package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/testenv"
)

const (
	vRunning = "a-41f0e1d2c3b4a596" // qwen on rt-02, running
	vInfra   = "a-23d2e1f0a9b8c7d6" // claude on rt-03, an infra error before the agent ran
)

// TestViewLiveInChromium: a link to an attempt keeps its route through
// the token exchange (and a fragment that is no route of the viewer's is
// dropped); a page that shows a running attempt or run is drawn again as
// it goes on, until it ends; an attempt that never ran says so, and its
// page asks benchd for no journal, model log, changes or output.
func TestViewLiveInChromium(t *testing.T) {
	testenv.Require(t, testenv.Chromium)
	d := newViewDaemon(t, false)
	b := newBrowser(t)
	// Each viewer's token works once; they serve until the test ends.
	first, second := startView(t, d.Socket), startView(t, d.Socket)
	ready := func(route string) string {
		return `document.getElementById('main').dataset.state === 'ready' && location.hash === ` + strconv.Quote(route) +
			` && document.getElementById('main').dataset.hash === ` + strconv.Quote(route)
	}
	running := func(a *apitype.Attempt) {
		a.State, a.Phase, a.Pass, a.Reward, a.Outcome, a.WallMS, a.Finished = apitype.StateRunning, apitype.PhaseRun, false, 0, "", 0, nil
	}
	passed := func(a *apitype.Attempt) {
		end := *a.Started
		end = end.Add(5 * time.Second)
		a.State, a.Phase, a.Pass, a.Reward, a.Outcome, a.WallMS, a.Finished = apitype.StateDone, "", true, 1, apitype.OutcomePass, 5000, &end
	}

	t.Run("route kept through the token", func(t *testing.T) {
		route := "#/attempt/" + vRunning
		b.do(chromedp.Navigate(first.URL + route))
		b.waitFor(`location.pathname === '/' && !location.search && ` + ready(route))
		if got := eval[string](b, `document.getElementById('main').dataset.route`); got != "attempt" {
			t.Errorf("got page %q, want attempt", got)
		}
		if got := b.text("[data-region=head] h1"); !strings.Contains(got, vRunning) {
			t.Errorf("got heading %q, want attempt %s", got, vRunning)
		}
	})

	t.Run("a fragment that is no route is dropped", func(t *testing.T) {
		b.do(chromedp.Navigate(second.URL + `#"><img src=x onerror=alert(1)>`))
		b.waitFor(`location.pathname === '/' && !location.search && document.getElementById('main') !== null && document.getElementById('main').dataset.state === 'ready'`)
		if got := eval[string](b, `location.hash + ' ' + document.getElementById('main').dataset.route`); got != " attempts" {
			t.Errorf("got hash and page %q, want none and attempts", got)
		}
		b.harmless(t)
	})

	t.Run("a running attempt's page follows it", func(t *testing.T) {
		d.update(vRunning, running)
		route := "#/attempt/" + vRunning
		b.show(route)
		if got := eval[string](b, `document.getElementById('main').dataset.live`); got != "on" {
			t.Fatalf("got live %q on a running attempt's page, want on; page: %s; errors %v", got, b.text("main"), eval[any](b, `window.__errors`))
		}
		if got := b.text("[data-region=live]"); !strings.Contains(got, "live") {
			t.Errorf("got live note %q", got)
		}
		drawn := eval[string](b, `document.getElementById('main').dataset.drawn`)
		b.waitFor(`document.getElementById('main').dataset.drawn !== ` + strconv.Quote(drawn))
		d.update(vRunning, passed)
		b.waitFor(ready(route) + ` && document.querySelector('[data-region=verdict] .badge').textContent.trim().toLowerCase() === 'pass'`)
		b.waitFor(`document.getElementById('main').dataset.live === 'off'`)
		// Ended: drawn no more.
		drawn = eval[string](b, `document.getElementById('main').dataset.drawn`)
		time.Sleep(5 * time.Second)
		if got := eval[string](b, `document.getElementById('main').dataset.drawn`); got != drawn {
			t.Errorf("got the ended attempt's page drawn again (%s, then %s), want it left alone", drawn, got)
		}
		if n := b.count("[data-region=live]"); n != 0 {
			t.Errorf("got %d live notes on an ended attempt", n)
		}
	})

	t.Run("the attempts list and a run follow them", func(t *testing.T) {
		d.update(vRunning, running)
		for _, route := range []string{"#/attempts?agent=qwen", "#/attempts?run=r-9e0e11aa22bb33cc", "#/runs?agent=qwen"} {
			t.Run(route, func(t *testing.T) {
				d.update(vRunning, running)
				b.show(route)
				if got := eval[string](b, `document.getElementById('main').dataset.live`); got != "on" {
					t.Fatalf("got live %q, want on", got)
				}
				before := b.text("[data-region=view]")
				d.update(vRunning, passed)
				b.waitFor(`document.getElementById('main').dataset.live === 'off'`)
				if after := b.text("[data-region=view]"); after == before {
					t.Errorf("got the page unchanged after the attempt ended:\n%s", after)
				}
				if strings.HasPrefix(route, "#/attempts?agent") {
					if got := b.text("[data-region=list] tr[data-id='" + vRunning + "'] td:nth-child(7)"); got != "done" {
						t.Errorf("got state %q, want done", got)
					}
				}
			})
		}
	})

	t.Run("a ticked box holds the refresh", func(t *testing.T) {
		d.update(vRunning, running)
		route := "#/attempts?agent=qwen"
		b.show(route)
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-region=list] input[type=checkbox]").click()`))
		drawn := eval[string](b, `document.getElementById('main').dataset.drawn`)
		time.Sleep(5 * time.Second)
		if got := eval[string](b, `document.getElementById('main').dataset.drawn`); got != drawn {
			t.Errorf("got the page drawn again (%s, then %s) under a ticked box, want it held", drawn, got)
		}
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector("[data-region=list] input[type=checkbox]:checked").click()`))
		b.waitFor(`document.getElementById('main').dataset.drawn !== ` + strconv.Quote(drawn))
		d.update(vRunning, passed)
		b.waitFor(`document.getElementById('main').dataset.live === 'off'`)
	})

	t.Run("the scorecard says what it grouped by", func(t *testing.T) {
		b.show("#/scorecard")
		if got := b.text("[data-region=grouped-by]"); !strings.HasPrefix(got, "agents grouped by preset or executable SHA-256, model, version and arguments") {
			t.Errorf("got %q, want what the rows group by", got)
		}
		if got := b.text("table.rates tbody td:first-child"); strings.Contains(got, "--") || strings.Contains(got, "http") {
			t.Errorf("got agent labels %q, want no argument lists", got)
		}
	})

	t.Run("never ran", func(t *testing.T) {
		b.mu.Lock()
		b.requests = nil
		b.mu.Unlock()
		b.show("#/attempt/" + vInfra)
		if got, want := b.text("[data-region=not-run]"), "never ran: gateway model: dial tcp 10.0.0.7:443: connect: connection refused"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		if n := b.count("main .error"); n != 0 {
			t.Errorf("got %d error boxes: %s", n, b.text("main .error"))
		}
		for _, region := range []string{"timeline", "changes", "transcript", "model"} {
			if n := b.count("[data-region=" + region + "]"); n != 0 {
				t.Errorf("got a %s region on an attempt that never ran", region)
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, u := range b.requests {
			if strings.Contains(u, vInfra) && !strings.Contains(u, "/view/attempt?") {
				t.Errorf("got a request %s for an attempt that never ran, want only its record", u)
			}
		}
	})
}
