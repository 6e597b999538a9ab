package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"benchd.dev/client/apitype"
)

// formatBytes renders n in binary units: "512 B", "1.5 KiB", "45.2 MiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

// formatMS renders a duration in milliseconds: "850ms", "12.3s", "4m05s".
func formatMS(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm%02ds", ms/60_000, ms/1000%60)
	}
	return fmt.Sprintf("%dh%02dm", ms/3_600_000, ms/60_000%60)
}

// verdict is an attempt's outcome in one word: REVIEW for a verdict
// left to review and not yet reviewed (neither a pass nor a fail).
func verdict(a apitype.Attempt) string {
	switch a.State {
	case apitype.StateDone:
		if a.Unresolved() {
			return "REVIEW"
		}
		if a.Pass {
			return "pass"
		}
		return "FAIL"
	case apitype.StateInfraError:
		return "INFRA-ERROR"
	case apitype.StateCanceled:
		return "canceled"
	}
	return a.State
}

// verdictExit is the exit status an attempt's verdict answers with, the
// one rule of show and run: exitOK for a pass; exitNo for a fail, a
// verdict left to review (not a pass until someone decides it) and a
// canceled attempt (it did not pass); exitError for an infra error and
// for an attempt still queued or running (no answer, or none yet).
func verdictExit(a apitype.Attempt) int {
	switch a.State {
	case apitype.StateDone:
		if a.Pass && !a.Unresolved() {
			return exitOK
		}
		return exitNo
	case apitype.StateCanceled:
		return exitNo
	}
	return exitError
}

// finished reports whether an attempt will not change any more.
func finished(a apitype.Attempt) bool {
	switch a.State {
	case apitype.StateDone, apitype.StateInfraError, apitype.StateCanceled:
		return true
	}
	return false
}

// reasonCodes joins the codes of an attempt's reasons, or says what the
// infra error was.
func reasonCodes(a apitype.Attempt) string {
	if a.State == apitype.StateInfraError {
		return "infra: " + oneLine(a.InfraError, 60)
	}
	codes := make([]string, len(a.Reasons))
	for i, r := range a.Reasons {
		codes[i] = r.Code
	}
	if len(codes) == 0 {
		return "-"
	}
	return strings.Join(codes, ",")
}

// exitStatus renders how the agent ended.
func exitStatus(a apitype.Attempt) string {
	switch {
	case !finished(a) || a.State == apitype.StateCanceled && a.Started == nil:
		return "-"
	case !a.HasAgentEnd():
		return "none"
	case a.Signal != 0:
		return fmt.Sprintf("signal %d", a.Signal)
	}
	return fmt.Sprint(a.ExitCode)
}

// exitText is exitStatus with the recorded exit code in front when a
// signal ended the agent, "-1 (signal 9)", as show and the viewer print
// it.
func exitText(a apitype.Attempt) string {
	ex := exitStatus(a)
	if a.Signal != 0 && a.HasAgentEnd() {
		ex = fmt.Sprintf("%d (%s)", a.ExitCode, ex)
	}
	return ex
}

// limitsText renders an attempt's limits (l must not be nil) on one
// line: "10m00s wall, 2.0 GiB memory, 2 CPUs", or "no CPU quota" for
// the last part when there is none.
func limitsText(l *apitype.Limits) string {
	cpus := "no CPU quota"
	if l.CPUs > 0 {
		cpus = strconv.FormatFloat(l.CPUs, 'f', -1, 64) + " CPUs"
	}
	return fmt.Sprintf("%s wall, %s memory, %s", formatMS(l.TimeoutMS), formatBytes(l.MemoryBytes), cpus)
}

// wallTime renders the agent's wall time, "none" where it was never
// measured.
func wallTime(a apitype.Attempt) string {
	if !a.HasAgentEnd() {
		return "none"
	}
	return formatMS(a.WallMS)
}

// oneLine collapses s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = visible(strings.Join(strings.Fields(s), " "), false)
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	if s == "" {
		return "-"
	}
	return s
}

func formatTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// verdictTable prints one line per attempt.
func verdictTable(w io.Writer, as []apitype.Attempt) {
	tw := newTable(w)
	// The model's columns only when an attempt called a model through
	// an HTTP gateway.
	model := sumModel(as) != nil
	head := "ATTEMPT\tTASK\tVERDICT\tEXIT\tWALL\tPEAK MEM\tEDITS\tDENIED"
	if model {
		head += "\tCALLS\tTOKENS IN/OUT\tCOST"
	}
	fmt.Fprintln(tw, head+"\tREASONS")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t", a.ID, a.Task, verdict(a), exitStatus(a),
			wallTime(a), formatBytes(a.PeakMemoryBytes), a.Edits, a.Denied)
		if model {
			calls := "-"
			if a.Model != nil {
				calls = strconv.FormatInt(a.Model.Calls, 10)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t", calls, tokensCell(a.Model), costCell(a.Model))
		}
		fmt.Fprintf(tw, "%s\n", reasonCodes(a))
	}
	tw.Flush()
}

// normalize makes the lists of an attempt empty rather than null in JSON.
func normalize(a apitype.Attempt) apitype.Attempt {
	if a.Reasons == nil {
		a.Reasons = []apitype.Reason{}
	}
	if a.Changeset == nil {
		a.Changeset = []apitype.Change{}
	}
	return a
}

func normalizeAll(as []apitype.Attempt) []apitype.Attempt {
	out := make([]apitype.Attempt, len(as))
	for i, a := range as {
		out[i] = normalize(a)
	}
	return out
}

// plural renders "1 change" or "2 changes".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
