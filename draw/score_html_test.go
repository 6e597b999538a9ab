package draw

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/testenv"
)

func fixtureScorecard() Scorecard {
	as := fixtureAttempts()
	suite := BuiltinSeries()
	suite.Pin(storeHashes(), as)
	list := ListSeries("batch.list", "seed 20261004, cap 2", []string{"rt-01", "lib-0007"})
	list.Pin(map[string]string{"rt-01": "v1-rt-01"}, as)
	return Score([]Series{suite, list}, as, ScoreConfig{})
}

func TestWriteHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, fixtureScorecard(), t0); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	// The only URL allowed is the SVG namespace, which is a name, not a fetch.
	urls := regexp.MustCompile(`(?i)(https?:|//[a-z])[^"' <]*`).FindAllString(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), -1)
	if len(urls) != 0 {
		t.Errorf("got external references %q, want none", urls)
	}
	for _, bad := range []string{"<script", "<link", "@import", "src="} {
		if strings.Contains(page, bad) {
			t.Errorf("got %q in the page, want a self-contained page", bad)
		}
	}
}

// chromium runs Debian's chromium headless with args and the page's URL.
func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, "/usr/bin/chromium", append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v: %s", args, err, stderr.String())
	}
	return out
}

func TestHTMLInChromium(t *testing.T) {
	testenv.Require(t, testenv.Chromium)
	dir := t.TempDir()
	page := filepath.Join(dir, "scorecard.html")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, fixtureScorecard(), t0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, "--dump-dom", "file://"+page))
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(dom, "")

	t.Run("dom", func(t *testing.T) {
		tests := []struct {
			name  string
			in    string // dom or text
			want  string
			count int // at least
		}{
			{"two series columns", dom, `class="series"`, 2},
			{"the suite's series", text, "Series built-in suite", 1},
			{"the list's series and its rule", text, "draw rule: seed 20261004, cap 2", 1},
			{"a plot per series", dom, `<svg class="plot"`, 2},
			{"a dot per agent and series", dom, `<circle class="rate"`, 4},
			{"intervals drawn", dom, `<g class="interval"`, 4},
			{"bootstrap intervals drawn", dom, `<rect class="bootstrap"`, 1},
			// agent run passes everything: its bootstrap is a point, drawn as a tick.
			{"collapsed bootstraps drawn as ticks", dom, `<line class="bootstrap collapsed"`, 2},
			{"labelled axis", text, "completion rate, mean of per-task rates (0–100%)", 2},
			{"separation sentence", text, "agent run completes more than other", 1},
			{"every interval in the table", text, "bootstrap 95% (tasks, attempts)", 2},
			{"outcomes", text, "fail, fail", 1},
			{"per-task rates", text, "0/2 (0%)", 1},
			{"infra error shown", text, "pass, pass, infra error", 1},
			{"attempt anchor", dom, `id="attempt-a-02"`, 1},
			{"link to the anchor", dom, `href="#attempt-a-02"`, 1},
			{"verdict reasons", text, "tests_failed 2 hidden tests failed", 1},
			{"verdict command", text, "benchctl show a-02", 1},
			{"journal command", text, "benchctl log a-02", 1},
			{"dates", text, "2026-11-02 19:00 to 2026-11-04 01:00 UTC", 1},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := strings.Count(tt.in, tt.want); got < tt.count {
					t.Errorf("got %d of %q in the rendered page, want at least %d", got, tt.want, tt.count)
				}
			})
		}
		// The per-task section shows each task's rate beside its outcomes.
		if !regexp.MustCompile(`rt-01other0/2 \(0%\)fail, fail`).MatchString(text[strings.Index(text, "Per task"):]) {
			t.Errorf("got no rate beside other's rt-01 outcomes in the per-task section")
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		shot := filepath.Join(dir, "scorecard.png")
		chromium(t, "--screenshot="+shot, "--window-size=1200,900", "--hide-scrollbars", "file://"+page)
		b, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("got a screenshot starting %q, want a PNG", b[:min(8, len(b))])
		}
		// A blank 1200x900 page compresses to a few KiB; the scorecard's
		// text and plots take far more.
		if len(b) < 30_000 {
			t.Errorf("got a %d-byte screenshot, want a page with content (over 30000)", len(b))
		}
		if out := os.Getenv("BENCHD_SCORECARD_SHOT"); out != "" {
			os.WriteFile(out, b, 0o644)
		}
	})
}

// TestWritePlotSVG: the plot alone is a well-formed SVG document whose
// text is the agents' labels as they are, whatever they hold: markup
// stays text, and characters XML refuses are replaced, not written.
func TestWritePlotSVG(t *testing.T) {
	hostile := apitype.AgentIdentity{Spec: "evil</text><script>alert(1)</script>\x01\xff"}
	as := fixtureAttempts()
	for i, task := range SuiteTasks[:2] {
		as = append(as, attempt(fmt.Sprintf("h-%d", i), task, hostile, "pass", "v1-"+task, 50+i))
	}
	suite := BuiltinSeries()
	suite.Pin(storeHashes(), as)
	sc := Score([]Series{suite}, as, ScoreConfig{})
	var buf bytes.Buffer
	if err := WritePlotSVG(&buf, sc.Series[0]); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	var elems, texts []string
	var inText bool
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the plot is not well-formed XML: %v\n%s", err, buf.String())
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elems = append(elems, tok.Name.Local)
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	if elems[0] != "svg" {
		t.Errorf("got root element %q, want svg", elems[0])
	}
	if got := strings.Count(strings.Join(elems, " "), "circle"); got != len(sc.Series[0].Agents) {
		t.Errorf("got %d rate dots, want one per agent (%d)", got, len(sc.Series[0].Agents))
	}
	if slices.Contains(elems, "script") {
		t.Errorf("got a script element in the plot: %v", elems)
	}
	want := "evil</text><script>alert(1)</script>\uFFFD\uFFFD"
	found := false
	for _, tx := range texts {
		found = found || strings.HasPrefix(tx, want)
	}
	if !found {
		t.Errorf("got texts %q, want one starting with the hostile label %q as text", texts, want)
	}
}
