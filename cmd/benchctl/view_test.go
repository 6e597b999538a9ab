package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/testenv"
)

var updateView = flag.Bool("update-view", false, "rewrite the viewer's layout goldens in testdata/view from this run")

// startView runs benchctl view --json against socket until the test
// ends, and returns what it printed once it listened.
func startView(t *testing.T, socket string, args ...string) viewListening {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr lockedWriter
	done := make(chan int, 1)
	go func() {
		c := &CLI{Stdout: pw, Stderr: &stderr, LookupEnv: func(string) (string, bool) { return "", false }}
		done <- c.Run(ctx, append([]string{"--socket", socket, "view", "--json"}, args...))
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("benchctl view printed no line: %v (exit %d; stderr %s)", err, <-done, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("benchctl view: got exit %d after the interrupt, want 0; stderr %s", code, stderr.String())
		}
	})
	var l viewListening
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatalf("benchctl view --json printed %q: %v", line, err)
	}
	return l
}

// lockedWriter is a buffer the command writes while the test reads.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestViewCommand: view listens on loopback only, prints one JSON line
// with its URL, refuses a benchd that is not there and a non-loopback
// address, and its derived views answer with the same results as the
// commands they come from.
func TestViewCommand(t *testing.T) {
	d := newViewDaemon(t, false)
	t.Run("refusals", func(t *testing.T) {
		tests := []struct {
			name, socket string
			args         []string
			want         string
		}{
			{"not loopback", d.Socket, []string{"--listen", "0.0.0.0:0"}, "not a loopback address"},
			{"a name", d.Socket, []string{"--listen", "localhost:0"}, "not a loopback address"},
			{"an argument", d.Socket, []string{"x"}, `unexpected argument "x"`},
			{"a bad list", d.Socket, []string{"--list", "/nonexistent"}, "--list /nonexistent"},
			{"no benchd", filepath.Join(t.TempDir(), "none.sock"), nil, "benchd is not running"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				code, out, _ := runCLI(t, tt.socket, nil, false, append([]string{"view", "--json"}, tt.args...)...)
				var e errorJSON
				json.Unmarshal([]byte(out), &e)
				if code != exitError || !strings.Contains(e.Error, tt.want) || e.Command != "view" {
					t.Errorf("got exit %d, %s; want exit 2 and an error saying %q", code, out, tt.want)
				}
			})
		}
	})

	l := startView(t, d.Socket)
	if u, err := url.Parse(l.URL); err != nil || u.Host != l.Listening || !strings.HasPrefix(u.Host, "127.0.0.1:") || len(u.Query().Get("token")) != 64 {
		t.Fatalf("got %+v, want a URL on 127.0.0.1 with a 64-digit token", l)
	}
	hc := login(t, l.URL)
	base := "http://" + l.Listening
	getJSON := func(t *testing.T, path string, out any) int {
		t.Helper()
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode
	}

	t.Run("attempts", func(t *testing.T) {
		tests := []struct {
			query string
			want  []string // the attempts' ids, newest first
		}{
			{"agent=codex&task=rt-01", []string{vMain, "a-11d0a4e5b6c7d8e9"}},
			{"agent=claude&state=infra_error", []string{"a-23d2e1f0a9b8c7d6"}},
			{"purpose=check&limit=2", []string{"a-03e3b0c44298fc1c", "a-02e3b0c44298fc1c"}},
			{"run=" + vRunC + "&task=rt-03&task=rt-02", []string{"a-24e3f2a1b0c9d8e7", "a-23d2e1f0a9b8c7d6", "a-22c1d0e9f8a7b6c5", "a-25f4a3b2c1d0e9f8"}},
			{"model=qwen3-coder-plus&since=2026-12-01T10:30:00Z", []string{"a-41f0e1d2c3b4a596", "a-31a2b3c4d5e6f7a8"}},
			{"series=builtin&agent=qwen&state=running", []string{"a-41f0e1d2c3b4a596"}},
			{"until=2026-12-01&agent=codex", nil},
		}
		for _, tt := range tests {
			t.Run(tt.query, func(t *testing.T) {
				var res viewAttempts
				if code := getJSON(t, "/view/attempts?"+tt.query, &res); code != 200 {
					t.Fatalf("got status %d, want 200", code)
				}
				var got []string
				for _, s := range res.Attempts {
					got = append(got, s.Attempt.ID)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			})
		}
		for _, q := range []string{"state=lost", "since=yesterday", "series=/etc/passwd", "limit=0", "hack=1", "all-purposes=1"} {
			var e apitype.Error
			if code := getJSON(t, "/view/attempts?"+q, &e); code != 400 || e.Code != apitype.CodeInvalid {
				t.Errorf("%s: got %d %+v, want 400 invalid", q, code, e)
			}
		}
	})

	t.Run("same as the commands", func(t *testing.T) {
		var sv shownAttempt
		getJSON(t, "/view/attempt?attempt="+vOther, &sv)
		code, out, _ := runCLI(t, d.Socket, nil, false, "list", "--agent", "claude", "--task", "rt-01")
		if code != 0 || !strings.Contains(out, vOther) || !strings.Contains(out, sv.Verdict+" ") || !strings.Contains(out, sv.Wall) {
			t.Errorf("list says\n%s\nthe view says verdict %q, wall %q", out, sv.Verdict, sv.Wall)
		}
		var dv map[string]any
		getJSON(t, "/view/diff?attempt="+vOther, &dv)
		_, out, _ = runCLI(t, d.Socket, nil, false, "diff", vOther, "--json")
		var want map[string]any
		json.Unmarshal([]byte(out), &want)
		if !jsonEqual(dv["diffs"], want["diffs"]) || !jsonEqual(dv["changeset"], want["changeset"]) {
			t.Errorf("the view's diff %v is not benchctl diff's %v", dv, want)
		}
		var lv viewLog
		getJSON(t, "/view/log?attempt="+vMain, &lv)
		_, out, _ = runCLI(t, d.Socket, nil, false, "log", vMain, "--json")
		var lw logResult
		json.Unmarshal([]byte(out), &lw)
		if !lv.Verified || lv.Head != lw.Head || len(lv.Records) != len(lw.Records) || lv.Records[4].Paths != recordPaths(lw.Records[4]) {
			t.Errorf("the view's log (verified %v, head %s, %d records) is not benchctl log's (head %s, %d records)", lv.Verified, lv.Head, len(lv.Records), lw.Head, len(lw.Records))
		}
		var sc viewScorecard
		getJSON(t, "/view/scorecard?series=builtin", &sc)
		_, out, _ = runCLI(t, d.Socket, nil, false, "scorecard", "--series", "builtin", "--json")
		var sw struct {
			Series []struct {
				ID     string `json:"id"`
				Agents []struct {
					Agent    string         `json:"agent"`
					Rate     *float64       `json:"rate"`
					Interval map[string]any `json:"interval"`
				} `json:"agents"`
				NotCompared []string `json:"not_compared"`
			} `json:"series"`
		}
		json.Unmarshal([]byte(out), &sw)
		if len(sc.Series) != 1 || len(sw.Series) != 1 || sc.Series[0].ID != sw.Series[0].ID || len(sc.Series[0].Agents) != len(sw.Series[0].Agents) ||
			!slices.Equal(sc.Series[0].NotCompared, sw.Series[0].NotCompared) || !strings.HasPrefix(sc.Series[0].Plot, "<svg") {
			t.Fatalf("the view's scorecard %+v is not benchctl scorecard's %s", sc, out)
		}
		for i, a := range sc.Series[0].Agents {
			w := sw.Series[0].Agents[i]
			if a.Agent != w.Agent || *a.Rate != *w.Rate || a.Interval.Lo != w.Interval["lo"] {
				t.Errorf("agent %d: got %s %v %v, want %s %v %v", i, a.Agent, *a.Rate, a.Interval, w.Agent, *w.Rate, w.Interval)
			}
		}
	})
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// login trades the URL's token for the session, as a browser does.
func login(t *testing.T, u string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 60 * time.Second}
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the token's URL: got %s, want 200", resp.Status)
	}
	return hc
}

// browser is one headless Chromium and its tab.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	requests []string // every URL the page asked for
	dialogs  []string
}

// The page's size in the tests, screenshots and goldens.
const viewW, viewH = 1280, 900

// watchPage runs in every document before its own scripts: it records
// what hostile data would do if it ran (a dialog, a CSP violation, an
// error) instead of letting it happen unseen.
const watchPage = `
window.__alerts = [];
for (const f of ['alert', 'confirm', 'prompt', 'print']) window[f] = (m) => { window.__alerts.push(f + ': ' + m); };
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || '')));
window.__errors = [];
window.addEventListener('error', (e) => window.__errors.push(String(e.message)));
window.addEventListener('unhandledrejection', (e) => window.__errors.push(String(e.reason)));
`

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath("/usr/bin/chromium"), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(viewW, viewH),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"), chromedp.Flag("force-color-profile", "srgb"),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	b := &browser{t: t, ctx: ctx}
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: viewW, Height: viewH, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchPage}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.requests = append(b.requests, ev.Request.URL)
			b.mu.Unlock()
		}
	}()
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return b
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitFor waits until expr is true in the page; slow machines get a
// minute. A poll ends with the document it ran in: one that a
// navigation replaced is polled again in the new one.
func (b *browser) waitFor(expr string) {
	b.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		if navigated := strings.Contains(err.Error(), "context") || strings.Contains(err.Error(), "navigated"); time.Now().After(deadline) || b.ctx.Err() != nil || !navigated {
			says, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ''`))
			b.t.Fatalf("waiting for %s: %v (the page says: %s)", expr, err, says)
		}
	}
}

// show goes to one of the page's routes and waits until it is drawn.
func (b *browser) show(route string) {
	b.t.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](`location.hash = ` + strconv.Quote(route)))
	b.waitFor(`document.getElementById('main').dataset.state === 'ready' && document.getElementById('main').dataset.hash === ` + strconv.Quote(route))
}

// open loads url (the viewer's, with its token) and waits for the page.
func (b *browser) open(url string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url))
	b.waitFor(`location.pathname === '/' && !location.search && document.getElementById('main') !== null && document.getElementById('main').dataset.state === 'ready'`)
}

// screenshot takes the top of the page, height pixels of it, with the
// mouse out of the way.
func (b *browser) screenshot(height int) []byte {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: viewW - 1, Y: 1}); err != nil {
		b.t.Fatal(err)
	}
	metrics := func(h int) {
		if _, err := chromedp.Call(b.ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: viewW, Height: int64(h), DeviceScaleFactor: 1}); err != nil {
			b.t.Fatal(err)
		}
	}
	if height != viewH {
		metrics(height)
		defer metrics(viewH)
	}
	shot, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	return shot
}

// text is the rendered text of the elements selector finds, joined.
func (b *browser) text(selector string) string {
	b.t.Helper()
	return eval[string](b, `[...document.querySelectorAll(`+strconv.Quote(selector)+`)].map((e) => e.innerText).join('\n')`)
}

func (b *browser) count(selector string) int {
	b.t.Helper()
	return eval[int](b, `document.querySelectorAll(`+strconv.Quote(selector)+`).length`)
}

// harmless checks that nothing from the data became markup or ran: no
// dialog, no CSP violation, no error, no element that runs or loads
// anything but the page's own, no link out of the page.
func (b *browser) harmless(t *testing.T) {
	t.Helper()
	got := eval[map[string]any](b, `({
		alerts: window.__alerts, csp: window.__csp, errors: window.__errors,
		scripts: [...document.scripts].map((s) => s.getAttribute('src')),
		active: [...document.querySelectorAll('iframe, object, embed, svg, frame, base, form[action], meta[http-equiv], link:not([rel=stylesheet])')].map((e) => e.outerHTML.slice(0, 80)),
		images: [...document.images].filter((i) => !(i.classList.contains('plot') && i.src.startsWith('data:image/svg+xml'))).map((i) => i.outerHTML.slice(0, 80)),
		handlers: [...document.querySelectorAll('*')].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name) || /^\s*javascript:/i.test(a.value)).map((a) => e.tagName + ' ' + a.name)),
		links: [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')).filter((h) => !h.startsWith('#/')),
		markup: [...document.querySelectorAll('main b, main i, main u, main script, main img:not(.plot), main textarea, main style')].length,
	})`)
	for k, v := range got {
		if k == "scripts" {
			if !jsonEqual(v, []any{"/app.js"}) {
				t.Errorf("got scripts %v, want /app.js alone", v)
			}
			continue
		}
		if n, ok := v.(float64); ok && n == 0 {
			continue
		}
		if l, ok := v.([]any); ok && len(l) == 0 {
			continue
		}
		t.Errorf("%s: got %v, want none", k, v)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		t.Errorf("got dialogs %q, want none", b.dialogs)
	}
}

// TestViewInChromium renders every page of the viewer in headless
// Chromium against the fixtures and reads the DOM: the attempts with
// filters, the runs, an attempt's timeline (journal and model calls by
// time, verdict, transcript, changes), the comparison, the scorecard; a
// hostile attempt's markup stays text; each page's layout matches its
// golden.
func TestViewInChromium(t *testing.T) {
	testenv.Require(t, testenv.Chromium)
	d := newViewDaemon(t, false)
	l := startView(t, d.Socket)
	b := newBrowser(t)
	b.open(l.URL)

	t.Run("attempts", func(t *testing.T) {
		b.show("#/attempts?agent=codex")
		rows := b.text("[data-region=list] tbody tr")
		for _, want := range []string{vMain, "a-11d0a4e5b6c7d8e9", "a-12f4b1c2d3e4f5a6", "a-13a9c8b7d6e5f4a3"} {
			if !strings.Contains(rows, want) {
				t.Errorf("got rows\n%s\nwant %s", rows, want)
			}
		}
		if n := b.count("[data-region=list] tbody tr"); n != 4 {
			t.Errorf("got %d rows of agent codex, want 4", n)
		}
		if got := b.text("[data-region=list] tr[data-id='a-12f4b1c2d3e4f5a6'] .badge"); got != "FAIL" {
			t.Errorf("got verdict %q, want FAIL", got)
		}
		if got := b.text(".top nav a.current"); got != "Attempts" {
			t.Errorf("got the current page %q, want Attempts", got)
		}
	})

	t.Run("filter form", func(t *testing.T) {
		b.show("#/attempts")
		b.do(chromedp.SetValue(chromedp.CSS("form.filters input[name=agent]"), "claude"),
			chromedp.Click(chromedp.CSS("form.filters input[name=state][value=infra_error]")),
			chromedp.SetValue(chromedp.CSS("form.filters input[name=task]"), "rt-03, rt-02"),
			chromedp.Click(chromedp.CSS("form.filters button[type=submit]")))
		want := "#/attempts?agent=claude&task=rt-03&task=rt-02&state=infra_error"
		b.waitFor(`document.getElementById('main').dataset.hash === ` + strconv.Quote(want) + ` && document.getElementById('main').dataset.state === 'ready'`)
		if got := b.text("[data-region=list] tbody td:nth-child(2)"); got != "a-23d2e1f0a9b8c7d6" {
			t.Errorf("got attempts %q, want the infra error a-23d2e1f0a9b8c7d6", got)
		}
		if got := eval[string](b, `document.querySelector('form.filters input[name=task]').value`); got != "rt-03, rt-02" {
			t.Errorf("the form after applying: got task %q, want rt-03, rt-02", got)
		}
		b.show("#/attempts?since=yesterday")
		if got := b.text("main .error"); !strings.Contains(got, `--since "yesterday"`) {
			t.Errorf("a bad filter: got %q, want the error naming it", got)
		}
	})

	t.Run("runs", func(t *testing.T) {
		b.show("#/runs")
		got := b.text("[data-region=list] tbody")
		for _, want := range []string{vRunX, vRunC, "r-0d1e2f3a4b5c6d7e", "builtin:reference"} {
			if !strings.Contains(got, want) {
				t.Errorf("got runs\n%s\nwant %s", got, want)
			}
		}
		b.show("#/attempts?run=" + vRunC)
		if got := b.text("[data-region=run]"); !strings.Contains(got, "claude") || !strings.Contains(got, "rt-01, rt-02, rt-03") || !strings.Contains(got, "1 retry") {
			t.Errorf("got the run's card\n%s\nwant its agent, tasks and retry", got)
		}
	})

	t.Run("attempt", func(t *testing.T) {
		b.show("#/attempt/" + vMain)
		head := b.text("[data-region=head]")
		for _, want := range []string{vMain, "rt-01", vRunX, "pass", "reward 1"} {
			if !strings.Contains(head, want) {
				t.Errorf("got the head\n%s\nwant %q", head, want)
			}
		}
		facts := b.text("[data-region=facts]")
		for _, want := range []string{"6.8s", "148.0 MiB", "bench-01", "/opt/benchd-agents/node_modules/.bin/codex", "gpt-5.1-codex", "OPENAI_API_KEY (values not kept)", "exec --full-auto", "10m00s wall, 1.0 GiB memory, 2 CPUs", "http https://api.openai.com/v1"} {
			if !strings.Contains(facts, want) {
				t.Errorf("got the facts\n%s\nwant %q", facts, want)
			}
		}
		model := b.text("[data-region=model]")
		for _, want := range []string{"4\nmodel calls", "25,323\ninput tokens (22,016 cached)", "770\noutput tokens", "3\ntool calls", "$0"} {
			if !strings.Contains(model, want) {
				t.Errorf("got the model usage\n%s\nwant %q", model, want)
			}
		}
		// The timeline: journal records and model calls in time order.
		kinds := eval[[]string](b, `[...document.querySelectorAll('table.timeline tbody tr')].map((r) => r.dataset.kind + ' ' + r.querySelector('td.op').innerText)`)
		want := []string{"mark mount", "model model #1", "model model #2", "fs open", "fs write", "fs release", "ignored mkdir", "ignored create", "ignored write", "ignored release", "model model #3", "denied unlink", "model model #4", "mark unmount"}
		if !slices.Equal(kinds, want) {
			t.Errorf("got the timeline\n%q\nwant\n%q", kinds, want)
		}
		row := b.text("table.timeline tr[data-kind=model][data-seq='2']")
		for _, w := range []string{"responses · gpt-5.1-codex", "200", "2.2s", "6,301 in (5,120 cached) · 388 out", "tool apply_patch", "The modulus path wraps one step early"} {
			if !strings.Contains(row, w) {
				t.Errorf("got model call 2\n%s\nwant %q", row, w)
			}
		}
		// Tool arguments are folded until opened.
		if open := eval[bool](b, `document.querySelector('tr[data-seq="2"][data-kind=model] details.tool').open`); open {
			t.Errorf("got the tool call's arguments open, want them folded")
		}
		b.do(chromedp.Click(chromedp.CSS(`tr[data-seq="2"][data-kind=model] details.tool summary`)))
		if args := b.text(`tr[data-seq="2"][data-kind=model] details.tool pre`); !strings.Contains(args, "*** Update File: src/counter.py") {
			t.Errorf("got the opened arguments %q, want the patch", args)
		}
		if got := b.text("table.timeline tr[data-kind=denied]"); !strings.Contains(got, "plan.md") || !strings.Contains(got, "denied") || !strings.Contains(got, "EACCES") || !strings.Contains(got, "rm") {
			t.Errorf("got the denied record %q, want rm's unlink of plan.md, denied, EACCES", got)
		}
		if got := b.text("[data-region=timeline] p.note"); !strings.Contains(got, "chain intact") {
			t.Errorf("got %q, want the chain checked", got)
		}
		// Only what was denied.
		b.do(chromedp.Click(chromedp.CSS(`[data-region=timeline] .legend label:nth-child(4) input`)))
		b.waitFor(`document.querySelectorAll('table.timeline tbody tr').length === 1 && document.querySelector('table.timeline tbody tr').dataset.kind === 'denied'`)
		// The stored request, on demand.
		b.do(chromedp.Click(chromedp.CSS(`[data-region=timeline] .legend label:nth-child(4) input`)),
			chromedp.Click(chromedp.CSS(`tr[data-seq="1"][data-kind=model] button.link`)))
		b.waitFor(`document.querySelector('tr[data-seq="1"][data-kind=model] pre.block') !== null`)
		if got := b.text(`tr[data-seq="1"][data-kind=model] pre.block`); !strings.Contains(got, "Authorization: [redacted]") {
			t.Errorf("got the stored request %q", got)
		}
		if got := b.text("[data-region=changes]"); !strings.Contains(got, "modified src/counter.py") || !strings.Contains(got, "+        self.value = (self.value + 1) % self.size") {
			t.Errorf("got the changes\n%s\nwant the diff of src/counter.py", got)
		}
		if got := b.text("[data-region=transcript]"); !strings.Contains(got, "1 passed in 0.03s") || !strings.Contains(got, "Permission denied") {
			t.Errorf("got the transcript\n%s", got)
		}
	})

	t.Run("no model log", func(t *testing.T) {
		b.show("#/attempt/a-03e3b0c44298fc1c")
		if got := b.text("[data-region=model]"); !strings.Contains(got, "the attempt had no HTTP gateway") {
			t.Errorf("no gateway: got %q", got)
		}
		d.setNoModel(true)
		defer d.setNoModel(false)
		b.show("#/attempt/" + vOther)
		if got := b.text("[data-region=model]"); !strings.Contains(got, "this benchd does not record model calls") {
			t.Errorf("an older benchd: got %q", got)
		}
		if n := b.count("table.timeline tr[data-kind=fs]"); n == 0 {
			t.Errorf("an older benchd: got no journal records, want the timeline of the journal alone")
		}
	})

	t.Run("compare", func(t *testing.T) {
		b.show("#/attempts?task=rt-01")
		b.do(chromedp.Click(chromedp.CSS(`tr[data-id="`+vMain+`"] input[type=checkbox]`)),
			chromedp.Click(chromedp.CSS(`tr[data-id="`+vOther+`"] input[type=checkbox]`)),
			chromedp.Click(chromedp.CSS(`[data-region=list] .toolbar button`)))
		b.waitFor(`document.getElementById('main').dataset.route === 'compare' && document.getElementById('main').dataset.state === 'ready'`)
		sides := eval[[]string](b, `[...document.querySelectorAll('[data-region=side]')].map((e) => e.innerText)`)
		if len(sides) != 2 {
			t.Fatalf("got %d sides, want 2", len(sides))
		}
		for _, w := range []string{vMain, "pass", "every rule held", "gpt-5.1-codex", "modified src/counter.py", "+        self.value = (self.value + 1) % self.size\n"} {
			if !strings.Contains(sides[0], w) {
				t.Errorf("got the first side\n%s\nwant %q", sides[0], w)
			}
		}
		for _, w := range []string{vOther, "FAIL", "tests_failed", "wrong_files", "claude-sonnet-4-5", "2 calls", "or self.size"} {
			if !strings.Contains(sides[1], w) {
				t.Errorf("got the second side\n%s\nwant %q", sides[1], w)
			}
		}
		b.show("#/compare/" + vMain + "/a-12f4b1c2d3e4f5a6")
		if got := b.text("main .error"); !strings.Contains(got, "only attempts of one task are compared") {
			t.Errorf("two tasks: got %q", got)
		}
	})

	t.Run("scorecard", func(t *testing.T) {
		b.show("#/scorecard")
		got := b.text("[data-region=series]")
		for _, w := range []string{"Series built-in suite", "codex", "claude", "qwen", "not compared: measured on different task sets", "rt-01..rt-03", "1/2 (50%)"} {
			if !strings.Contains(got, w) {
				t.Errorf("got the scorecard\n%s\nwant %q", got, w)
			}
		}
		if strings.Contains(got, "builtin:reference") {
			t.Errorf("got the reference's check attempts on the scorecard, want runs only")
		}
		if ok := eval[bool](b, `(() => { const i = document.querySelector('img.plot'); return i.complete && i.naturalWidth > 0; })()`); !ok {
			t.Errorf("the plot did not load as an image")
		}
		if got := b.text("[data-region=series-model]"); !strings.Contains(got, "codex") || !strings.Contains(got, "25,323") || !strings.Contains(got, "$0.0146") {
			t.Errorf("got the series' model calls\n%s\nwant codex's calls summed (25,323 tokens in, $0.0146)", got)
		}
		if n := b.count("[data-region=series] table.tasks a"); n < 8 {
			t.Errorf("got %d attempts linked from the per-task table, want every scored one", n)
		}
		b.show("#/scorecard?all-purposes=1&agent=builtin%3Areference")
		if got := b.text("[data-region=series] table.rates"); !strings.Contains(got, "builtin:reference") || strings.Contains(got, "codex") {
			t.Errorf("all purposes, one agent: got\n%s", got)
		}
		b.show("#/scorecard?series=nope")
		if got := b.text("main .error"); !strings.Contains(got, `"nope" matches 0 series`) {
			t.Errorf("an unknown series: got %q", got)
		}
	})

	t.Run("layout", func(t *testing.T) {
		for _, p := range []struct{ name, route string }{
			{"attempts", "#/attempts"},
			{"runs", "#/runs"},
			{"attempt", "#/attempt/" + vMain},
			{"compare", "#/compare/" + vMain + "/" + vOther},
			{"scorecard", "#/scorecard"},
		} {
			t.Run(p.name, func(t *testing.T) {
				b.show(p.route)
				if p.name == "scorecard" {
					b.waitFor(`[...document.images].every((i) => i.complete)`)
				}
				checkLayout(t, b, p.name)
			})
		}
	})

	// The screenshots of docs/: BENCHD_VIEW_SHOTS=DIR writes them there.
	if dir := os.Getenv("BENCHD_VIEW_SHOTS"); dir != "" {
		for _, s := range []struct {
			file, route string
			height      int
			then        string // JavaScript run before the shot
		}{
			{"viewer-attempts.png", "#/attempts", viewH, ""},
			{"viewer-attempt.png", "#/attempt/" + vMain, 1500, `document.querySelector('tr[data-kind=model][data-seq="2"] details.tool').open = true`},
			{"viewer-compare.png", "#/compare/" + vMain + "/" + vOther, viewH, ""},
			{"viewer-scorecard.png", "#/scorecard", 1300, ""},
		} {
			b.show(s.route)
			b.waitFor(`[...document.images].every((i) => i.complete)`)
			if s.then != "" {
				b.do(chromedp.Evaluate[chromedp.Void](s.then))
			}
			shot := b.screenshot(s.height)
			if err := os.WriteFile(filepath.Join(dir, s.file), shot, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	// A viewer of the hostile fixture, in the same browser.
	t.Run("hostile", func(t *testing.T) {
		hd := newViewDaemon(t, true)
		hl := startView(t, hd.Socket)
		b.open(hl.URL)
		for _, route := range []string{
			"#/attempt/" + vHostile,
			"#/attempts?run=r-666e6f7468696e67",
			"#/runs?task=rt-01",
			"#/compare/" + vHostile + "/" + vMain,
			"#/scorecard?agent=" + url.QueryEscape(vEvil.Spec),
		} {
			t.Run(route, func(t *testing.T) {
				b.show(route)
				// Open every fold, ask for the stored messages: all of
				// it on the screen, as text.
				b.do(chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details').forEach((d) => { d.open = true; }); document.querySelectorAll('button.link').forEach((x) => x.click())`))
				b.waitFor(`![...document.querySelectorAll('button.link')].length || document.querySelectorAll('pre.block').length > 0`)
				b.harmless(t)
			})
		}
		b.show("#/attempt/" + vHostile)
		b.do(chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details').forEach((d) => { d.open = true; })`))
		text := eval[string](b, `document.body.innerText`)
		for _, w := range []string{vEvil.Spec, vEvil.Exe, `src/<img src=x onerror=alert("path")>.py`, "src/javascript:alert('rename').py", `plan.md"><svg onload=alert('denied')>`,
			"<b>node</b>", `<img src=x onerror=alert("reason")>`, "<i>code</i>", `"><img src=x onerror=alert('model')>`, `<img src=x onerror=alert('tool')>`,
			"cmd: </script><svg onload=alert('args')>", "href: javascript:alert('args')", "<img src=x onerror=alert('text')>", "</pre><img src=x onerror=alert('stdout')>", `<iframe src="javascript:alert('stderr')">`,
			"</script><script>alert('content')</script>"} {
			if !strings.Contains(text, w) {
				t.Errorf("the hostile attempt's page does not show %q as text", w)
			}
		}
	})

	t.Run("offline", func(t *testing.T) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, u := range b.requests {
			if !strings.HasPrefix(u, "http://127.0.0.1:") && !strings.HasPrefix(u, "data:image/svg+xml") {
				t.Errorf("the page asked for %s, want nothing but the viewer's own", u)
			}
		}
		if len(b.requests) < 10 {
			t.Errorf("got %d requests recorded, want the page's", len(b.requests))
		}
	})

}

// The layout's comparison: the main regions' boxes (the page's
// [data-region] elements) within a tolerance, and the screenshot's
// occupancy grid (each cell background, light or ink) with few cells
// changed: a broken layout fails, a font's hinting does not.
const (
	cellW, cellH = 40, 30
	boxSlack     = 24   // pixels, or boxShare of the size, whichever is more
	boxShare     = 0.08 //
	gridSlack    = 0.06 // of the cells may differ
)

// layout is what a golden holds.
type layout struct {
	regions map[string][4]int // name#n -> x y w h
	order   []string
	grid    []string
	shot    []byte // the screenshot, when taken
}

func (l layout) String() string {
	var b strings.Builder
	for _, k := range l.order {
		r := l.regions[k]
		fmt.Fprintf(&b, "region %s %d %d %d %d\n", k, r[0], r[1], r[2], r[3])
	}
	b.WriteString("grid\n")
	for _, row := range l.grid {
		b.WriteString(row + "\n")
	}
	return b.String()
}

func parseLayout(s string) (layout, error) {
	l := layout{regions: map[string][4]int{}}
	inGrid := false
	for _, line := range strings.Split(s, "\n") {
		switch {
		case inGrid && line != "":
			l.grid = append(l.grid, line)
		case line == "" || strings.HasPrefix(line, "#"):
		case line == "grid":
			inGrid = true
		default:
			var name string
			var r [4]int
			if _, err := fmt.Sscanf(line, "region %s %d %d %d %d", &name, &r[0], &r[1], &r[2], &r[3]); err != nil {
				return l, fmt.Errorf("bad line %q: %v", line, err)
			}
			l.regions[name] = r
			l.order = append(l.order, name)
		}
	}
	return l, nil
}

// pageLayout reads the page's regions and takes its screenshot's grid.
func pageLayout(t *testing.T, b *browser) layout {
	t.Helper()
	boxes := eval[[][]any](b, `(() => { const n = {}; return [...document.querySelectorAll('[data-region]')].map((e) => {
		const r = e.getBoundingClientRect(); const k = e.dataset.region; n[k] = (n[k] || 0) + 1;
		return [k + '#' + n[k], Math.round(r.x + scrollX), Math.round(r.y + scrollY), Math.round(r.width), Math.round(r.height)]; }); })()`)
	l := layout{regions: map[string][4]int{}}
	for _, bx := range boxes {
		k := bx[0].(string)
		l.regions[k] = [4]int{int(bx[1].(float64)), int(bx[2].(float64)), int(bx[3].(float64)), int(bx[4].(float64))}
		l.order = append(l.order, k)
	}
	l.shot = b.screenshot(viewH)
	img, err := png.Decode(bytes.NewReader(l.shot))
	if err != nil {
		t.Fatal(err)
	}
	l.grid = occupancy(img)
	return l
}

// occupancy is img as a grid of cells: ' ' all background (the page's
// or a card's), '-' something light (borders, shading), '#' ink (text,
// marks): at least 1.5% of the cell's pixels dark.
func occupancy(img image.Image) []string {
	bd := img.Bounds()
	var rows []string
	for y0 := bd.Min.Y; y0+cellH <= bd.Max.Y; y0 += cellH {
		var row strings.Builder
		for x0 := bd.Min.X; x0+cellW <= bd.Max.X; x0 += cellW {
			dark, light := 0, 0
			for y := y0; y < y0+cellH; y++ {
				for x := x0; x < x0+cellW; x++ {
					r, g, bl, _ := img.At(x, y).RGBA()
					lum := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(bl)) / 257
					switch {
					case lum < 160:
						dark++
					case lum < 243:
						light++
					}
				}
			}
			switch n := cellW * cellH; {
			case dark*1000 >= n*15:
				row.WriteByte('#')
			case (dark+light)*100 >= n*2:
				row.WriteByte('-')
			default:
				row.WriteByte('.')
			}
		}
		rows = append(rows, row.String())
	}
	return rows
}

// checkLayout compares the page's layout with testdata/view/NAME.layout,
// or writes it there with -update-view.
func checkLayout(t *testing.T, b *browser, name string) {
	t.Helper()
	got := pageLayout(t, b)
	file := filepath.Join("testdata", "view", name+".layout")
	if *updateView {
		head := fmt.Sprintf("# benchctl view, page %s at %dx%d: its regions (x y w h, CSS pixels) and its screenshot's\n"+
			"# occupancy in cells of %dx%d (. background, - light, # ink). Written by\n"+
			"# go test ./cmd/benchctl -run TestViewInChromium/layout -update-view\n", name, viewW, viewH, cellW, cellH)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(head+got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b2, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no golden layout (go test -run TestViewInChromium/layout -update-view writes it): %v", err)
	}
	want, err := parseLayout(string(b2))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, k := range want.order {
		w, g := want.regions[k], got.regions[k]
		if _, ok := got.regions[k]; !ok {
			t.Errorf("region %s: missing, want it at %v", k, w)
			continue
		}
		for i, what := range []string{"x", "y", "width", "height"} {
			slack := max(float64(boxSlack), boxShare*float64(w[i]))
			if i < 2 {
				slack = max(float64(boxSlack), boxShare*float64(w[i+2]))
			}
			if math.Abs(float64(g[i]-w[i])) > slack {
				t.Errorf("region %s: got %s %d, want %d (within %.0f): box %v, want %v", k, what, g[i], w[i], slack, g, w)
			}
		}
	}
	for _, k := range got.order {
		if _, ok := want.regions[k]; !ok {
			t.Errorf("region %s: got one at %v, want none", k, got.regions[k])
		}
	}
	cells, diff := 0, 0
	var marked []string
	for y := range min(len(got.grid), len(want.grid)) {
		row := []byte(got.grid[y])
		for x := range min(len(got.grid[y]), len(want.grid[y])) {
			cells++
			if got.grid[y][x] != want.grid[y][x] {
				diff++
				row[x] = 'X'
			}
		}
		marked = append(marked, string(row))
	}
	if len(got.grid) != len(want.grid) || float64(diff) > gridSlack*float64(cells) {
		t.Errorf("the screenshot's occupancy differs in %d of %d cells (at most %.0f%%), X where it differs:\n%s", diff, cells, gridSlack*100, strings.Join(marked, "\n"))
	}
	if t.Failed() {
		shot := filepath.Join(os.TempDir(), "benchctl-view-"+name+".png")
		if err := os.WriteFile(shot, got.shot, 0o644); err == nil {
			t.Logf("the page as it was drawn: %s", shot)
		}
	}
}
