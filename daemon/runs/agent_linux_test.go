package runs

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"benchd.dev/agents"
	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/graders"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
		bad  bool
	}{
		{"plain", "agent --plan {plan}", []string{"agent", "--plan", "{plan}"}, false},
		{"blanks", "  a \t b\n", []string{"a", "b"}, false},
		{"single quotes", `sh -c 'echo "$HOME" \n'`, []string{"sh", "-c", `echo "$HOME" \n`}, false},
		{"double quotes", `a "b c" "d\"e" "f\g" "\$x"`, []string{"a", "b c", `d"e`, `f\g`, "$x"}, false},
		{"backslash", `a b\ c \'d`, []string{"a", "b c", "'d"}, false},
		{"joined", `a'b'"c"d`, []string{"abcd"}, false},
		{"empty quotes", `a '' ""`, []string{"a", "", ""}, false},
		{"empty", "   ", nil, false},
		{"open single", `a 'b`, nil, true},
		{"open double", `a "b`, nil, true},
		{"trailing backslash", `a \`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := splitCommand(tt.in)
			if tt.bad {
				if err == nil {
					t.Errorf("got %q, want an error", got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func testTask(t *testing.T) *tasks.Task {
	t.Helper()
	task, err := tasks.Find(tasksDir(t), "rt-01")
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestResolveAgent(t *testing.T) {
	task := testTask(t)
	e := &Engine{}
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "data")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		spec    string
		wantErr bool
		check   func(t *testing.T, id apitype.AgentIdentity)
	}{
		{"null", apitype.AgentNull, false, func(t *testing.T, id apitype.AgentIdentity) {
			if len(id.SHA256) != 64 || id.Exe != "" {
				t.Errorf("got %+v, want an overlay hash and no executable", id)
			}
		}},
		{"reference", apitype.AgentReference, false, nil},
		{"known attempt", apitype.AgentAttemptPrefix + "edits-tests", false, nil},
		{"unknown attempt", apitype.AgentAttemptPrefix + "nope", true, nil},
		{"reference as attempt", apitype.AgentAttemptPrefix + "reference", true, nil},
		{"unknown builtin", "builtin:magic", true, nil},
		{"absolute path", "/bin/sh --plan {plan}", false, func(t *testing.T, id apitype.AgentIdentity) {
			sum, _ := journal.HashFile("/bin/sh")
			if id.Exe != "/bin/sh" || id.SHA256 != sum || !slices.Equal(id.Args, []string{"--plan", "{plan}"}) {
				t.Errorf("got %+v, want the program, its hash and its args", id)
			}
		}},
		// The sandbox does not show the temp dir (TestAgentOutsideSandbox).
		{"script outside the sandbox", script + " --plan {plan}", true, nil},
		{"bare name", "sh -c true", false, func(t *testing.T, id apitype.AgentIdentity) {
			if !filepath.IsAbs(id.Exe) || filepath.Base(id.Exe) != "sh" {
				t.Errorf("got exe %q, want an absolute path to sh", id.Exe)
			}
		}},
		{"missing command", "no-such-agent-xyz --x", true, nil},
		{"relative path", "./agent", true, nil},
		{"not executable", notExec, true, nil},
		{"directory", dir, true, nil},
		{"empty", "  ", true, nil},
		{"bad quoting", "sh -c 'x", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := e.ResolveAgent(tt.spec, task)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("got %v, want an error wrapping ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want none", err)
			}
			if id.Spec != tt.spec {
				t.Errorf("got spec %q, want %q", id.Spec, tt.spec)
			}
			if tt.check != nil {
				tt.check(t, id)
			}
		})
	}
	t.Run("builtins differ", func(t *testing.T) {
		seen := map[string]string{}
		for _, s := range []string{apitype.AgentNull, apitype.AgentReference, apitype.AgentAttemptPrefix + "edits-tests", apitype.AgentAttemptPrefix + "deletes-tests"} {
			id, err := e.ResolveAgent(s, task)
			if err != nil {
				t.Fatal(err)
			}
			if other, dup := seen[id.SHA256]; dup {
				t.Errorf("%s and %s have the same hash %s", s, other, id.SHA256)
			}
			seen[id.SHA256] = s
		}
	})
}

// TestAPIVerdict: the wire verdict is the graders' as it is (Grade
// decides it, the refused edits included), with reasons never null and
// the operator's detail never on the wire.
func TestAPIVerdict(t *testing.T) {
	for _, gv := range []graders.Verdict{
		{Verdict: apitype.Verdict{Reward: 1, Pass: true, Outcome: graders.OutcomePass, Seed: 9}},
		{Verdict: apitype.Verdict{Outcome: graders.OutcomeFail, Reasons: []graders.Reason{{Code: "tests_failed", Message: "x"}, {Code: graders.CodeWrongFiles, Message: "y"}}}, Detail: "hidden test_secret failed"},
		{Verdict: apitype.Verdict{Outcome: graders.OutcomeReview, Reasons: []graders.Reason{{Code: graders.CodeNeedsReview, Message: "z"}}}},
	} {
		wire, err := json.Marshal(gv.Verdict)
		if err != nil {
			t.Fatal(err)
		}
		var back apitype.Verdict
		if err := json.Unmarshal(wire, &back); err != nil {
			t.Fatal(err)
		}
		if back.Pass != gv.Pass || back.Reward != gv.Reward || back.Outcome != gv.Outcome || back.Seed != gv.Seed || !slices.Equal(codes(back.Reasons), gv.Codes()) {
			t.Errorf("wire verdict of %+v came back as %+v", gv, back)
		}
		if !strings.Contains(string(wire), `"reasons":[`) {
			t.Errorf("wire verdict %s: want reasons as a list, never null", wire)
		}
		if strings.Contains(string(wire), "detail") || strings.Contains(string(wire), "secret") {
			t.Errorf("wire verdict %s carries the operator's detail", wire)
		}
		op, err := json.Marshal(gv)
		if err != nil {
			t.Fatal(err)
		}
		if gv.Detail != "" && !strings.Contains(string(op), `"detail":"hidden test_secret failed"`) {
			t.Errorf("operator's verdict %s lost its detail", op)
		}
		if (gv.Outcome == graders.OutcomeReview) != strings.Contains(string(wire), `"pass":null`) {
			t.Errorf("wire verdict %s: pass must be null exactly when left to review", wire)
		}
	}
}

func TestNetworkUse(t *testing.T) {
	n := apitype.Network{
		Attempts: []apitype.NetAttempt{{Proto: "tcp", Dst: "192.0.2.1:443"}},
		DNS: []apitype.DNSQuery{
			{Name: "localhost"}, {Name: "sandbox"}, {Name: "api.example.com"}, {Name: "evil.example"},
		},
		Gateways: []apitype.GatewayUse{{Name: "model", Endpoint: "api.example.com:443"}},
	}
	got := networkUse(n, "sandbox")
	want := []string{"tcp 192.0.2.1:443", "dns evil.example"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := networkUse(apitype.Network{}, "sandbox"); len(got) != 0 {
		t.Errorf("got %q for no traffic, want none", got)
	}
}

func TestFinalMessage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		data string
		want string
	}{
		{"short", "done\n", "done\n"},
		{"empty", "", ""},
		{"last twenty lines", func() string {
			s := ""
			for i := range 30 {
				s += string(rune('a'+i%26)) + "\n"
			}
			return s
		}(), "k\nl\nm\nn\no\np\nq\nr\ns\nt\nu\nv\nw\nx\ny\nz\na\nb\nc\nd\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if err := os.WriteFile(p, []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := finalMessage(p); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := finalMessage(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("got %q for a missing transcript, want none", got)
	}
}

func TestAgentEnv(t *testing.T) {
	env, names, err := agentEnv([]apitype.EnvVar{{Name: "API_KEY", Value: "secret"}, {Name: "PATH", Value: "/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"API_KEY=secret", "PATH=/bin", "BENCH_PLAN=" + PlanPath}; !slices.Equal(env, want) {
		t.Errorf("got env %q, want %q", env, want)
	}
	if want := []string{"API_KEY", "PATH"}; !slices.Equal(names, want) {
		t.Errorf("got names %q, want %q", names, want)
	}
	for _, bad := range [][]apitype.EnvVar{
		{{Name: "A=B"}}, {{Name: ""}}, {{Name: "1X"}}, {{Name: "BENCH_PLAN"}}, {{Name: "X"}, {Name: "X"}},
	} {
		if _, _, err := agentEnv(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("agentEnv(%+v): got %v, want ErrInvalid", bad, err)
		}
	}
}

// TestAgentEnvOfGraders: the environment graders give the agent's code
// (graders.AgentEnv) is the one an agent started with no variables gets:
// agentEnv's, then the sandbox's $HOME and PATH.
func TestAgentEnvOfGraders(t *testing.T) {
	env, _, err := agentEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := append(env, "HOME="+sandbox.DefaultHome, "PATH="+agentPath)
	if !slices.Equal(graders.AgentEnv, want) {
		t.Errorf("got graders.AgentEnv %q, want the agent's %q", graders.AgentEnv, want)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no state", Config{TasksDir: tasksDir(t)}},
		{"no tasks", Config{StateDir: t.TempDir()}},
		{"tasks missing", Config{StateDir: t.TempDir(), TasksDir: filepath.Join(t.TempDir(), "none")}},
		{"negative uid", Config{StateDir: t.TempDir(), TasksDir: tasksDir(t), AgentUID: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestRunRefusesBadSpecs(t *testing.T) {
	e, err := New(Config{StateDir: t.TempDir(), TasksDir: tasksDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	task := testTask(t)
	tests := []struct {
		name string
		spec Spec
		want error
	}{
		{"bad id", Spec{AttemptID: "../x", Task: task, Agent: apitype.AgentNull}, ErrInvalid},
		{"no task", Spec{AttemptID: "x", Agent: apitype.AgentNull}, ErrInvalid},
		{"bad agent", Spec{AttemptID: "x", Task: task, Agent: "builtin:nope"}, ErrInvalid},
		{"bad gateway", Spec{AttemptID: "x", Task: task, Agent: apitype.AgentNull, Gateways: []string{"no-port"}}, ErrInvalid},
		{"bad env", Spec{AttemptID: "x", Task: task, Agent: apitype.AgentNull, Env: []apitype.EnvVar{{Name: "a b"}}}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := e.Run(t.Context(), tt.spec, nil); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("existing attempt", func(t *testing.T) {
		if err := os.Mkdir(e.AttemptDir("dup"), 0o700); err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if _, err := e.Run(ctx, Spec{AttemptID: "dup", Task: task, Agent: apitype.AgentNull, Timeout: time.Second}, nil); !errors.Is(err, ErrConflict) {
			t.Errorf("got %v, want ErrConflict", err)
		}
	})
}

// TestUnknownAgentListsPresets: an agent that is neither a preset nor a
// command found is refused with what --agent does take: the presets and
// the built-in agents.
func TestUnknownAgentListsPresets(t *testing.T) {
	task := testTask(t)
	e := &Engine{}
	for _, spec := range []string{"codx", "claud --print"} {
		_, err := e.ResolveAgent(spec, task)
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%q: got %v, want an error wrapping ErrInvalid", spec, err)
		}
		for _, w := range append(agents.Builtin(), "not found in PATH", "nor is it an agent preset", apitype.AgentReference, apitype.AgentNull, apitype.AgentAttemptPrefix+"edits-tests") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: got %q, want it to name %q", spec, err, w)
			}
		}
	}
	// A path names no preset: its error stays about the path.
	_, err := e.ResolveAgent("/no/such/agent", task)
	if err == nil || strings.Contains(err.Error(), "preset") {
		t.Errorf("an absolute path: got %v, want an error without the presets", err)
	}
}

// TestAgentOutsideSandbox: a command agent whose executable the sandbox
// does not show (a script in a temp dir, a link to one from a shown
// tree's name) is refused when it is checked, saying why and what to
// do, instead of passing and then failing to start in every attempt.
func TestAgentOutsideSandbox(t *testing.T) {
	task := testTask(t)
	e := &Engine{}
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "sh-link")
	if err := os.Symlink("/bin/sh", link); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{script, script + " --plan {plan}", link} {
		_, err := e.Plan(Spec{Task: task, Agent: spec})
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("%q: got %v, want an error wrapping ErrInvalid", spec, err)
		}
		for _, w := range []string{"outside what the sandbox shows", "/usr, /bin", "not /usr/local", "install it under /usr", "binds"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: got %q, want it to say %q", spec, err, w)
			}
		}
	}
	// A bare name found in a shown tree passes.
	if _, err := e.Plan(Spec{Task: task, Agent: "sh -c true"}); err != nil {
		t.Errorf("sh: got %v, want none", err)
	}
	for _, tc := range []struct {
		p     string
		binds []string
		want  bool
	}{
		{"/usr/bin/python3", nil, true},
		{"/bin/sh", nil, true},
		{"/lib64/ld-linux-x86-64.so.2", nil, true},
		{"/usr/local/bin/agent", nil, false},
		{"/usr/local/bin/agent", []string{"/usr/local"}, true},
		{"/opt/benchd-agents/bin/codex", []string{"/opt/benchd-agents"}, true},
		{"/opt/benchd-agents-2/bin/x", []string{"/opt/benchd-agents"}, false},
		{"/tmp/agent.sh", nil, false},
		{"/home/u/agent", nil, false},
		{"/root/agent", nil, false},
		{"/usrx/agent", nil, false},
	} {
		if got := sandbox.Shows(tc.p, tc.binds); got != tc.want {
			t.Errorf("Shows(%q, %q): got %v, want %v", tc.p, tc.binds, got, tc.want)
		}
	}
}
