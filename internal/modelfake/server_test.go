package modelfake

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const testScript = `{
  "steps": [
    {"shell": "cat src/counter.py"},
    {"edit": {"path": "src/counter.py", "old": "        if nxt > self._capacity:", "new": "        if nxt == self._capacity:"}},
    {"final": "Fixed the wrap-around."}
  ]
}`

func newServer(t *testing.T, script string) (*Server, *httptest.Server, *bytes.Buffer) {
	t.Helper()
	sc, err := ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	s, err := New(Config{Script: sc, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); hs.Close() })
	return s, hs, &log
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// events splits an SSE body into its data payloads, decoded.
func events(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("bad event %q: %v", d, err)
		}
		out = append(out, m)
	}
	return out
}

func args(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("arguments %q: %v", s, err)
	}
	return m
}

// Tool lists as each CLI offers them (trimmed to what matters).
const (
	codexTools = `[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}},"workdir":{"type":"string"}},"required":["command"]}},
	{"type":"custom","name":"apply_patch","format":{"type":"grammar"}}]`
	chatTools = `[{"type":"function","function":{"name":"run_shell_command","parameters":{"type":"object","properties":{"command":{"type":"string"},"is_background":{"type":"boolean"}},"required":["command","is_background"]}}},
	{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"absolute_path":{"type":"string"}},"required":["absolute_path"]}}},
	{"type":"function","function":{"name":"edit","parameters":{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"}},"required":["file_path","old_string","new_string"]}}}]`
	claudeTools = `[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"}},"required":["command"]}},
	{"name":"Read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}},
	{"name":"Edit","input_schema":{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"}},"required":["file_path","old_string","new_string"]}}]`
)

func TestResponses(t *testing.T) {
	_, hs, log := newServer(t, testScript)
	results := []string{"", `{"type":"function_call_output","call_id":"a","output":"x"}`, `{"type":"custom_tool_call_output","call_id":"b","output":"y"}`}
	var input []string
	input = append(input, `{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}`)
	for turn, want := range []string{"function_call", "custom_tool_call", "message"} {
		if turn > 0 {
			input = append(input, results[turn])
		}
		body := `{"model":"m1","stream":true,"tools":` + codexTools + `,"input":[` + strings.Join(input, ",") + `]}`
		code, out := post(t, hs.URL+"/v1/responses", body)
		if code != 200 {
			t.Fatalf("turn %d: status %d: %s", turn, code, out)
		}
		evs := events(t, out)
		last := evs[len(evs)-1]
		if got := last["type"]; got != "response.completed" {
			t.Fatalf("turn %d: last event %v, want response.completed", turn, got)
		}
		var item map[string]any
		for _, e := range evs {
			if e["type"] == "response.output_item.done" {
				item = e["item"].(map[string]any)
			}
		}
		if item == nil || item["type"] != want {
			t.Fatalf("turn %d: got item %v, want type %s", turn, item, want)
		}
		switch want {
		case "function_call":
			a := args(t, item["arguments"].(string))
			cmd, _ := json.Marshal(a["command"])
			if got, want := string(cmd), `["bash","-lc","cat src/counter.py"]`; got != want {
				t.Errorf("shell command: got %s, want %s", got, want)
			}
		case "custom_tool_call":
			in := item["input"].(string)
			for _, l := range []string{"*** Update File: src/counter.py", "-        if nxt > self._capacity:", "+        if nxt == self._capacity:", "*** End Patch"} {
				if !strings.Contains(in, l+"\n") {
					t.Errorf("patch %q lacks line %q", in, l)
				}
			}
		case "message":
			if got := item["content"].([]any)[0].(map[string]any)["text"]; got != "Fixed the wrap-around." {
				t.Errorf("final text: got %v", got)
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("log has %d lines, want 3", len(lines))
	}
	var e Entry
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil {
		t.Fatal(err)
	}
	if e.API != "responses" || e.Turn != 1 || e.Answer != "tool:apply_patch" || e.Model != "m1" || !e.Stream {
		t.Errorf("log entry: got %+v", e)
	}
}

func TestChat(t *testing.T) {
	_, hs, _ := newServer(t, testScript)
	msgs := []string{`{"role":"user","content":"fix it"}`}
	for turn, want := range []string{"run_shell_command", "read_file", "edit", ""} {
		if turn > 0 {
			msgs = append(msgs, `{"role":"assistant","tool_calls":[]}`, `{"role":"tool","tool_call_id":"c","content":"ok"}`)
		}
		body := `{"model":"q","stream":true,"stream_options":{"include_usage":true},"tools":` + chatTools + `,"messages":[` + strings.Join(msgs, ",") + `]}`
		code, out := post(t, hs.URL+"/v1/chat/completions", body)
		if code != 200 {
			t.Fatalf("turn %d: status %d: %s", turn, code, out)
		}
		if !strings.HasSuffix(out, "data: [DONE]\n\n") {
			t.Errorf("turn %d: stream does not end with [DONE]", turn)
		}
		var name, argText, text, finish string
		usage := false
		for _, e := range events(t, out) {
			if e["usage"] != nil {
				usage = true
			}
			for _, c := range e["choices"].([]any) {
				ch := c.(map[string]any)
				if f, ok := ch["finish_reason"].(string); ok {
					finish = f
				}
				d := ch["delta"].(map[string]any)
				if s, ok := d["content"].(string); ok {
					text += s
				}
				for _, tc := range anySlice(d["tool_calls"]) {
					fn := tc.(map[string]any)["function"].(map[string]any)
					if n, ok := fn["name"].(string); ok {
						name = n
					}
					argText += fn["arguments"].(string)
				}
			}
		}
		if !usage {
			t.Errorf("turn %d: no usage chunk", turn)
		}
		if name != want {
			t.Fatalf("turn %d: got tool %q, want %q", turn, name, want)
		}
		switch turn {
		case 0:
			a := args(t, argText)
			if a["command"] != "cat src/counter.py" || a["is_background"] != false {
				t.Errorf("shell args: got %v", a)
			}
		case 1:
			if a := args(t, argText); a["absolute_path"] != "/workspace/src/counter.py" {
				t.Errorf("read args: got %v", a)
			}
		case 2:
			a := args(t, argText)
			if a["file_path"] != "/workspace/src/counter.py" || a["new_string"] != "        if nxt == self._capacity:" {
				t.Errorf("edit args: got %v", a)
			}
		case 3:
			if text != "Fixed the wrap-around." || finish != "stop" {
				t.Errorf("final: got %q finish %q", text, finish)
			}
		}
	}
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestMessages(t *testing.T) {
	_, hs, _ := newServer(t, testScript)
	msgs := []string{`{"role":"user","content":"fix it"}`}
	// Claude's Edit is preceded by a Read of the same file.
	for turn, want := range []string{"Bash", "Read", "Edit", ""} {
		if turn > 0 {
			msgs = append(msgs, `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}}]}`,
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}`)
		}
		body := `{"model":"claude-x","stream":true,"max_tokens":100,"tools":` + claudeTools + `,"messages":[` + strings.Join(msgs, ",") + `]}`
		code, out := post(t, hs.URL+"/v1/messages?beta=true", body)
		if code != 200 {
			t.Fatalf("turn %d: status %d: %s", turn, code, out)
		}
		evs := events(t, out)
		if got := evs[len(evs)-1]["type"]; got != "message_stop" {
			t.Fatalf("turn %d: last event %v, want message_stop", turn, got)
		}
		start := evs[1]["content_block"].(map[string]any)
		delta := evs[2]["delta"].(map[string]any)
		stop := evs[4]["delta"].(map[string]any)["stop_reason"]
		if want == "" {
			if start["type"] != "text" || delta["text"] != "Fixed the wrap-around." || stop != "end_turn" {
				t.Errorf("final: got %v %v %v", start, delta, stop)
			}
			continue
		}
		if start["type"] != "tool_use" || start["name"] != want || stop != "tool_use" {
			t.Fatalf("turn %d: got block %v stop %v, want tool_use %s", turn, start, stop, want)
		}
		a := args(t, delta["partial_json"].(string))
		if want != "Bash" && a["file_path"] != "/workspace/src/counter.py" {
			t.Errorf("turn %d: file_path: got %v", turn, a["file_path"])
		}
	}
}

func TestNoToolsGetsText(t *testing.T) {
	_, hs, _ := newServer(t, testScript)
	code, out := post(t, hs.URL+"/v1/messages", `{"model":"h","max_tokens":5,"messages":[{"role":"user","content":"title?"}]}`)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if got := m["content"].([]any)[0].(map[string]any)["text"]; got != "Fixed the wrap-around." {
		t.Errorf("got %v, want the final text", got)
	}
}

func TestShellFallbackEdit(t *testing.T) {
	sc, err := ParseScript([]byte(testScript))
	if err != nil {
		t.Fatal(err)
	}
	tools := []Tool{{Name: "bash", Kind: "function", Schema: map[string]any{"properties": map[string]any{"command": map[string]any{"type": "string"}}}}}
	acts, err := sc.plan(tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 3 {
		t.Fatalf("got %d actions, want 3", len(acts))
	}
	cmd := acts[1].call.Args["command"].(string)
	if !strings.HasPrefix(cmd, "'/usr/bin/python3' '-c' ") || !strings.Contains(cmd, "'/workspace/src/counter.py'") {
		t.Errorf("fallback edit: got %q", cmd)
	}
}

func TestEditVia(t *testing.T) {
	claude := []Tool{
		{Name: "Bash", Kind: "function", Schema: map[string]any{"properties": map[string]any{"command": map[string]any{"type": "string"}}}},
		{Name: "Read", Kind: "function", Schema: map[string]any{"properties": map[string]any{"file_path": map[string]any{"type": "string"}}}},
		{Name: "Edit", Kind: "function", Schema: map[string]any{"properties": map[string]any{"file_path": map[string]any{}, "old_string": map[string]any{}, "new_string": map[string]any{}}}},
	}
	shellOnly := claude[:1]
	for _, tc := range []struct {
		name, via string
		tools     []Tool
		want      []string // tool names of the edit's calls
		err       bool
	}{
		{"auto with an editing tool", "", claude, []string{"Read", "Edit"}, false},
		{"auto without", "", shellOnly, []string{"Bash"}, false},
		{"shell", "shell", claude, []string{"Bash"}, false},
		{"tool", "tool", claude, []string{"Read", "Edit"}, false},
		{"tool without one", "tool", shellOnly, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &Script{Workdir: "/w"}
			calls, err := sc.editCalls(tc.tools, Edit{Path: "a", Old: "x", New: "y", Via: tc.via})
			if (err != nil) != tc.err {
				t.Fatalf("got error %v, want error %v", err, tc.err)
			}
			var got []string
			for _, c := range calls {
				got = append(got, c.Tool.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got calls %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHang(t *testing.T) {
	s, hs, log := newServer(t, `{"hang": true}`)
	done := make(chan error, 1)
	go func() {
		resp, err := http.Post(hs.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","stream":true,"input":[]}`))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a hanging script answered (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	s.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the request")
	}
	if !strings.Contains(log.String(), `"answer":"hang"`) {
		t.Errorf("log %q lacks the hang entry", log.String())
	}
}

func TestParseScript(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"empty", `{}`},
		{"two fields", `{"steps":[{"shell":"ls","final":"x"}]}`},
		{"final not last", `{"steps":[{"final":"x"},{"shell":"ls"}]}`},
		{"absolute edit", `{"steps":[{"edit":{"path":"/etc/passwd","old":"a","new":"b"}}]}`},
		{"no-op edit", `{"steps":[{"edit":{"path":"a","old":"a","new":"a"}}]}`},
		{"unknown field", `{"steps":[{"shell":"ls"}],"mode":"x"}`},
		{"relative workdir", `{"workdir":"w","steps":[{"shell":"ls"}]}`},
		{"bad via", `{"steps":[{"edit":{"path":"a","old":"a","new":"b","via":"x"}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScript([]byte(tc.script))
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestUnknownEndpoint(t *testing.T) {
	_, hs, _ := newServer(t, testScript)
	code, _ := post(t, hs.URL+"/v1/embeddings", `{}`)
	if code != http.StatusNotFound {
		t.Errorf("got status %d, want 404", code)
	}
}
