package draw

import (
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

// codexArgs is the codex preset's command line as it resolves with base,
// the gateway's URL inside the sandbox.
func codexArgs(model, base string) []string {
	return []string{"exec", "--dangerously-bypass-approvals-and-sandbox", "-m", model,
		"-c", "model_provider=benchd", "-c", "model_providers.benchd.base_url=" + base + "/v1",
		"-c", "model_providers.benchd.env_key=OPENAI_API_KEY",
		"Read the task in /plan/PLAN.md and carry it out in the current directory."}
}

func codex(model, base string) apitype.AgentIdentity {
	return apitype.AgentIdentity{Spec: "codex", Exe: "/opt/codex", SHA256: "c0dec0dec0dec0dec0de", Args: codexArgs(model, base), Model: model}
}

func TestAgentGroupOf(t *testing.T) {
	dry := codex("gpt-5-codex", "http://127.0.1.1:8080")
	real := codex("gpt-5-codex", "http://api.openai.com")
	tests := []struct {
		name string
		a, b apitype.AgentIdentity
		same bool
	}{
		{"two gateways, one agent", dry, real, true},
		{"an https gateway on another port", dry, codex("gpt-5-codex", "https://10.0.0.7:8443/base"), true},
		{"another model", dry, codex("gpt-5", "http://127.0.1.1:8080"), false},
		{"another binary", dry, func() apitype.AgentIdentity { a := dry; a.SHA256 = "ffff"; return a }(), false},
		{"another version", dry, func() apitype.AgentIdentity { a := dry; a.Version = "0.50.0"; return a }(), false},
		{"a flag that changes behaviour", dry, func() apitype.AgentIdentity {
			a := dry
			a.Args = append([]string{"--reasoning", "high"}, a.Args...)
			return a
		}(), false},
		{"a raw HOST:PORT argument", apitype.AgentIdentity{Spec: "agent --api 127.0.0.1:9000", SHA256: "aa", Args: []string{"--api", "127.0.0.1:9000"}},
			apitype.AgentIdentity{Spec: "agent --api 127.0.0.1:9100", SHA256: "aa", Args: []string{"--api", "127.0.0.1:9100"}}, true},
		{"a temporary path", apitype.AgentIdentity{Spec: "agent", SHA256: "aa", Args: []string{"--scratch=/tmp/benchd-123/x"}},
			apitype.AgentIdentity{Spec: "agent", SHA256: "aa", Args: []string{"--scratch=/tmp/benchd-456/x"}}, true},
		{"a path outside temp counts", apitype.AgentIdentity{Spec: "agent", SHA256: "aa", Args: []string{"--rules=/etc/a.md"}},
			apitype.AgentIdentity{Spec: "agent", SHA256: "aa", Args: []string{"--rules=/etc/b.md"}}, false},
		{"a port-like number that is not an endpoint counts", apitype.AgentIdentity{Spec: "agent", SHA256: "aa", Args: []string{"--ratio", "3:4"}},
			apitype.AgentIdentity{Spec: "agent", SHA256: "aa", Args: []string{"--ratio", "3:5"}}, false},
		{"built-ins: spec and model", apitype.AgentIdentity{Spec: apitype.AgentReference, SHA256: "x1"},
			apitype.AgentIdentity{Spec: apitype.AgentReference, SHA256: "x2"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ga, gb := AgentGroupOf(tt.a), AgentGroupOf(tt.b)
			if got := ga.Key == gb.Key; got != tt.same {
				t.Errorf("got same group %v, want %v (keys %q, %q)", got, tt.same, ga.Key, gb.Key)
			}
		})
	}
	if got, want := AgentGroupOf(dry).Label, "codex [model gpt-5-codex]"; got != want {
		t.Errorf("got label %q, want %q", got, want)
	}
	long := apitype.AgentIdentity{Spec: "/usr/bin/python3 /home/u/agent.py --base-url http://127.0.0.1:8080/v1 --mode careful --budget 200000 --log /tmp/x/log",
		SHA256: "aa", Model: "m1"}
	if got := AgentGroupOf(long).Label; len([]rune(got)) > labelMax+len(" [model m1]") || strings.Contains(got, "127.0.0.1") {
		t.Errorf("got label %q, want at most %d characters of the masked command and its model", got, labelMax)
	}
}

// TestScoreGroupsAgents: one agent run through two gateways is one row;
// another model is another row; an agent with infra errors only is none.
func TestScoreGroupsAgents(t *testing.T) {
	dry := codex("gpt-5-codex", "http://127.0.1.1:8080")
	real := codex("gpt-5-codex", "http://api.openai.com")
	other := codex("gpt-5", "http://api.openai.com")
	broken := apitype.AgentIdentity{Spec: "qwen", SHA256: "9999", Model: "qwen3-coder-plus"}
	var as []apitype.Attempt
	for i, task := range SuiteTasks {
		as = append(as,
			attempt("dry-"+task, task, dry, "pass", "v1-"+task, i),
			attempt("real-"+task, task, real, "fail", "v1-"+task, 10+i),
			attempt("other-"+task, task, other, "pass", "v1-"+task, 20+i),
			attempt("broken-"+task, task, broken, "infra", "v1-"+task, 30+i))
	}
	s := BuiltinSeries()
	s.Pin(storeHashes(), as)
	card := Score([]Series{s}, as, ScoreConfig{Resamples: 50}).Series[0]
	var names []string
	for _, a := range card.Agents {
		names = append(names, a.Agent)
	}
	if got, want := strings.Join(names, " | "), "codex [model gpt-5-codex] | codex [model gpt-5]"; got != want {
		t.Fatalf("got rows %q, want %q", got, want)
	}
	if a := card.Agents[0]; a.Scored != 12 || a.Passes != 6 {
		t.Errorf("got gpt-5-codex %d of %d, want 6 of 12 (both endpoints)", a.Passes, a.Scored)
	}
	if card.InfraOnly != len(SuiteTasks) {
		t.Errorf("got %d infra-only attempts, want %d", card.InfraOnly, len(SuiteTasks))
	}
	for _, to := range card.Tasks {
		for _, ao := range to.Agents {
			if strings.HasPrefix(ao.Agent, "qwen") {
				t.Errorf("task %s lists the infra-only agent %q", to.Task, ao.Agent)
			}
		}
	}
	if card.GroupedBy != AgentsGroupedBy || !strings.Contains(card.GroupedBy, "model") {
		t.Errorf("got grouped by %q", card.GroupedBy)
	}
}
