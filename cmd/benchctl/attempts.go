package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"benchd.dev/client/apitype"
)

func (c *CLI) cmdList(ctx context.Context, args []string) int {
	f := c.newFlags("list")
	var ff filterFlags
	ff.register(f, filterSet{agentModel: true, run: true, task: true, state: true, series: true})
	limit := f.Int("limit", 20, "at most `N` attempts")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	if *limit < 1 {
		return c.usageError("list", "--limit %d: want at least 1", *limit)
	}
	filter, err := ff.filter(time.Now(), false)
	if err != nil {
		return c.usageError("list", "%v", err)
	}
	filter.Limit = *limit
	page, err := c.api().AttemptPage(ctx, filter)
	if err != nil {
		return c.fail("list", exitError, err)
	}
	as := page.Attempts
	if f.json {
		c.printJSON(apitype.AttemptList{Attempts: normalizeAll(as), Total: page.Total})
		return exitOK
	}
	tw := newTable(c.Stdout)
	fmt.Fprintln(tw, "ATTEMPT\tRUN\tTASK\tAGENT\tPURPOSE\tSTATE\tHOST\tVERDICT\tWALL\tCREATED")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Run, a.Task, oneLine(a.Agent.Spec, 30),
			purposeText(a), a.State, orDash(a.Host), verdict(a), wallTime(a), formatTime(&a.Created))
	}
	tw.Flush()
	if more := page.Total - len(as); more > 0 {
		fmt.Fprintf(c.Stdout, "%d more of %d (use --limit)\n", more, page.Total)
	}
	return exitOK
}

// purposeText is a's purpose, run for one recorded before purposes.
func purposeText(a apitype.Attempt) string {
	if a.Purpose == "" {
		return apitype.PurposeRun
	}
	return a.Purpose
}

// attemptArg parses flags and exactly one ATTEMPT.
func (c *CLI) attemptArg(f *flags, args []string) (string, int, bool) {
	pos, code, ok := c.parse(f, args)
	if !ok {
		return "", code, false
	}
	if code, ok := c.wantArgs(f, pos, 1, 1, "ATTEMPT"); !ok {
		return "", code, false
	}
	return pos[0], 0, true
}

func (c *CLI) cmdShow(ctx context.Context, args []string) int {
	f := c.newFlags("show")
	id, code, ok := c.attemptArg(f, args)
	if !ok {
		return code
	}
	a, err := c.api().Attempt(ctx, id)
	if err != nil {
		return c.fail("show", exitError, err)
	}
	if f.json {
		c.printJSON(normalize(a))
		return verdictExit(a)
	}
	showAttempt(c.Stdout, a)
	return verdictExit(a)
}

// showAttempt prints everything known about an attempt.
func showAttempt(w io.Writer, a apitype.Attempt) {
	tw := newTable(w)
	p := func(k, format string, v ...any) {
		for i := range v {
			if s, ok := v[i].(string); ok {
				v[i] = visible(s, false)
			}
		}
		fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, v...)...)
	}
	p("attempt", "%s (run %s)", a.ID, a.Run)
	p("task", "%s (bundle %s)", a.Task, shortSHA(a.TaskSHA256))
	state := a.State
	if a.State == apitype.StateRunning && a.Phase != "" {
		state += ", " + a.Phase
	}
	p("state", "%s", state)
	if a.Host != "" {
		p("host", "%s (host key %s)", a.Host, shortSHA(a.HostKeyID))
	}
	switch {
	case a.Unresolved():
		p("verdict", "%s (left to review: neither passed nor failed; benchctl review %s --pass|--fail --why TEXT decides it)", verdict(a), a.ID)
	case a.HasVerdict():
		p("verdict", "%s (reward %d)", verdict(a), a.Reward)
	default:
		p("verdict", "%s", verdict(a))
	}
	if rv := a.Review; rv != nil {
		p("review", "%s by uid %d at %s: %s", rv.Outcome, rv.UID, formatTime(&rv.Time), oneLine(rv.Why, 200))
		p("  graded", "%s", verdictText(rv.Graded))
	}
	if a.State == apitype.StateInfraError {
		p("infra error", "%s", a.InfraError)
	}
	if a.RetryOf != "" {
		p("retry of", "%s", a.RetryOf)
	}
	if a.RetriedBy != "" {
		p("retried by", "%s (this attempt is not scored)", a.RetriedBy)
	}
	if len(a.Reasons) == 0 {
		p("reasons", "none")
	}
	for i, r := range a.Reasons {
		k := ""
		if i == 0 {
			k = "reasons"
		}
		p(k, "%s: %s", r.Code, r.Message)
	}
	p("agent", "%s", a.Agent.Spec)
	if a.Agent.Exe != "" {
		p("  executable", "%s", a.Agent.Exe)
	}
	p("  sha256", "%s", orDash(a.Agent.SHA256))
	if len(a.Agent.Args) > 0 {
		p("  args", "%s", strings.Join(quoteArgs(a.Agent.Args), " "))
	}
	p("  version", "%s", orDash(a.Agent.Version))
	if a.Agent.Model != "" {
		p("  model", "%s", a.Agent.Model)
	}
	if len(a.Agent.Env) > 0 {
		p("  env", "%s (values not kept)", strings.Join(a.Agent.Env, ", "))
	}
	p("exit status", "%s", exitText(a))
	p("timed out", "%s", yesNo(a.TimedOut))
	p("wall time", "%s", wallTime(a))
	p("peak memory", "%s (largest process %s)", formatBytes(a.PeakMemoryBytes), formatBytes(a.MaxRSSBytes))
	if a.Limits != nil {
		p("limits", "%s", limitsText(a.Limits))
	}
	p("oom killed", "%s", yesNo(a.OOM))
	p("benchd cpu", "view %s, grading %s", cpuText(a.ViewCPUMS), cpuText(a.GradeCPUMS))
	p("edits", "%d (denied %d)", a.Edits, a.Denied)
	if len(a.Changeset) == 0 {
		p("changeset", "no changes")
	}
	for i, ch := range a.Changeset {
		k := ""
		if i == 0 {
			k = "changeset"
		}
		if ch.Kind == "renamed" {
			p(k, "%s %s -> %s", ch.Kind, ch.From, ch.Path)
		} else {
			p(k, "%s %s", ch.Kind, ch.Path)
		}
	}
	n := a.Network
	p("network", "%s: %d connection attempts, %d DNS queries, %s in, %s out", orDash(n.Mode),
		len(n.Attempts), len(n.DNS), formatBytes(n.BytesIn), formatBytes(n.BytesOut))
	for _, na := range n.Attempts {
		refused := ""
		if na.Refused {
			refused = " (refused: the host's neighbourhood)"
		}
		p("", "%s %s at %s%s", na.Proto, na.Dst, na.Time.Local().Format("15:04:05.000"), refused)
	}
	for _, q := range n.DNS {
		p("", "dns %s %s at %s", q.Type, q.Name, q.Time.Local().Format("15:04:05.000"))
	}
	for _, g := range n.Gateways {
		where := g.Endpoint
		if g.Kind == apitype.GatewayHTTP {
			where = "HTTP to " + g.URL
		}
		p("", "gateway %s (%s): %d connections, %s in, %s out", g.Name, where, g.Conns,
			formatBytes(g.BytesIn), formatBytes(g.BytesOut))
		if g.Refused > 0 && g.Kind == apitype.GatewayHTTP {
			p("", "  %d connection(s) or request(s) refused by the gateway (benchctl model %s shows the requests)", g.Refused, a.ID)
		} else if g.Refused > 0 {
			p("", "  %d connection(s) refused: more than the gateway takes at once", g.Refused)
		}
		if g.DialErrors > 0 {
			p("", "  %d failed dial(s) to the endpoint, the last: %s", g.DialErrors, g.LastDialError)
		}
	}
	if a.Model != nil || hasHTTPGateway(n) {
		p("model", "%s (benchctl model %s lists them)", usageLine(a.Model), a.ID)
	}
	p("journal head", "%s", orDash(a.JournalHead))
	if a.GradeSeed != 0 {
		p("checks seed", "%d (benchd grade --seed repeats the checks)", a.GradeSeed)
	}
	p("created", "%s", formatTime(&a.Created))
	p("started", "%s", formatTime(a.Started))
	p("finished", "%s", formatTime(a.Finished))
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quoteArgs quotes arguments that a shell would split or expand.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return out
}

// cancelErrorJSON is what cancel --json prints when an attempt could not
// be canceled: the error (each attempt's, joined) and those canceled.
type cancelErrorJSON struct {
	errorJSON
	Attempts []apitype.Attempt `json:"attempts"`
}

func (c *CLI) cmdCancel(ctx context.Context, args []string) int {
	f := c.newFlags("cancel")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 1, -1, "ATTEMPT"); !ok {
		return code
	}
	var done []apitype.Attempt
	var failed []string
	code = exitOK
	for _, id := range pos {
		var as []apitype.Attempt
		var err error
		if strings.HasPrefix(id, "r-") {
			// A run: every queued and running attempt of it.
			var rc apitype.RunCancel
			rc, err = c.api().CancelRun(ctx, id)
			as = rc.Canceled
		} else {
			var a apitype.Attempt
			a, err = c.api().Cancel(ctx, id)
			as = []apitype.Attempt{a}
		}
		if err != nil {
			msg := fmt.Sprintf("%s: %v", id, err)
			if !f.json {
				c.fail("cancel", exitError, errors.New(msg))
			}
			failed = append(failed, oneLineMessage(msg))
			code = exitError
			continue
		}
		done = append(done, as...)
	}
	if f.json {
		// One object: the error, with the attempts that were canceled.
		if len(failed) > 0 {
			c.printJSON(cancelErrorJSON{errorJSON{Error: strings.Join(failed, "; "), Command: "cancel", Code: code}, normalizeAll(done)})
			return code
		}
		c.printJSON(apitype.AttemptList{Attempts: normalizeAll(done)})
		return code
	}
	for _, a := range done {
		fmt.Fprintf(c.Stdout, "%s: %s\n", a.ID, a.State)
	}
	return code
}

func (c *CLI) cmdTranscript(ctx context.Context, args []string) int {
	f := c.newFlags("transcript")
	onlyOut := f.Bool("stdout", false, "print only the agent's stdout")
	onlyErr := f.Bool("stderr", false, "print only the agent's stderr")
	raw := f.Bool("raw", false, "print the output's bytes, control characters and all (else they are made visible)")
	id, code, ok := c.attemptArg(f, args)
	if !ok {
		return code
	}
	if *onlyOut && *onlyErr {
		return c.usageError("transcript", "--stdout and --stderr exclude each other")
	}
	tr, err := c.api().Transcript(ctx, id)
	if err != nil {
		return c.fail("transcript", exitError, err)
	}
	switch {
	case f.json:
		c.printJSON(tr)
	case !*raw:
		tr.Stdout, tr.Stderr = visible(tr.Stdout, true), visible(tr.Stderr, true)
	}
	switch {
	case f.json:
	case *onlyOut:
		io.WriteString(c.Stdout, tr.Stdout)
	case *onlyErr:
		io.WriteString(c.Stdout, tr.Stderr)
	default:
		for _, part := range []struct {
			name, text string
			cut        bool
		}{{"stdout", tr.Stdout, tr.StdoutTruncated}, {"stderr", tr.Stderr, tr.StderrTruncated}} {
			fmt.Fprintf(c.Stdout, "==> %s (%s%s) <==\n", part.name, formatBytes(int64(len(part.text))), map[bool]string{true: ", truncated"}[part.cut])
			io.WriteString(c.Stdout, part.text)
			if part.text != "" && !strings.HasSuffix(part.text, "\n") {
				fmt.Fprintln(c.Stdout)
			}
		}
	}
	return exitOK
}

type exportResult struct {
	Attempt string `json:"attempt"`
	File    string `json:"file"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
}

func (c *CLI) cmdExport(ctx context.Context, args []string) int {
	f := c.newFlags("export")
	out := f.String("o", "", "write the archive to `FILE` (- for stdout)")
	id, code, ok := c.attemptArg(f, args)
	if !ok {
		return code
	}
	if *out == "" {
		return c.usageError("export", "missing -o FILE")
	}
	if *out == "-" && f.json {
		return c.usageError("export", "-o - and --json both want stdout")
	}
	if err := checkOutputFile(*out); err != nil {
		return c.usageError("export", "-o %s: %v", *out, err)
	}
	rc, err := c.api().Export(ctx, id)
	if err != nil {
		return c.fail("export", exitError, err)
	}
	defer rc.Close()
	h := sha256.New()
	var n int64
	if *out == "-" {
		n, err = io.Copy(io.MultiWriter(c.Stdout, h), rc)
	} else {
		n, err = writeFileAtomic(*out, io.TeeReader(rc, h))
	}
	if err != nil {
		return c.fail("export", exitError, fmt.Errorf("unable to export %s: %w", id, err))
	}
	res := exportResult{Attempt: id, File: *out, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	switch {
	case f.json:
		c.printJSON(res)
	case *out != "-":
		fmt.Fprintf(c.Stdout, "wrote %s: %s, sha256 %s\n", res.File, formatBytes(n), res.SHA256)
	}
	return exitOK
}

// writeFileAtomic writes r to a temporary file beside path and renames it
// into place, so that path never holds half an archive.
func writeFileAtomic(path string, r io.Reader) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = checkTar(tmp.Name())
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, err
	}
	return n, nil
}

// checkTar reads the tar at path to its end: an archive cut off inside an
// entry is an error.
func checkTar(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		if _, err := tr.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("the archive from benchd is not a whole tar: %w", err)
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return fmt.Errorf("the archive from benchd is cut short: %w", err)
		}
	}
}

func (c *CLI) cmdRegrade(ctx context.Context, args []string) int {
	f := c.newFlags("regrade")
	id, code, ok := c.attemptArg(f, args)
	if !ok {
		return code
	}
	r, err := c.api().Regrade(ctx, id)
	if err != nil {
		return c.fail("regrade", exitError, err)
	}
	code = exitOK
	if !r.Same {
		code = exitNo
	}
	if f.json {
		if r.Before.Reasons == nil {
			r.Before.Reasons = []apitype.Reason{}
		}
		if r.After.Reasons == nil {
			r.After.Reasons = []apitype.Reason{}
		}
		c.printJSON(r)
		return code
	}
	if r.Same {
		fmt.Fprintf(c.Stdout, "%s: same verdict: %s\n", r.Attempt, verdictText(r.After))
	} else {
		fmt.Fprintf(c.Stdout, "%s: verdict CHANGED\n  before: %s\n  after:  %s\n", r.Attempt, verdictText(r.Before), verdictText(r.After))
	}
	for _, rs := range r.After.Reasons {
		fmt.Fprintf(c.Stdout, "  %s: %s\n", rs.Code, oneLine(rs.Message, 200))
	}
	return code
}

func verdictText(v apitype.Verdict) string {
	s := "FAIL"
	switch {
	case v.Outcome == apitype.OutcomeReview:
		s = "REVIEW"
	case v.Pass:
		s = "pass"
	}
	s += fmt.Sprintf(" (reward %d", v.Reward)
	for i, r := range v.Reasons {
		if i == 0 {
			s += "; "
		} else {
			s += ", "
		}
		s += r.Code
	}
	return s + ")"
}

func (c *CLI) cmdStatus(ctx context.Context, args []string) int {
	f := c.newFlags("status")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	st, err := c.api().Status(ctx)
	if err != nil {
		return c.fail("status", exitError, err)
	}
	if f.json {
		c.printJSON(st)
		return exitOK
	}
	tw := newTable(c.Stdout)
	fmt.Fprintf(tw, "socket\t%s\nversion\t%s\nqueued\t%d\nrunning\t%d (of %d at once)\nstate\t%s\ntasks\t%s\n",
		c.api().SocketPath(), st.Version, st.Queued, st.Running, st.Concurrency, st.StateDir, st.Tasks)
	tw.Flush()
	return exitOK
}

func hasHTTPGateway(n apitype.Network) bool {
	for _, g := range n.Gateways {
		if g.Kind == apitype.GatewayHTTP {
			return true
		}
	}
	return false
}

// cpuText shows a CPU time in milliseconds as seconds.
func cpuText(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) + "s"
}
