package modelgw

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

// TestParse reads each fixture (a response of each API, whole and
// streamed, cut short, without usage, and error bodies) whole and, for
// streams, in every split into two writes, and checks what it says.
func TestParse(t *testing.T) {
	tu := func(in, cached, write, out, reasoning int64) *apitype.TokenUsage {
		return &apitype.TokenUsage{InputTokens: in, CachedInputTokens: cached, CacheWriteTokens: write, OutputTokens: out, ReasoningTokens: reasoning}
	}
	for _, tc := range []struct {
		file, api string
		model     string
		usage     *apitype.TokenUsage
		tools     []string // name:arguments
		text      string
	}{
		{"responses.json", apitype.ModelAPIResponses, "gpt-5-codex-2026-01-01", tu(1200, 1000, 0, 300, 200),
			[]string{`shell:{"command":["cat","a.py"]}`, "apply_patch:*** Begin Patch"}, "Reading the file."},
		{"responses.sse", apitype.ModelAPIResponses, "gpt-5-codex", tu(50, 0, 0, 7, 0),
			[]string{`local_shell:{"command":["ls","-l"]}`}, `Hello, "usage": {"input_tokens": 99999}`},
		{"responses_cut.sse", apitype.ModelAPIResponses, "gpt-5", nil, []string{"shell:{}"}, "partial"},
		{"chat.json", apitype.ModelAPIChat, "qwen3-coder-plus", tu(900, 512, 0, 40, 0),
			[]string{`run_shell_command:{"command":"ls"}`, `read_file:{"absolute_path":"/workspace/a.py"}`}, ""},
		{"chat_crlf.sse", apitype.ModelAPIChat, "qwen3-coder-plus", tu(300, 0, 0, 12, 0), []string{`edit:{"file_path":"a.py"}`}, "Done"},
		{"chat_nousage.sse", apitype.ModelAPIChat, "m", nil, nil, "hi"},
		{"messages.json", apitype.ModelAPIMessages, "claude-sonnet-4-5-20260101", tu(4020, 3000, 1000, 55, 0),
			[]string{`Bash:{"command":"cat a.py"}`}, "I will look."},
		{"messages.sse", apitype.ModelAPIMessages, "claude-sonnet-4-5", tu(2015, 2000, 0, 42, 0),
			[]string{`Edit:{"file_path": "a.py", "old_string": "x"}`}, "Editing."},
		{"messages_error.sse", apitype.ModelAPIMessages, "claude-x", tu(10, 0, 0, 1, 0), nil, ""},
		{"error_openai.json", apitype.ModelAPIChat, "", nil, nil, ""},
		{"error_openai.json", apitype.ModelAPIResponses, "", nil, nil, ""},
		{"error_anthropic.json", apitype.ModelAPIMessages, "", nil, nil, ""},
	} {
		t.Run(tc.file+"/"+tc.api, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			check := func(how string, r *reply) {
				t.Helper()
				var tools []string
				for _, tc := range r.tools {
					tools = append(tools, tc.Name+":"+tc.Arguments)
				}
				if r.model != tc.model || !reflect.DeepEqual(r.usage, tc.usage) || !reflect.DeepEqual(tools, tc.tools) || r.text.String() != tc.text {
					t.Errorf("%s: got model %q usage %+v tools %q text %q\nwant model %q usage %+v tools %q text %q",
						how, r.model, r.usage, tools, r.text.String(), tc.model, tc.usage, tc.tools, tc.text)
				}
			}
			if !strings.HasSuffix(tc.file, ".sse") {
				check("whole", parseBody(tc.api, b))
				return
			}
			for i := 0; i <= len(b); i += max(1, len(b)/97) {
				p := newStreamParser(tc.api)
				p.Write(b[:i])
				p.Write(b[i:])
				check("split at "+string(rune('0'+i%10)), p.result())
				if t.Failed() {
					return
				}
			}
		})
	}
}

// TestParseCaps: the text and a tool call's arguments are kept to
// MaxModelText bytes, cut at a rune boundary.
func TestParseCaps(t *testing.T) {
	long := strings.Repeat("é", apitype.MaxModelText)
	r := parseBody(apitype.ModelAPIChat, []byte(`{"choices":[{"message":{"content":"`+long+`","tool_calls":[{"function":{"name":"x","arguments":"`+long+`"}}]}}]}`))
	if n := r.text.Len(); n > apitype.MaxModelText || n < apitype.MaxModelText-1 || !strings.HasPrefix(long, r.text.String()) {
		t.Errorf("text of %d bytes, cap %d", n, apitype.MaxModelText)
	}
	if a := r.tools[0].Arguments; len(a) > apitype.MaxModelText || !strings.HasPrefix(long, a) {
		t.Errorf("arguments of %d bytes", len(a))
	}
}

// TestAPIOf: the API is the path's, for POST only.
func TestAPIOf(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/v1/responses", apitype.ModelAPIResponses},
		{"POST", "/api/v1/chat/completions/", apitype.ModelAPIChat},
		{"POST", "/v1/messages", apitype.ModelAPIMessages},
		{"POST", "/v1/messages/count_tokens", apitype.ModelAPIOther},
		{"GET", "/v1/responses", apitype.ModelAPIOther},
		{"GET", "/v1/models", apitype.ModelAPIOther},
	} {
		if got := apiOf(tc.method, tc.path); got != tc.want {
			t.Errorf("%s %s: got %s, want %s", tc.method, tc.path, got, tc.want)
		}
	}
}
