package runs

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"benchd.dev/agents"
	"benchd.dev/client/apitype"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

// Request is an attempt's request in the one form benchd keeps of it
// (the store's request column): the task, the agent, the timeout as
// resolved, the gateways, the model and the names of the environment
// variables, never their values, which live in memory only.
type Request struct {
	Task     string   `json:"task"`
	Agent    string   `json:"agent"`
	Timeout  string   `json:"timeout"`
	Gateways []string `json:"gateways,omitempty"`
	Model    string   `json:"model,omitempty"`
	EnvNames []string `json:"env_names,omitempty"`
}

// Spec is what a caller asks of one attempt, before it is checked: the
// task's bundle, the agent, the environment with its values, the
// gateways, the model and the timeout (0: the task's).
type Spec struct {
	AttemptID string // [A-Za-z0-9][A-Za-z0-9_.-], at most 40 characters (Run only)
	Task      *tasks.Task
	Agent     string        // a built-in, a preset or a command line
	Timeout   time.Duration // 0: the task's agent timeout
	Env       []apitype.EnvVar
	Gateways  []string // NAME=HOST:PORT (raw) or NAME=http(s)://HOST[:PORT][/PATH] (HTTP)
	Model     string
}

// Spec is the spec of request r of an attempt of task with the
// environment values env (names checked against r's by Plan). A timeout
// that does not parse wraps ErrInvalid.
func (r Request) Spec(task *tasks.Task, env []apitype.EnvVar) (Spec, error) {
	timeout, err := ParseTimeout(r.Timeout)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Task: task, Agent: r.Agent, Timeout: timeout, Env: env, Gateways: r.Gateways, Model: r.Model}, nil
}

// ParseTimeout reads a timeout as a request gives it (a Go duration; ""
// is 0, the task's). One that does not parse wraps ErrInvalid.
func ParseTimeout(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("timeout %q is not a duration such as 90s or 10m: %w", s, ErrInvalid)
	}
	return d, nil
}

// Plan is a checked attempt: everything Run needs, resolved once. Run
// checks nothing of it again.
type Plan struct {
	// Request is the form kept of it: the timeout resolved, the
	// variables' names.
	Request Request
	// Task is the task's bundle.
	Task *tasks.Task
	// Identity is the agent's (a preset's default model in it).
	Identity apitype.AgentIdentity
	// Timeout is the agent's time limit, in [apitype.MinTimeout,
	// apitype.MaxTimeout].
	Timeout time.Duration
	// Env has the variables' values: memory only.
	Env []apitype.EnvVar

	ag       agent
	agentEnv []string // NAME=VALUE, BENCH_PLAN and a preset's included
	gws      []gatewaySpec
}

// Limits are the plan's limits as an attempt records them.
func (p *Plan) Limits() *apitype.Limits {
	return &apitype.Limits{TimeoutMS: p.Timeout.Milliseconds(), MemoryBytes: int64(p.Task.MemoryMB) << 20, CPUs: p.Task.CPUs}
}

// ReservedEnv are the environment variables benchd sets itself: a
// request may not name them.
var ReservedEnv = []string{"BENCH_PLAN"}

// maxModelBytes bounds a request's model name.
const maxModelBytes = 256

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Plan checks spec, the one place an attempt's request is checked (its
// task id is the daemon's, which found the bundle): the agent's size
// and identity (a preset's needs, its gateway and its key variable,
// included), the environment's names (none reserved, none twice), count
// and sizes, the gateways, the model's size and the timeout (0: the
// task's, else apitype.DefaultTimeout) within [apitype.MinTimeout,
// apitype.MaxTimeout]. Every error wraps ErrInvalid. It reads no state of
// e: a nil Engine plans too.
func (e *Engine) Plan(spec Spec) (*Plan, error) {
	task := spec.Task
	if task == nil {
		return nil, fmt.Errorf("no task: %w", ErrInvalid)
	}
	if spec.Agent == "" {
		return nil, fmt.Errorf("no agent given: %w", ErrInvalid)
	}
	if len(spec.Agent) > apitype.MaxAgentBytes {
		return nil, fmt.Errorf("agent command of %d bytes: at most %d: %w", len(spec.Agent), apitype.MaxAgentBytes, ErrInvalid)
	}
	timeout, err := planTimeout(spec.Timeout, task)
	if err != nil {
		return nil, err
	}
	env, names, err := agentEnv(spec.Env)
	if err != nil {
		return nil, err
	}
	gws, err := parseGateways(spec.Gateways)
	if err != nil {
		return nil, fmt.Errorf("gateways: %w", err)
	}
	if len(spec.Model) > maxModelBytes {
		return nil, fmt.Errorf("model name longer than %d bytes: %w", maxModelBytes, ErrInvalid)
	}
	ag, err := resolveAgent(spec.Agent, task, env, &agents.Input{Model: spec.Model, BaseURLs: baseURLs(gws), EnvNames: names, Home: sandbox.DefaultHome})
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", spec.Agent, err)
	}
	if ag.id.Model == "" { // a preset names its model itself
		ag.id.Model = spec.Model
	}
	ag.id.Env = names
	return &Plan{
		Request: Request{Task: task.ID, Agent: spec.Agent, Timeout: timeout.String(),
			Gateways: spec.Gateways, Model: spec.Model, EnvNames: names},
		Task: task, Identity: ag.id, Timeout: timeout, Env: spec.Env,
		ag: ag, agentEnv: presetEnv(env, ag.env), gws: gws,
	}, nil
}

// planTimeout is the agent's time limit: t, else the task's, else
// apitype.DefaultTimeout, within [apitype.MinTimeout, apitype.MaxTimeout].
func planTimeout(t time.Duration, task *tasks.Task) (time.Duration, error) {
	what := "timeout"
	if t == 0 {
		what = "task " + task.ID + ": timeout"
		if t = task.AgentTimeout; t == 0 {
			t = apitype.DefaultTimeout
		}
	}
	if t < apitype.MinTimeout || t > apitype.MaxTimeout {
		return 0, fmt.Errorf("%s %v out of range [%v, %v]: %w", what, t, apitype.MinTimeout, apitype.MaxTimeout, ErrInvalid)
	}
	return t, nil
}

// agentEnv builds the agent's environment from the named variables, plus
// BENCH_PLAN, and returns the names (never the values) for its identity.
// A variable of a bad or reserved name, given twice or too large, or too
// many of them, is an error wrapping ErrInvalid.
func agentEnv(vars []apitype.EnvVar) ([]string, []string, error) {
	if len(vars) > apitype.MaxEnvVars {
		return nil, nil, fmt.Errorf("%d environment variables: at most %d: %w", len(vars), apitype.MaxEnvVars, ErrInvalid)
	}
	env := make([]string, 0, len(vars)+1)
	names := make([]string, 0, len(vars))
	seen := map[string]bool{}
	for _, v := range vars {
		switch {
		case !envNameRE.MatchString(v.Name):
			return nil, nil, fmt.Errorf("environment variable name %q is not valid: %w", v.Name, ErrInvalid)
		case slices.Contains(ReservedEnv, v.Name):
			return nil, nil, fmt.Errorf("environment variable %s is benchd's to set (it names the plan): %w", v.Name, ErrInvalid)
		case len(v.Value) > apitype.MaxEnvValue:
			return nil, nil, fmt.Errorf("environment variable %s has a value of %d bytes: at most %d: %w", v.Name, len(v.Value), apitype.MaxEnvValue, ErrInvalid)
		case seen[v.Name]:
			return nil, nil, fmt.Errorf("environment variable %s given twice: %w", v.Name, ErrInvalid)
		}
		seen[v.Name] = true
		env = append(env, v.Name+"="+v.Value)
		names = append(names, v.Name)
	}
	env = append(env, "BENCH_PLAN="+PlanPath)
	return env, names, nil
}
