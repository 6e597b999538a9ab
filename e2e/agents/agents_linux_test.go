package agents_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/runs"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/modelfake"
	"benchd.dev/internal/testenv"
	"benchd.dev/modelgw"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}

// agentCase is one CLI: its preset, the variable it reads its key from,
// and the comms its own process tree may write under.
type agentCase struct {
	preset, keyEnv string
	comms          []string
}

var cases = []agentCase{
	{"codex", "OPENAI_API_KEY", []string{"codex", "bash", "python3"}},
	{"claude", "ANTHROPIC_API_KEY", []string{"claude", "bash", "python3"}},
	{"qwen", "OPENAI_API_KEY", []string{"node", "qwen", "bash", "python3"}},
}

// The edits go through each agent's shell tool: Claude Code's and Qwen
// Code's own editing tools write a temporary file beside the target
// (src/counter.py.tmp.*), which RT-01's policy refuses (docs/agents.md).
const fixEdit = `{"path": "src/counter.py", "old": "        if nxt > self._capacity:", "new": "        if nxt == self._capacity:", "via": "shell"}`

var scripts = map[string]string{
	"fix": `{"steps": [{"shell": "cat src/counter.py"}, {"edit": ` + fixEdit + `}, {"final": "Fixed the wrap-around test in inc()."}]}`,
	"edits-tests": `{"steps": [{"shell": "cat src/counter.py"}, {"edit": ` + fixEdit + `},
		{"edit": {"path": "tests/test_public.py", "old": "def test_starts_at_zero():", "new": "def test_starts_at_zero_edited():", "via": "shell"}},
		{"final": "Fixed, and renamed a test."}]}`,
	"hang": `{"hang": true}`,
}

func repoTasks(t *testing.T) string {
	d, err := filepath.Abs(filepath.Join("..", "..", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// modelServer serves script on the host's loopback and returns the
// spec of an HTTP gateway to it (which records each call), and the
// server.
func modelServer(t *testing.T, script string) (string, *modelfake.Server) {
	t.Helper()
	sc, err := modelfake.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(t.TempDir(), "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := modelfake.New(modelfake.Config{Script: sc, Log: logf})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s}
	go hs.Serve(ln)
	t.Cleanup(func() {
		s.Close()
		hs.Close()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("model requests:\n%s", b)
		}
	})
	return "model=http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), s
}

func run(t *testing.T, ac agentCase, script string, timeout time.Duration) (runs.Outcome, *modelfake.Server) {
	t.Helper()
	gw, srv := modelServer(t, script)
	e, err := runs.New(runs.Config{StateDir: t.TempDir(), TasksDir: repoTasks(t), ScratchDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Find(repoTasks(t), "rt-01")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := e.Run(ctx, runs.Spec{AttemptID: ac.preset + "-" + strconv.FormatInt(time.Now().UnixNano(), 36), Task: task, Agent: ac.preset,
		Timeout: timeout, Env: []apitype.EnvVar{{Name: ac.keyEnv, Value: "sk-benchd-fake"}}, Gateways: []string{gw}, Model: "bench-model"}, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if recs, err := journal.Read(out.JournalPath); err == nil {
				for _, r := range recs {
					if r.Decision != "" && r.Decision != "allow" {
						t.Logf("journal: %s %s %s %s %s", r.Op, r.Path, r.Path2, r.Comm, r.Decision)
					}
				}
			}
			for _, f := range []string{out.StdoutPath, out.StderrPath} {
				b, _ := os.ReadFile(f)
				t.Logf("%s:\n%s", filepath.Base(f), tail(string(b), 4000))
			}
		}
	})
	a := out.Attempt
	t.Logf("%s: pass %v, exit %d, wall %d ms, peak memory %.1f MiB, max RSS %.1f MiB, model requests %d, reasons %v",
		ac.preset, a.Pass, a.ExitCode, a.WallMS, float64(a.PeakMemoryBytes)/(1<<20), float64(a.MaxRSSBytes)/(1<<20), len(srv.Requests()), a.Reasons)
	return out, srv
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func codes(a apitype.Attempt) []string {
	var c []string
	for _, r := range a.Reasons {
		c = append(c, r.Code)
	}
	return c
}

func require(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.FUSE, testenv.Cgroups, testenv.Netns, testenv.Userns, testenv.Python, testenv.Pytest, testenv.NodeAgents)
}

func TestAgentFixes(t *testing.T) {
	require(t)
	for _, ac := range cases {
		t.Run(ac.preset, func(t *testing.T) {
			out, srv := run(t, ac, scripts["fix"], 3*time.Minute)
			a := out.Attempt
			if !a.Pass {
				t.Errorf("got a failing verdict %v, want a pass", codes(a))
			}
			if a.Agent.Spec != ac.preset || a.Agent.Model != "bench-model" || a.Agent.SHA256 == "" || !slices.Contains(a.Agent.Env, ac.keyEnv) {
				t.Errorf("identity: got %+v", a.Agent)
			}
			if strings.HasSuffix(a.Agent.Exe, ".js") && ac.preset != "qwen" || strings.Contains(a.Agent.Exe, "/.bin/") {
				t.Errorf("identity hashes %s, a wrapper, not the real executable", a.Agent.Exe)
			}
			// The edit is the agent's own: a change of src/counter.py by a
			// process of its tree.
			recs, err := journal.Read(out.JournalPath)
			if err != nil {
				t.Fatal(err)
			}
			var writers []string
			for _, r := range recs {
				// Writes are journaled at release (with the content's hash)
				// or as truncates and renames, depending on the tool.
				if (r.Path == "src/counter.py" || r.Path2 == "src/counter.py") && r.Op != journal.OpOpen && r.Result == "ok" {
					writers = append(writers, r.Comm)
				}
			}
			if len(writers) == 0 {
				for _, r := range recs {
					t.Logf("journal: %s %s %s %s", r.Op, r.Path, r.Comm, r.Result)
				}
				t.Errorf("the journal has no write of src/counter.py")
			}
			for _, c := range writers {
				if !slices.ContainsFunc(ac.comms, func(p string) bool { return strings.HasPrefix(c, p) }) {
					t.Errorf("src/counter.py written by %q, want one of %v", c, ac.comms)
				}
			}
			// The network record shows the gateway and nothing else.
			n := a.Network
			if len(n.Gateways) != 1 || n.Gateways[0].Conns == 0 || n.Gateways[0].BytesOut == 0 {
				t.Errorf("gateway use: got %+v, want connections through the model gateway", n.Gateways)
			}
			if len(n.Attempts) != 0 {
				t.Errorf("connection attempts past the gateway: %+v", n.Attempts)
			}
			var other []string
			for _, q := range n.DNS {
				other = append(other, q.Name+" "+q.Type)
			}
			t.Logf("%s: DNS questions: %v", ac.preset, other)
			if got := len(srv.Requests()); got < 3 {
				t.Errorf("model requests: got %d, want at least 3 (read, edit, final)", got)
			}
			checkModelCalls(t, ac, out, srv)
		})
	}
}

func TestAgentEditsTests(t *testing.T) {
	require(t)
	for _, ac := range cases {
		t.Run(ac.preset, func(t *testing.T) {
			out, _ := run(t, ac, scripts["edits-tests"], 3*time.Minute)
			if a := out.Attempt; a.Pass || !slices.Contains(codes(a), "wrong_files") {
				t.Errorf("got pass %v reasons %v, want a fail with wrong_files", a.Pass, codes(a))
			}
		})
	}
}

func TestAgentTimeout(t *testing.T) {
	require(t)
	for _, ac := range cases {
		t.Run(ac.preset, func(t *testing.T) {
			out, _ := run(t, ac, scripts["hang"], 20*time.Second)
			a := out.Attempt
			if a.Pass || !a.TimedOut || !slices.Contains(codes(a), "timeout") {
				t.Errorf("got pass %v timed out %v reasons %v, want a timeout", a.Pass, a.TimedOut, codes(a))
			}
			if left := survivors(a.Agent.Exe); len(left) > 0 {
				t.Errorf("processes of the agent survive: %v", left)
			}
		})
	}
}

// survivors lists processes running exe (or a node running it).
func survivors(exe string) []string {
	var left []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmd), exe) {
			left = append(left, fmt.Sprintf("%s %q", e.Name(), strings.ReplaceAll(string(cmd), "\x00", " ")))
		}
	}
	return left
}

// TestPlanAgent: a preset's needs are checked before an attempt is
// queued (Engine.Plan), and the identity names the real executable and
// the model.
func TestPlanAgent(t *testing.T) {
	testenv.Require(t, testenv.NodeAgents)
	e, err := runs.New(runs.Config{StateDir: t.TempDir(), TasksDir: repoTasks(t), ScratchDir: t.TempDir(), AgentUID: 65534, AgentGID: 65534})
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Find(repoTasks(t), "rt-01")
	if err != nil {
		t.Fatal(err)
	}
	key := []apitype.EnvVar{{Name: "ANTHROPIC_API_KEY", Value: "x"}}
	for _, tc := range []struct {
		name  string
		spec  runs.Spec
		model string // "" when an error wrapping runs.ErrInvalid is wanted
	}{
		{"complete", runs.Spec{Agent: "claude", Env: key, Gateways: []string{"model=api.example.test:443"}, Model: "m"}, "m"},
		{"default model", runs.Spec{Agent: "claude", Env: key, Gateways: []string{"model=api.example.test:443"}}, "claude-sonnet-4-5"},
		{"no gateway", runs.Spec{Agent: "claude", Env: key}, ""},
		{"no key", runs.Spec{Agent: "claude", Gateways: []string{"model=api.example.test:443"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Task = task
			plan, err := e.Plan(tc.spec)
			if tc.model == "" {
				if !errors.Is(err, runs.ErrInvalid) {
					t.Errorf("got %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			id := plan.Identity
			if id.Model != tc.model || id.Exe != testenv.AgentsPrefix+"/node_modules/@anthropic-ai/claude-code/bin/claude.exe" || len(id.SHA256) != 64 {
				t.Errorf("got identity %+v, want model %s and claude.exe hashed", id, tc.model)
			}
			if !slices.Contains(id.Args, "-p") || !slices.Contains(id.Args, tc.model) {
				t.Errorf("args %q lack -p or the model", id.Args)
			}
		})
	}
}

// checkModelCalls: the HTTP gateway recorded every request the model
// server answered, the three turns with the usage the server reported
// (10 output tokens each) and the tool calls it asked for, and the sum
// on the attempt.
func checkModelCalls(t *testing.T, ac agentCase, out runs.Outcome, srv *modelfake.Server) {
	t.Helper()
	if out.ModelDir == "" {
		t.Fatalf("no model calls recorded")
	}
	calls, err := modelgw.ReadLog(out.ModelDir)
	if err != nil {
		t.Fatal(err)
	}
	served := srv.Requests()
	if len(calls) != len(served) {
		t.Errorf("recorded %d calls, the server answered %d", len(calls), len(served))
	}
	api := map[string]string{"codex": apitype.ModelAPIResponses, "claude": apitype.ModelAPIMessages, "qwen": apitype.ModelAPIChat}[ac.preset]
	var turns, tools int
	var sum apitype.TokenUsage
	for _, c := range calls {
		if c.API != api || len(c.ToolCalls) == 0 && c.Text == "" {
			continue // side requests: titles, token counts
		}
		turns++
		tools += len(c.ToolCalls)
		if c.Usage == nil {
			t.Errorf("call %d (%s %s, stream %v) has no usage", c.Seq, c.API, c.Path, c.Stream)
			continue
		}
		if c.Usage.OutputTokens != 10 || c.Usage.InputTokens == 0 {
			t.Errorf("call %d: usage %+v, want the server's (10 output tokens)", c.Seq, *c.Usage)
		}
		sum.Add(*c.Usage)
	}
	if turns < 3 || tools < 2 {
		t.Errorf("got %d turns with %d tool calls, want 3 turns and 2 tool calls (read, edit) at least", turns, tools)
	}
	t.Logf("%s: %d calls, %d turns, %d tool calls, %d tokens in, %d out", ac.preset, len(calls), turns, tools, sum.InputTokens, sum.OutputTokens)
}
