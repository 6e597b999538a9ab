package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"benchd.dev/client/apitype"
)

// TestReview: RT-06's attempt whose report only hedges is left to
// review; list shows it as REVIEW (pass null), the scorecard counts it
// unresolved, not failed; benchctl review, run by an unprivileged member
// of the admitted group, decides it as that uid; the attempt is signed
// again with the review, its export verifies with benchd's key and
// prints the review, and an edited review in the export fails verify,
// naming it. A second review, and a review of an attempt not in review,
// are refused as conflicts.
func TestReview(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	hk, err := d.client.HostKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final, before := exportOf(t, d, "rt-06", apitype.AgentAttemptPrefix+"review-hedged")
	id := final.ID
	if !final.Unresolved() || strings.Join(codes(final), ",") != "needs_review" {
		t.Fatalf("review-hedged: got outcome %q codes %v, want review with needs_review", final.Outcome, codes(final))
	}

	// Unresolved: REVIEW in list, pass null and outcome review in JSON.
	out, code := runBenchctl(t, nil, "list", "--task", "rt-06", "--limit", "200")
	line := lineWith(out, id)
	if code != 0 || !strings.Contains(line, "REVIEW") {
		t.Errorf("list: got exit %d, line %q; want the attempt as REVIEW\n%s", code, line, out)
	}
	out, code = runBenchctl(t, nil, "show", "--json", id)
	var shown map[string]json.RawMessage
	if code != 1 || json.Unmarshal([]byte(out), &shown) != nil {
		t.Fatalf("show --json: exit %d (want 1: left to review is not a pass)\n%s", code, out)
	}
	if string(shown["pass"]) != "null" || string(shown["outcome"]) != `"review"` {
		t.Errorf("show --json: got pass %s outcome %s, want null and \"review\"", shown["pass"], shown["outcome"])
	}
	if o := scorecardOutcome(t, id); o != "unresolved" {
		t.Errorf("scorecard: got outcome %q for %s, want unresolved", o, id)
	}
	// Exported before review, it verifies as the grader left it.
	dir := t.TempDir()
	beforeFile := filepath.Join(dir, "before.tar")
	os.WriteFile(beforeFile, before, 0o644)
	if out, code := runBenchctl(t, nil, "verify", "--key", hk.PublicKey, beforeFile); code != 0 || !strings.Contains(out, "none: the signed verdict is the grader's") {
		t.Errorf("verify before review: got exit %d\n%s", code, out)
	}

	// A review without a reason never reaches benchd.
	if out, code := runBenchctl(t, nil, "review", id, "--pass"); code != 2 || !strings.Contains(out, "missing --why") {
		t.Errorf("review without --why: got exit %d\n%s", code, out)
	}
	reviewer := &syscall.Credential{Uid: 65534, Gid: callerGID, Groups: []uint32{}}
	const why = "both readings and the case are stated; the hedge is a matter of tone"
	out, code = runBenchctl(t, reviewer, "review", "--json", id, "--pass", "--why", why)
	var reviewed apitype.Attempt
	if code != 0 || json.Unmarshal([]byte(out), &reviewed) != nil {
		t.Fatalf("review: got exit %d\n%s", code, out)
	}
	rv := reviewed.Review
	if rv == nil || rv.UID != 65534 || rv.Why != why || rv.Outcome != apitype.OutcomePass || rv.Graded.Outcome != apitype.OutcomeReview {
		t.Fatalf("review: got %+v, want a pass by uid 65534 over the grader's review verdict", rv)
	}
	if !reviewed.Pass || reviewed.Reward != 1 || reviewed.Outcome != apitype.OutcomePass || len(reviewed.Reasons) != 0 {
		t.Errorf("review: got pass %v reward %d outcome %q reasons %v, want a pass", reviewed.Pass, reviewed.Reward, reviewed.Outcome, codes(reviewed))
	}
	out, _ = runBenchctl(t, nil, "show", id)
	if !strings.Contains(out, "review        pass by uid 65534") || !strings.Contains(out, "graded      REVIEW (reward 0; needs_review)") {
		t.Errorf("show after review: got\n%s\nwant the review and the grader's verdict", out)
	}
	if line := lineWith(mustRun(t, "list", "--task", "rt-06", "--limit", "200"), id); !strings.Contains(line, "pass") {
		t.Errorf("list after review: got %q, want pass", line)
	}
	if o := scorecardOutcome(t, id); o != "pass" {
		t.Errorf("scorecard after review: got outcome %q, want pass", o)
	}

	// Refused: a second review, a review of an attempt not in review.
	if out, code := runBenchctl(t, nil, "review", id, "--fail", "--why", "second thoughts"); code != 2 || !strings.Contains(out, "reviewed already (pass by uid 65534") {
		t.Errorf("second review: got exit %d\n%s\nwant a conflict naming the first review", code, out)
	}
	other, _ := exportOf(t, d, "rt-01", apitype.AgentNull)
	if out, code := runBenchctl(t, nil, "review", other.ID, "--pass", "--why", "x"); code != 2 || !strings.Contains(out, "is not in review (it is graded fail)") {
		t.Errorf("review of a failed attempt: got exit %d\n%s\nwant a conflict saying it is not in review", code, out)
	}

	// Exported after review: signed again with the review, verified.
	body, err := d.client.Export(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	archive := readAllClose(t, body)
	files := untar(t, archive)
	if _, ok := files["review.json"]; !ok {
		t.Fatalf("the export of a reviewed attempt has no review.json: %v", names(files))
	}
	good := filepath.Join(dir, "reviewed.tar")
	os.WriteFile(good, archive, 0o644)
	out, code = runBenchctl(t, nil, "verify", "--key", hk.PublicKey, good)
	t.Logf("verify of the reviewed export:\n%s", out)
	if code != 0 || !strings.Contains(out, "reviewed: pass by uid 65534") || !strings.Contains(out, why) {
		t.Errorf("verify after review: got exit %d\n%s\nwant verified, with the review", code, out)
	}

	edit := func(name string, change func(rv map[string]any)) map[string][]byte {
		f := map[string][]byte{}
		for k, v := range files {
			f[k] = bytes.Clone(v)
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(f[name]))
		dec.UseNumber() // the seeds are 64-bit
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if name == "attempt.json" {
			change(m["review"].(map[string]any))
		} else {
			change(m)
		}
		f[name], _ = json.MarshalIndent(m, "", "  ")
		return f
	}
	for _, c := range []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"why edited in review.json", edit("review.json", func(m map[string]any) { m["why"] = "edited afterwards" }), "review: the review's why differs"},
		{"decision edited in review.json", edit("review.json", func(m map[string]any) { m["outcome"] = "fail" }), "review: the review's outcome differs"},
		{"reviewer edited in attempt.json", edit("attempt.json", func(m map[string]any) { m["uid"] = 0 }), "statement: signed field review differs"},
		{"review removed", func() map[string][]byte {
			f := edit("review.json", func(map[string]any) {})
			delete(f, "review.json")
			return f
		}(), "review: missing review.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".tar")
			retar(t, c.files, p)
			out, code := runBenchctl(t, nil, "verify", "--key", hk.PublicKey, p)
			if code != 1 || !strings.Contains(out, c.want) {
				t.Errorf("got exit %d, want 1 with %q\n%s", code, c.want, out)
			}
		})
	}
}

// scorecardOutcome returns what benchctl scorecard --json says of
// attempt id in the built-in suite's series.
func scorecardOutcome(t *testing.T, id string) string {
	t.Helper()
	out := mustRun(t, "scorecard", "--json")
	var sc struct {
		Series []struct {
			Tasks []struct {
				Agents []struct {
					Attempts []struct {
						ID      string `json:"id"`
						Outcome string `json:"outcome"`
					} `json:"attempts"`
				} `json:"agents"`
			} `json:"tasks"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(out), &sc); err != nil {
		t.Fatalf("scorecard --json: %v\n%s", err, out)
	}
	for _, s := range sc.Series {
		for _, task := range s.Tasks {
			for _, ag := range task.Agents {
				for _, a := range ag.Attempts {
					if a.ID == id {
						return a.Outcome
					}
				}
			}
		}
	}
	t.Fatalf("scorecard --json does not list %s", id)
	return ""
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, code := runBenchctl(t, nil, args...)
	if code != 0 {
		t.Fatalf("benchctl %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

func readAllClose(t *testing.T, body io.ReadCloser) []byte {
	t.Helper()
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
