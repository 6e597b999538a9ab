package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/modelfake"
)

// modelServer serves a modelfake script on the host's loopback and
// returns its port.
func modelServer(t *testing.T, script string) int {
	t.Helper()
	sc, err := modelfake.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	s, err := modelfake.New(modelfake.Config{Script: sc})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s}
	go hs.Serve(ln)
	t.Cleanup(func() { s.Close(); hs.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// modelAgent is a command agent that talks to the gateway at
// 127.0.1.1:PORT as an agent CLI would (three Chat Completions turns,
// streamed, one Anthropic Messages call), puts its key in a prompt and
// a forged usage in a request, and tries what the gateway must refuse:
// an absolute-form request URI and a dot segment.
const modelAgent = `import json, os, socket, urllib.request
port = int(os.environ["GW_PORT"])
base = "http://127.0.1.1:%d" % port
key = os.environ["OPENAI_API_KEY"]
def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(req) as r:
        return r.read().decode()
tools = [{"type": "function", "function": {"name": "run_shell_command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
msgs = [{"role": "user", "content": "fix it; my key is " + key}]
for i in range(3):
    post("/v1/chat/completions", {"model": "bench-chat", "stream": True, "stream_options": {"include_usage": True}, "messages": msgs, "tools": tools, "usage": {"prompt_tokens": 9999999, "completion_tokens": 9999999}})
    msgs += [{"role": "assistant", "content": None}, {"role": "tool", "tool_call_id": "c%d" % i, "content": "ok"}]
post("/v1/messages", {"model": "bench-claude", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]})
for line in ["GET http://169.254.169.254/latest/meta-data HTTP/1.1", "GET /v1/../../admin HTTP/1.1"]:
    s = socket.create_connection(("127.0.1.1", port))
    s.sendall((line + "\r\nHost: x\r\nConnection: close\r\n\r\n").encode())
    s.recv(4096)
    s.close()
print("done")
`

// TestModelGateway runs a command agent through an HTTP gateway to the
// scripted model server with benchd --prices: the calls, their sum and
// cost are recorded and signed, the key never stored, the escapes
// refused; the export verifies and a forged usage does not; a kill -9
// during a call leaves it recorded as cut short; prune takes the calls.
func TestModelGateway(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	ctx := context.Background()
	prices := filepath.Join(dir, "prices.toml")
	if err := os.WriteFile(prices, []byte("[models.\"bench-chat\"]\ninput = 2.0\noutput = 8.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, "--prices", prices)
	defer func() { d.stop(t) }()
	port := modelServer(t, `{"steps": [{"shell": "cat src/counter.py"}, {"final": "Done."}]}`)
	secret := fmt.Sprintf("sk-e2e-%d-secret", time.Now().UnixNano())
	agent := "/usr/bin/python3 -c '" + modelAgent + "'"
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: agent,
		Env:      []apitype.EnvVar{{Name: "OPENAI_API_KEY", Value: secret}, {Name: "GW_PORT", Value: strconv.Itoa(port)}},
		Gateways: []string{fmt.Sprintf("model=http://127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	id := run.Attempts[0]
	a := wait(t, d.client, id)
	if a.State != apitype.StateDone {
		tr, _ := d.client.Transcript(ctx, id)
		t.Fatalf("got state %s (%s), want done\nstderr: %s", a.State, a.InfraError, tr.Stderr)
	}
	if len(a.Network.Gateways) != 1 || a.Network.Gateways[0].Kind != apitype.GatewayHTTP || a.Network.Gateways[0].Refused != 2 {
		t.Errorf("gateway use: got %+v, want an HTTP gateway with 2 refusals", a.Network.Gateways)
	}
	l, err := d.client.ModelLog(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Calls) != 6 {
		t.Fatalf("got %d calls, want 6: %+v", len(l.Calls), l.Calls)
	}
	apis := ""
	for _, c := range l.Calls {
		apis += c.API + " "
	}
	if apis != "chat chat chat messages other other " {
		t.Errorf("got APIs %q", apis)
	}
	for _, c := range l.Calls[4:] {
		if c.Status != 0 || !strings.Contains(c.Error, "refused by the gateway") {
			t.Errorf("escape %s: got status %d error %q, want refused", c.Path, c.Status, c.Error)
		}
	}
	u := a.Model
	sum := apitype.ModelUsageOf(l.Calls)
	if u == nil || u.Calls != 6 || u.Errors != 2 || u.ToolCalls != sum.ToolCalls || u.TokenUsage != sum.TokenUsage || u.CallsSHA256 != apitype.ModelCallsSHA256(l.Calls) {
		t.Fatalf("attempt's usage %+v, want the calls' sum %+v", u, sum)
	}
	if u.InputTokens >= 9999999 || u.OutputTokens != 40 {
		t.Errorf("usage %+v: want the server's counts (10 output tokens a call), not the forged one", u.TokenUsage)
	}
	var want float64
	for _, c := range l.Calls[:3] {
		want += (float64(c.Usage.InputTokens)*2 + float64(c.Usage.OutputTokens)*8) / 1e6
	}
	if u.CostUSD == nil || fmt.Sprintf("%.9f", *u.CostUSD) != fmt.Sprintf("%.9f", want) || u.Unpriced != 1 {
		t.Errorf("cost %v (unpriced %d), want %.9f with the Messages call unpriced", u.CostUSD, u.Unpriced, want)
	}
	req, err := d.client.ModelMessage(ctx, id, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(req), "Authorization: [redacted]") || !strings.Contains(string(req), "my key is [env OPENAI_API_KEY]") {
		t.Errorf("stored request:\n%s", req)
	}
	show, _ := benchctlOn(t, d.socket, "show", id)
	model, code := benchctlOn(t, d.socket, "model", id)
	if code != 0 || !strings.Contains(show, "6 calls") || !strings.Contains(model, "run_shell_command") {
		t.Errorf("benchctl show:\n%s\nbenchctl model (exit %d):\n%s", show, code, model)
	}

	// The export verifies; one with a forged usage does not.
	archive := filepath.Join(dir, "a.tar")
	if out, code := benchctlOn(t, d.socket, "export", id, "-o", archive); code != 0 {
		t.Fatalf("export: exit %d: %s", code, out)
	}
	key, _ := benchctlOn(t, d.socket, "key")
	if out, code := benchctlOn(t, d.socket, "verify", archive, "--key", strings.TrimSpace(key)); code != 0 || !strings.Contains(out, "6 calls") {
		t.Errorf("verify: exit %d:\n%s", code, out)
	}
	for name, forge := range map[string]func(string, []byte) []byte{
		"usage in model.jsonl": func(n string, b []byte) []byte {
			if n == "model.jsonl" {
				return bytes.Replace(b, []byte(`"output_tokens":10`), []byte(`"output_tokens":1`), 1)
			}
			return b
		},
		"a stored response": func(n string, b []byte) []byte {
			if n == "model/1.response" {
				return bytes.Replace(b, []byte("completion_tokens"), []byte("completion_tokenz"), 1)
			}
			return b
		},
	} {
		forged := filepath.Join(dir, "forged.tar")
		rewriteTar(t, archive, forged, forge)
		if out, code := benchctlOn(t, d.socket, "verify", forged, "--key", strings.TrimSpace(key)); code != 1 {
			t.Errorf("verify of an archive with a forged %s: exit %d, want 1:\n%s", name, code, out)
		}
	}
	for what, text := range map[string]string{"the stored request": string(req), "show": show, "the log": d.log.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the key", what)
		}
	}
	filepath.Walk(filepath.Join(d.state, "attempts", id), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() < 1<<20 {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the key", p)
			}
		}
		return nil
	})

	// A cancel and a timeout while a call waits on the upstream end
	// the attempt with the call recorded, cut short, as kill -9 below.
	hang := modelServer(t, `{"hang": true}`)
	for _, end := range []string{"cancel", "timeout"} {
		req := apitype.RunRequest{Task: "rt-01", Agent: agent,
			Env:      []apitype.EnvVar{{Name: "OPENAI_API_KEY", Value: secret}, {Name: "GW_PORT", Value: strconv.Itoa(hang)}},
			Gateways: []string{fmt.Sprintf("model=http://127.0.0.1:%d", hang)}}
		if end == "timeout" {
			req.Timeout = "3s"
		}
		run, err := d.client.CreateRun(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		id := run.Attempts[0]
		waitCallInProgress(t, d, id)
		if end == "cancel" {
			if _, err := d.client.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		a := wait(t, d.client, id)
		l, err := d.client.ModelLog(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.Model == nil || a.Model.Calls != 1 || len(l.Calls) != 1 || l.Calls[0].Error == "" || l.Calls[0].Error == "in progress" {
			t.Errorf("%s: state %s, usage %+v, calls %+v; want the call recorded as ended by the attempt's end", end, a.State, a.Model, l.Calls)
		}
		if end == "timeout" && !a.TimedOut {
			t.Errorf("timeout: got %+v, want a timed-out attempt", a)
		}
	}

	// kill -9 while a call waits on the upstream.
	run, err = d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: agent,
		Env:      []apitype.EnvVar{{Name: "OPENAI_API_KEY", Value: secret}, {Name: "GW_PORT", Value: strconv.Itoa(hang)}},
		Gateways: []string{fmt.Sprintf("model=http://127.0.0.1:%d", hang)}})
	if err != nil {
		t.Fatal(err)
	}
	id2 := run.Attempts[0]
	waitCallInProgress(t, d, id2)
	d.kill()
	d = startDaemon(t, dir, "--prices", prices)
	a2, err := d.client.Attempt(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := d.client.ModelLog(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	if a2.State != apitype.StateInfraError || a2.Model == nil || a2.Model.Calls != 1 || len(l2.Calls) != 1 || !strings.Contains(l2.Calls[0].Error, "cut short") {
		t.Errorf("after kill -9: state %s, usage %+v, calls %+v; want the call recorded as cut short\nbenchd's log:\n%s", a2.State, a2.Model, l2.Calls, d.log.String())
	}

	// Prune takes the calls with their attempts.
	if out, code := benchctlOn(t, d.socket, "prune", "--before", time.Now().Add(time.Minute).UTC().Format(time.RFC3339)); code != 0 {
		t.Fatalf("prune: exit %d: %s", code, out)
	}
	if _, err := d.client.ModelLog(ctx, id); err == nil {
		t.Errorf("the calls of a pruned attempt are still served")
	}
}

// waitCallInProgress waits until attempt id's one model call is in
// progress (its request sent upstream, no response yet).
func waitCallInProgress(t *testing.T, d *daemonProc, id string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		l, err := d.client.ModelLog(context.Background(), id)
		if err == nil && len(l.Calls) == 1 && l.Calls[0].Error == "in progress" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call in progress after 2 minutes: %+v %v", l, err)
		}
	}
}

// rewriteTar copies the tar src to dst, each file's content through f.
func rewriteTar(t *testing.T, src, dst string, f func(name string, b []byte) []byte) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	tr, tw := tar.NewReader(in), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		b = f(h.Name, b)
		h.Size = int64(len(b))
		tw.WriteHeader(h)
		tw.Write(b)
	}
	tw.Close()
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
