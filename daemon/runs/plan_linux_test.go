package runs

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// TestPlan: Plan is the one check of an attempt's request. What it
// refuses wraps ErrInvalid and says why; what it accepts comes back
// resolved (the timeout, the names of the variables, the identity), in
// the form benchd keeps (Request), with no value of a variable in it.
func TestPlan(t *testing.T) {
	task := testTask(t)
	var e *Engine // Plan reads no state of the engine
	env := func(kv ...string) []apitype.EnvVar {
		var vars []apitype.EnvVar
		for i := 0; i < len(kv); i += 2 {
			vars = append(vars, apitype.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return vars
	}
	refused := []struct {
		name string
		spec Spec
		want string
	}{
		{"reserved BENCH_PLAN", Spec{Agent: apitype.AgentNull, Env: env("BENCH_PLAN", "/etc/passwd")}, "BENCH_PLAN is benchd's to set"},
		{"name twice", Spec{Agent: apitype.AgentNull, Env: env("A", "1", "A", "2")}, "A given twice"},
		{"bad name", Spec{Agent: apitype.AgentNull, Env: env("A=B", "1")}, `name "A=B" is not valid`},
		{"value too large", Spec{Agent: apitype.AgentNull, Env: env("BIG", strings.Repeat("v", apitype.MaxEnvValue+1))}, "BIG has a value of 65537 bytes"},
		{"no agent", Spec{}, "no agent given"},
		{"agent too long", Spec{Agent: strings.Repeat("a", apitype.MaxAgentBytes+1)}, "agent command of 4097 bytes"},
		{"unknown built-in", Spec{Agent: "builtin:magic"}, "builtin:magic"},
		{"timeout too short", Spec{Agent: apitype.AgentNull, Timeout: 10 * time.Millisecond}, "timeout 10ms out of range"},
		{"bad gateway", Spec{Agent: apitype.AgentNull, Gateways: []string{"model"}}, "gateways"},
		{"model too long", Spec{Agent: apitype.AgentNull, Model: strings.Repeat("m", 257)}, "model name longer than 256 bytes"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Task = task
			_, err := e.Plan(tt.spec)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error wrapping ErrInvalid saying %q", err, tt.want)
			}
		})
	}
	t.Run("accepted", func(t *testing.T) {
		p, err := e.Plan(Spec{Task: task, Agent: apitype.AgentNull, Env: env("TOKEN", "secret-value"), Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		want := Request{Task: task.ID, Agent: apitype.AgentNull, Timeout: task.AgentTimeout.String(), Model: "m", EnvNames: []string{"TOKEN"}}
		if !slices.Equal(p.Request.EnvNames, want.EnvNames) || p.Request.Task != want.Task || p.Request.Timeout != want.Timeout || p.Request.Model != want.Model {
			t.Errorf("got request %+v, want %+v", p.Request, want)
		}
		if p.Timeout != task.AgentTimeout || p.Identity.Model != "m" || !slices.Equal(p.Identity.Env, []string{"TOKEN"}) {
			t.Errorf("got timeout %v, identity %+v; want the task's timeout, model m, env TOKEN", p.Timeout, p.Identity)
		}
		if !slices.Contains(p.agentEnv, "BENCH_PLAN="+PlanPath) || !slices.Contains(p.agentEnv, "TOKEN=secret-value") {
			t.Errorf("got agent environment %q, want TOKEN and BENCH_PLAN", p.agentEnv)
		}
		// The request as kept plans again to the same plan.
		spec, err := p.Request.Spec(task, p.Env)
		if err != nil {
			t.Fatal(err)
		}
		q, err := e.Plan(spec)
		if err != nil || q.Timeout != p.Timeout || q.Identity.SHA256 != p.Identity.SHA256 {
			t.Errorf("planned again: got %+v, %v; want the same plan", q, err)
		}
	})
}
