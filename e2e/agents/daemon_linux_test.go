package agents_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// TestThroughDaemon runs each CLI the way a user does: the real benchd on
// a temp socket and state dir, `benchctl model-replay` serving the fix
// script, and `benchctl run --agent NAME --env KEY --gateway model=...`.
func TestThroughDaemon(t *testing.T) {
	require(t)
	bin := t.TempDir()
	for _, b := range []struct{ out, pkg, cgo string }{
		{"benchd", "benchd.dev/cmd/benchd", "1"},
		{"benchctl", "benchd.dev/cmd/benchctl", "0"},
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, b.out), b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	benchctl := filepath.Join(bin, "benchctl")

	dir, err := os.MkdirTemp("", "benchd-agents-") // short: a socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "benchd.sock")
	daemon := exec.Command(filepath.Join(bin, "benchd"), "--socket", socket, "--state", filepath.Join(dir, "state"), "--tasks", repoTasks(t))
	var dlog strings.Builder
	daemon.Stdout, daemon.Stderr = &dlog, &dlog
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		daemon.Process.Signal(syscall.SIGTERM)
		daemon.Wait()
		if t.Failed() {
			t.Logf("benchd:\n%s", tail(dlog.String(), 4000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for exec.Command(benchctl, "--socket", socket, "status").Run() != nil {
		if time.Now().After(deadline) {
			t.Fatal("benchd not answering after 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	script := filepath.Join(dir, "fix.json")
	if err := os.WriteFile(script, []byte(scripts["fix"]), 0o644); err != nil {
		t.Fatal(err)
	}
	replay := exec.Command(benchctl, "model-replay", "--script", script, "--log", filepath.Join(dir, "model.jsonl"))
	stderr, err := replay.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := replay.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		replay.Process.Signal(syscall.SIGTERM)
		if err := replay.Wait(); err != nil {
			t.Errorf("model-replay did not end cleanly on SIGTERM: %v", err)
		}
	})
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("model-replay: %v", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "benchctl model-replay: listening on http://")
	if !ok {
		t.Fatalf("model-replay said %q, want its address", line)
	}

	for _, ac := range cases {
		t.Run(ac.preset, func(t *testing.T) {
			cmd := exec.Command(benchctl, "--socket", socket, "--json", "run", "--task", "rt-01", "--agent", ac.preset,
				"--env", ac.keyEnv, "--gateway", "model=http://"+addr, "--model", "bench-model")
			cmd.Env = append(os.Environ(), ac.keyEnv+"=sk-benchd-fake")
			out, err := cmd.Output()
			var res struct {
				Pass     bool              `json:"pass"`
				Attempts []apitype.Attempt `json:"attempts"`
			}
			if jerr := json.Unmarshal(out, &res); jerr != nil || len(res.Attempts) != 1 {
				t.Fatalf("benchctl run: %v, %v: %s", err, jerr, out)
			}
			a := res.Attempts[0]
			t.Logf("%s through benchd: pass %v, wall %d ms, peak memory %.1f MiB", ac.preset, a.Pass, a.WallMS, float64(a.PeakMemoryBytes)/(1<<20))
			if !res.Pass || err != nil {
				t.Errorf("got pass %v (exit %v), reasons %v; want a pass", res.Pass, err, codes(a))
			}
			if a.Agent.Spec != ac.preset || a.Agent.Model != "bench-model" || !slices.Equal(a.Agent.Env, []string{ac.keyEnv}) {
				t.Errorf("identity: got %+v", a.Agent)
			}
			if len(a.Network.Gateways) != 1 || a.Network.Gateways[0].Conns == 0 || len(a.Network.Attempts) != 0 || len(a.Network.DNS) != 0 {
				t.Errorf("network: got %+v, want the gateway only", a.Network)
			}
			if a.Network.Gateways[0].Kind != apitype.GatewayHTTP || a.Model == nil || a.Model.Calls < 3 || a.Model.OutputTokens < 30 || a.Model.ToolCalls < 2 {
				t.Errorf("model usage: got %+v through %+v, want 3 turns at least (10 output tokens each) and 2 tool calls", a.Model, a.Network.Gateways)
			}
			if show, err := exec.Command(benchctl, "--socket", socket, "model", a.ID).CombinedOutput(); err != nil || !strings.Contains(string(show), "tokens in") {
				t.Errorf("benchctl model: %v\n%s", err, show)
			}
		})
	}
	log, err := os.ReadFile(filepath.Join(dir, "model.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{`"api":"responses"`, `"api":"messages"`, `"api":"chat"`} {
		if !strings.Contains(string(log), api) {
			t.Errorf("the model log has no request with %s", api)
		}
	}
}
