package draw

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"benchd.dev/client/apitype"
)

// AgentsGroupedBy says, in the scorecard, what its agent rows group attempts by
// (AgentGroupOf).
const AgentsGroupedBy = "agents grouped by preset or executable SHA-256, model, version and arguments; " +
	"where the model traffic goes (URLs, HOST:PORT and temporary paths in the arguments) is left out; " +
	"benchctl show ID has an attempt's whole command line"

// AgentGroup is an agent as the scorecard counts it: what a user means by "the
// agent". Key is its identity; Label names it in a few words.
type AgentGroup struct {
	Key   string
	Label string
}

// Endpoint and temporary-path patterns, replaced in arguments before they
// count towards a group: a gateway's URL and port, or a temp directory,
// change where an agent's traffic and scratch files go, not what it does.
var (
	urlRE  = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"',;]*`)
	hostRE = regexp.MustCompile(`(?:\b\d{1,3}(?:\.\d{1,3}){3}|\blocalhost|\[[0-9A-Fa-f:]+\]):\d{1,5}\b`)
	tempRE = regexp.MustCompile(`(?:/tmp|/var/tmp|/dev/shm)(?:/[^\s"',;:=]*)?`)
)

// MaskEndpoints returns arg with every URL and HOST:PORT written
// "<endpoint>" and every path under /tmp, /var/tmp or /dev/shm written
// "<temp>".
func MaskEndpoints(arg string) string {
	arg = urlRE.ReplaceAllString(arg, "<endpoint>")
	arg = hostRE.ReplaceAllString(arg, "<endpoint>")
	return tempRE.ReplaceAllString(arg, "<temp>")
}

// labelMax bounds a command's label; its full command line is in show.
const labelMax = 48

// AgentGroupOf returns the group of an attempt's agent. A built-in is its spec
// and model (its overlay hash is the task's own). A preset or a command is
// its executable's SHA-256, its version, its model and its arguments with
// endpoints masked (MaskEndpoints): one agent run through two gateways
// is one group, another model or another flag is another. The label is
// the spec (a preset's name, a built-in's spec, a command line masked and
// cut to labelMax characters) with "[model M, version V]" where known.
func AgentGroupOf(a apitype.AgentIdentity) AgentGroup {
	var key strings.Builder
	if strings.HasPrefix(a.Spec, "builtin:") {
		key.WriteString(a.Spec)
	} else {
		key.WriteString("sha256:" + a.SHA256 + "\x00version=" + a.Version)
		for _, arg := range a.Args {
			key.WriteString("\x00" + MaskEndpoints(arg))
		}
	}
	key.WriteString("\x00model=" + a.Model)

	label := MaskEndpoints(a.Spec)
	if r := []rune(label); len(r) > labelMax {
		label = string(r[:labelMax-1]) + "…"
	}
	if label == "" {
		label = "sha256:" + short(a.SHA256)
	}
	var tags []string
	if a.Model != "" {
		tags = append(tags, "model "+a.Model)
	}
	if a.Version != "" {
		tags = append(tags, "version "+a.Version)
	}
	if len(tags) > 0 {
		label += " [" + strings.Join(tags, ", ") + "]"
	}
	return AgentGroup{Key: key.String(), Label: label}
}

// Tag tells g apart from another group with its label: the first 8 hex
// digits of the SHA-256 of its key.
func (g AgentGroup) Tag() string {
	h := sha256.Sum256([]byte(g.Key))
	return hex.EncodeToString(h[:])[:8]
}

// short is a hash's first 12 hex digits, "-" for none.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return "-"
	}
	return sha
}
