package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"benchd.dev/client/apitype"
)

// usageLine is a model usage in one line: "3 calls, 1,200 tokens in
// (400 cached) / 30 out, 2 tool calls, $0.0042, 1 error".
func usageLine(u *apitype.ModelUsage) string {
	if u == nil {
		return "no calls"
	}
	var b strings.Builder
	b.WriteString(plural(int(u.Calls), "call"))
	fmt.Fprintf(&b, ", %s tokens in", thousands(u.InputTokens))
	if u.CachedInputTokens > 0 || u.CacheWriteTokens > 0 {
		fmt.Fprintf(&b, " (%s cached", thousands(u.CachedInputTokens))
		if u.CacheWriteTokens > 0 {
			fmt.Fprintf(&b, ", %s written to the cache", thousands(u.CacheWriteTokens))
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " / %s out", thousands(u.OutputTokens))
	if u.ReasoningTokens > 0 {
		fmt.Fprintf(&b, " (%s reasoning)", thousands(u.ReasoningTokens))
	}
	fmt.Fprintf(&b, ", %s", plural(int(u.ToolCalls), "tool call"))
	if c := costText(u); c != "" {
		b.WriteString(", " + c)
	}
	if u.Errors > 0 {
		fmt.Fprintf(&b, ", %s", plural(int(u.Errors), "error"))
	}
	if u.Unreported > 0 {
		fmt.Fprintf(&b, ", %d without usage", u.Unreported)
	}
	return b.String()
}

// costText is the cost and what it leaves out; "" without a price table.
func costText(u *apitype.ModelUsage) string {
	if u == nil || u.CostUSD == nil {
		return ""
	}
	s := formatUSD(*u.CostUSD)
	if u.Unpriced > 0 {
		s += fmt.Sprintf(" (%d call(s) of unpriced models not in it)", u.Unpriced)
	}
	return s
}

// formatUSD renders dollars with 4 decimals under a dollar, 2 above.
func formatUSD(v float64) string {
	if v < 1 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// thousands renders n with commas: 1,234,567.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// sumModel sums the attempts' model usage; nil when none had any.
func sumModel(as []apitype.Attempt) *apitype.ModelUsage {
	var sum *apitype.ModelUsage
	for _, a := range as {
		if a.Model == nil {
			continue
		}
		if sum == nil {
			sum = &apitype.ModelUsage{}
		}
		sum.Add(*a.Model)
	}
	return sum
}

// tokensCell is a table cell: tokens in/out, "-" without usage.
func tokensCell(u *apitype.ModelUsage) string {
	if u == nil {
		return "-"
	}
	return thousands(u.InputTokens) + "/" + thousands(u.OutputTokens)
}

// costCell is a table cell: the cost, "-" without one.
func costCell(u *apitype.ModelUsage) string {
	if u == nil || u.CostUSD == nil {
		return "-"
	}
	s := formatUSD(*u.CostUSD)
	if u.Unpriced > 0 {
		s += "+"
	}
	return s
}

func (c *CLI) cmdModel(ctx context.Context, args []string) int {
	f := c.newFlags("model")
	req := f.Int("request", 0, "print call SEQ's stored request (an HTTP/1.1 message, credentials redacted)")
	resp := f.Int("response", 0, "print call SEQ's stored response")
	raw := f.Bool("raw", false, "with --request or --response, print the message's bytes, control characters and all")
	id, code, ok := c.attemptArg(f, args)
	if !ok {
		return code
	}
	if *req != 0 && *resp != 0 {
		return c.usageError("model", "--request and --response exclude each other")
	}
	if *req < 0 || *resp < 0 {
		return c.usageError("model", "a call's SEQ counts from 1")
	}
	if seq := max(*req, *resp); seq > 0 {
		if f.json {
			return c.usageError("model", "--request and --response print the stored message as it is, not JSON")
		}
		b, err := c.api().ModelMessage(ctx, id, seq, *resp > 0)
		if err != nil {
			return c.fail("model", exitError, err)
		}
		if !*raw {
			b = []byte(visible(string(b), true))
		}
		c.Stdout.Write(b)
		return exitOK
	}
	l, err := c.api().ModelLog(ctx, id)
	if err != nil {
		return c.fail("model", exitError, err)
	}
	if f.json {
		c.printJSON(l)
		return exitOK
	}
	modelTable(c.Stdout, l)
	return exitOK
}

// modelTable prints an attempt's calls, one a line, and their sum.
func modelTable(w io.Writer, l apitype.ModelLog) {
	if len(l.Calls) == 0 {
		fmt.Fprintf(w, "attempt %s made no model call through an HTTP gateway\n", l.Attempt)
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "SEQ\tTIME\tAPI\tMODEL\tSTATUS\tDURATION\tTOKENS IN/OUT\tTOOL CALLS\tTEXT")
	for _, c := range l.Calls {
		status := strconv.Itoa(c.Status)
		if c.Error != "" {
			status = "-"
			if c.Status != 0 {
				status = strconv.Itoa(c.Status) + "!"
			}
		}
		tokens := "-"
		if c.Usage != nil {
			tokens = thousands(c.Usage.InputTokens) + "/" + thousands(c.Usage.OutputTokens)
		}
		var tools []string
		for _, t := range c.ToolCalls {
			tools = append(tools, t.Name)
		}
		api := c.API
		if c.Stream {
			api += " (sse)"
		}
		text := oneLine(c.Text, 40)
		if c.Error != "" {
			text = "error: " + oneLine(c.Error, 60)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Seq, c.Time.Local().Format("15:04:05.000"), api, orDash(oneLine(c.Model, 30)),
			status, formatMS(c.DurationMS), tokens, orDash(visible(strings.Join(tools, ","), false)), text)
	}
	tw.Flush()
	u := l.Usage
	fmt.Fprintf(w, "\n%s\n", usageLine(&u))
}
