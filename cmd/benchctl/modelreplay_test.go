package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// addrWriter records what is written, from any goroutine, and hands
// the first line over on lines (made by newAddrWriter, never changed, so
// the test may read it while the command writes).
type addrWriter struct {
	lines chan string

	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
}

func newAddrWriter() *addrWriter { return &addrWriter{lines: make(chan string, 1)} }

func (w *addrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if i := bytes.IndexByte(w.buf.Bytes(), '\n'); i >= 0 && !w.sent {
		w.lines <- w.buf.String()[:i]
		w.sent = true
	}
	return len(p), nil
}

// String is everything written so far.
func (w *addrWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestModelReplay(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.json")
	if err := os.WriteFile(script, []byte(`{"steps":[{"shell":"ls"},{"final":"done here"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "log.jsonl")
	stderr := newAddrWriter()
	c := &CLI{Stdout: io.Discard, Stderr: stderr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- c.Run(ctx, []string{"model-replay", "--script", script, "--listen", "127.0.0.1:0", "--log", logFile})
	}()
	var line string
	select {
	case line = <-stderr.lines:
	case code := <-done:
		t.Fatalf("model-replay exited %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("model-replay printed no address")
	}
	url, ok := strings.CutPrefix(line, "benchctl model-replay: listening on ")
	if !ok {
		t.Fatalf("got %q, want the address line", line)
	}
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"properties":{"command":{"type":"string"}}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || len(body.Choices) != 1 || len(body.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("got %+v, %v; want one tool call", body, err)
	}
	if got := body.Choices[0].Message.ToolCalls[0].Function; got.Name != "bash" || got.Arguments != `{"command":"ls"}` {
		t.Errorf("got call %+v, want bash ls", got)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit status after cancel: got %d, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("model-replay did not stop")
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1 || !strings.Contains(string(b), `"answer":"tool:bash"`) {
		t.Errorf("log: got %q, want one line answering tool:bash", b)
	}
}

func TestModelReplayErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"steps":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no script", []string{"model-replay"}, "missing --script"},
		{"bad script", []string{"model-replay", "--script", bad}, "no steps"},
		{"missing file", []string{"model-replay", "--script", filepath.Join(dir, "nope.json")}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c := &CLI{Stdout: io.Discard, Stderr: &stderr}
			if code := c.Run(context.Background(), tc.args); code != exitError {
				t.Errorf("exit status: got %d, want %d", code, exitError)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.want)
			}
		})
	}
}

// TestModelReplayJSON: with --json, model-replay prints only JSON on
// stdout: a first line with the address, then the request log's lines,
// and nothing on stderr.
func TestModelReplayJSON(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.json")
	if err := os.WriteFile(script, []byte(`{"steps":[{"final":"done here"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout := newAddrWriter()
	stderr := newAddrWriter()
	c := &CLI{Stdout: stdout, Stderr: stderr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- c.Run(ctx, []string{"--json", "model-replay", "--script", script})
	}()
	var line string
	select {
	case line = <-stdout.lines:
	case code := <-done:
		t.Fatalf("model-replay exited %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("model-replay printed no address")
	}
	var first modelReplayListening
	if err := json.Unmarshal([]byte(line), &first); err != nil {
		t.Fatalf("first line %q is not JSON: %v", line, err)
	}
	if !strings.HasPrefix(first.URL, "http://127.0.0.1:") || first.URL != "http://"+first.Listening || first.Script != script {
		t.Fatalf("got %+v, want the address and the script", first)
	}
	resp, err := http.Post(first.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit status after cancel: got %d, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("model-replay did not stop")
	}
	out := stdout.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got stdout %q, want the address line and one request line", out)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("stdout line %q is not JSON", l)
		}
	}
	if stderr.String() != "" {
		t.Errorf("got stderr %q, want nothing with --json", stderr.String())
	}
}
