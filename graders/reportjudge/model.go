package reportjudge

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// The model judge is optional: an operator who configures one lets a
// model decide the reports the fixed judge leaves to review. It asks
// through an HTTP endpoint that speaks OpenAI Chat Completions; in the
// daemon that endpoint is the model gateway (package modelgw), which
// records every call in the attempt's work directory, so that the calls
// are kept and signed with the attempt as an agent's are. The judge
// never decides a report the fixed judge passes or fails, and it decides
// a review only when its samples agree.

//go:embed rubric.md
var rubric string

// ErrNotQualified: the model judge got a known report wrong, so it may
// not judge attempts (Qualify).
var ErrNotQualified = errors.New("model judge not qualified")

// ModelJudge asks a model, Samples times, for a verdict on a report.
type ModelJudge struct {
	// BaseURL is the Chat Completions endpoint's base: requests go to
	// BaseURL + "/chat/completions".
	BaseURL string
	Model   string
	// Samples is how many answers are asked for (default 3); the
	// verdict is the one at least two thirds of them give.
	Samples int
	Client  *http.Client // nil: http.DefaultClient
}

// ModelVerdict is what the model judge decided: Outcome (Pass, Fail or
// Review), each sample's verdict, and the share of samples that gave
// Outcome.
type ModelVerdict struct {
	Outcome   string
	Samples   []string
	Agreement float64
}

var verdictLineRE = regexp.MustCompile(`(?im)^\s*verdict:\s*(pass|fail|review)\b`)

// Prompt is the rubric filled with the rule set's clashes and the
// report.
func (c *Rules) Prompt(report string) string {
	var cl []string
	for _, x := range c.clashes {
		cl = append(cl, "- "+x.about)
	}
	r := strings.NewReplacer("<<<REPORT", "<<< REPORT", "REPORT>>>", "REPORT >>>").Replace(report)
	return strings.NewReplacer("{{CLASHES}}", strings.Join(cl, "\n"), "{{REPORT}}", r).Replace(rubric)
}

// Judge asks for Samples verdicts on report and combines them. An
// answer without a verdict line counts as review.
func (m ModelJudge) Judge(ctx context.Context, rules *Rules, report string) (ModelVerdict, error) {
	n := m.Samples
	if n <= 0 {
		n = 3
	}
	prompt := rules.Prompt(report)
	var v ModelVerdict
	count := map[string]int{}
	for range n {
		text, err := m.ask(ctx, prompt)
		if err != nil {
			return ModelVerdict{}, err
		}
		s := Review
		if all := verdictLineRE.FindAllStringSubmatch(text, -1); len(all) > 0 {
			s = strings.ToLower(all[len(all)-1][1])
		}
		v.Samples = append(v.Samples, s)
		count[s]++
	}
	v.Outcome = Review
	for _, o := range []string{Pass, Fail, Review} {
		if 3*count[o] >= 2*n {
			v.Outcome = o
			break
		}
	}
	v.Agreement = float64(count[v.Outcome]) / float64(n)
	return v, nil
}

// ask sends one Chat Completions request and returns the answer's text.
func (m ModelJudge) ask(ctx context.Context, prompt string) (string, error) {
	body, err := json.Marshal(map[string]any{
		"model":    m.Model,
		"messages": []any{map[string]any{"role": "user", "content": prompt}},
	})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(m.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("model judge: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	cl := m.Client
	if cl == nil {
		cl = http.DefaultClient
	}
	resp, err := cl.Do(req)
	if err != nil {
		return "", fmt.Errorf("model judge: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("model judge: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("model judge: status %d", resp.StatusCode)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		return "", fmt.Errorf("model judge: an answer that is not Chat Completions")
	}
	return out.Choices[0].Message.Content, nil
}

// Known is a report whose verdict is known (a bundle's attempt).
type Known struct {
	Name, Report, Want string // Want: Pass, Fail or Review
}

// Qualify judges every known report and returns ErrNotQualified, naming
// the first it got wrong, unless each verdict is the known one: a model
// judge is refused until it judges the bundle's known reports right.
func (m ModelJudge) Qualify(ctx context.Context, rules *Rules, known []Known) error {
	for _, k := range known {
		v, err := m.Judge(ctx, rules, k.Report)
		if err != nil {
			return err
		}
		if v.Outcome != k.Want {
			return fmt.Errorf("%w: known report %s: got %s (samples %v), want %s", ErrNotQualified, k.Name, v.Outcome, v.Samples, k.Want)
		}
	}
	return nil
}

// Decide combines the fixed judgement with the model's: the model
// decides only a report the fixed judge left to review, and only when
// its samples agree (Outcome not Review).
func Decide(fixed Judgement, model *ModelVerdict) Judgement {
	if fixed.Outcome != Review || model == nil || model.Outcome == Review {
		return fixed
	}
	j := Judgement{Outcome: model.Outcome, Clash: fixed.Clash}
	if model.Outcome == Fail {
		j.Code = CodeVague
		j.Why = fmt.Sprintf("the model judge found no clash in substance (%d of %d samples agree)", int(model.Agreement*float64(len(model.Samples))+0.5), len(model.Samples))
	}
	return j
}
