package modelgw

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/modelfake"
)

const fixScript = `{"steps": [{"shell": "cat src/counter.py"}, {"final": "Fixed it."}]}`

// upstream serves the scripted model server; tls makes it an HTTPS one
// with its own root.
func upstream(t *testing.T, script string, useTLS bool) *httptest.Server {
	t.Helper()
	sc, err := modelfake.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	s, err := modelfake.New(modelfake.Config{Script: sc})
	if err != nil {
		t.Fatal(err)
	}
	var hs *httptest.Server
	if useTLS {
		hs = httptest.NewTLSServer(s)
	} else {
		hs = httptest.NewServer(s)
	}
	t.Cleanup(func() { s.Close(); hs.Close() })
	return hs
}

// gateway is a Gateway to the server at base (with path, if any),
// served on loopback as the namespace would serve it, its recorder in a
// temp dir.
type testGateway struct {
	g   *Gateway
	rec *Recorder
	dir string
	url string // the agent's base URL
	srv *httptest.Server
}

func newGateway(t *testing.T, base string, root *httptest.Server, secrets ...apitype.EnvVar) *testGateway {
	t.Helper()
	up, err := ParseUpstream("model=" + base)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec, err := NewRecorder(RecorderConfig{Dir: dir, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Upstream: up, Recorder: rec}
	if root != nil {
		cfg.RootCAs = root.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	tg := &testGateway{g: g, rec: rec, dir: dir, url: srv.URL, srv: srv}
	t.Cleanup(tg.close)
	return tg
}

func (tg *testGateway) close() {
	tg.srv.Close()
	tg.g.Close()
	tg.rec.Close()
}

// calls closes the gateway and reads its log.
func (tg *testGateway) calls(t *testing.T) []apitype.ModelCall {
	t.Helper()
	tg.close()
	calls, err := ReadLog(tg.dir)
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

func (tg *testGateway) message(t *testing.T, seq int, response bool) string {
	t.Helper()
	b, err := os.ReadFile(MessagePath(tg.dir, seq, response))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requests are a first turn of each API, streaming or not, with the
// tools the script's shell step needs.
func request(api string, stream bool) (path, body string) {
	switch api {
	case apitype.ModelAPIResponses:
		return "/v1/responses", fmt.Sprintf(`{"model":"m-resp","stream":%v,"input":[{"role":"user","content":"go"}],
			"tools":[{"type":"function","name":"shell","parameters":{"type":"object","properties":{"command":{"type":"array"}}}}]}`, stream)
	case apitype.ModelAPIChat:
		return "/v1/chat/completions", fmt.Sprintf(`{"model":"m-chat","stream":%v,"stream_options":{"include_usage":true},
			"messages":[{"role":"user","content":"go"}],
			"tools":[{"type":"function","function":{"name":"run_shell_command","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]}`, stream)
	default:
		return "/v1/messages", fmt.Sprintf(`{"model":"m-msg","stream":%v,"max_tokens":100,"messages":[{"role":"user","content":"go"}],
			"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]}`, stream)
	}
}

func post(t *testing.T, url, body string, h ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
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

// TestProxyRecords: each API, streaming and not, over HTTP and HTTPS:
// the agent gets the upstream's answer, and the call is recorded with
// its model, usage, tool call and stored messages.
func TestProxyRecords(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		for _, api := range []string{apitype.ModelAPIResponses, apitype.ModelAPIChat, apitype.ModelAPIMessages} {
			for _, stream := range []bool{false, true} {
				name := fmt.Sprintf("%s/stream=%v/tls=%v", api, stream, useTLS)
				t.Run(name, func(t *testing.T) {
					up := upstream(t, fixScript, useTLS)
					var root *httptest.Server
					if useTLS {
						root = up
					}
					tg := newGateway(t, up.URL, root)
					path, body := request(api, stream)
					code, got := post(t, tg.url+path, body, "Authorization", "Bearer sk-secret-value", "X-Api-Key", "sk-other")
					if code != 200 || !strings.Contains(got, "cat src/counter.py") {
						t.Fatalf("got %d %q, want 200 with the tool call", code, got)
					}
					calls := tg.calls(t)
					if len(calls) != 1 {
						t.Fatalf("got %d calls, want 1", len(calls))
					}
					c := calls[0]
					if c.Seq != 1 || c.API != api || c.Stream != stream || c.Status != 200 || c.Error != "" || c.Method != "POST" || c.Path != path {
						t.Errorf("got call %+v", c)
					}
					if c.Usage == nil || c.Usage.InputTokens == 0 || c.Usage.OutputTokens != 10 {
						t.Errorf("got usage %+v, want the server's (output 10)", c.Usage)
					}
					if len(c.ToolCalls) != 1 || !strings.Contains(c.ToolCalls[0].Arguments, "cat src/counter.py") {
						t.Errorf("got tool calls %+v", c.ToolCalls)
					}
					if c.Model == "" || c.RequestBytes != int64(len(body)) || c.ResponseBytes != int64(len(got)) {
						t.Errorf("got model %q, sizes %d %d, want %d %d", c.Model, c.RequestBytes, c.ResponseBytes, len(body), len(got))
					}
					req := tg.message(t, 1, false)
					for _, bad := range []string{"sk-secret-value", "sk-other"} {
						if strings.Contains(req, bad) {
							t.Errorf("the stored request holds %s:\n%s", bad, req)
						}
					}
					if !strings.HasPrefix(req, "POST "+path+" HTTP/1.1\r\n") || !strings.Contains(req, "Authorization: [redacted]") || !strings.HasSuffix(req, body) {
						t.Errorf("stored request:\n%s", req)
					}
					resp := tg.message(t, 1, true)
					if !strings.HasPrefix(resp, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(resp, got) {
						t.Errorf("stored response:\n%s", resp)
					}
					if sha := sha256Hex(resp); sha != c.ResponseSHA256 {
						t.Errorf("response hash %s, the call says %s", sha, c.ResponseSHA256)
					}
				})
			}
		}
	}
}

// TestStreamIncremental: each event reaches the agent while the
// upstream still holds the rest back.
func TestStreamIncremental(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"first\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	tg := newGateway(t, up.URL, nil)
	resp, err := http.Post(tg.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(line, "first") {
		t.Fatalf("got %q, %v before the upstream went on, want the first event", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("got %q, want the rest", rest)
	}
	c := tg.calls(t)[0]
	if c.Text != "first" || c.Usage == nil || c.Usage.InputTokens != 5 || c.Usage.OutputTokens != 2 {
		t.Errorf("got %+v", c)
	}
}

// TestUpstreamDiesMidStream: the agent's response ends without its end
// (a read error, not a clean end), and the call says why.
func TestUpstreamDiesMidStream(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"half\"}}]}\n\n")
		w.(http.Flusher).Flush()
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer up.Close()
	tg := newGateway(t, up.URL, nil)
	resp, err := http.Post(tg.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Errorf("the agent read a whole response from a cut stream")
	}
	c := tg.calls(t)[0]
	if !strings.Contains(c.Error, "cut the response short") || c.Status != 200 || c.Text != "half" {
		t.Errorf("got %+v", c)
	}
	if n, _ := tg.g.DialErrors(); n != 0 {
		t.Errorf("got %d dial errors, want none", n)
	}
}

// TestAgentDisconnects: an agent that goes away mid-stream ends the
// upstream request, and the call says so.
func TestAgentDisconnects(t *testing.T) {
	gone := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	defer up.Close()
	tg := newGateway(t, up.URL, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(tg.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	bufio.NewReader(c).ReadString('{')
	c.Close()
	<-gone
	call := tg.calls(t)[0]
	if !strings.Contains(call.Error, "agent went away") {
		t.Errorf("got %+v", call)
	}
}

// TestDialError: an upstream that does not listen is a dial error and
// a call without a response; Probe names it.
func TestDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tg := newGateway(t, "http://"+addr, nil)
	if err := Probe(context.Background(), []Upstream{tg.g.Upstream()}, tg.g.tls.RootCAs, 5*time.Second); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("probe: got %v", err)
	}
	code, _ := post(t, tg.url+"/v1/responses", `{}`)
	if code != http.StatusBadGateway {
		t.Errorf("got %d, want 502", code)
	}
	if n, last := tg.g.DialErrors(); n != 1 || last == "" {
		t.Errorf("got %d dial errors (%q), want 1", n, last)
	}
	c := tg.calls(t)[0]
	if c.Status != 0 || c.Error == "" || c.ResponseSHA256 != emptySHA256 {
		t.Errorf("got %+v", c)
	}
}

// TestTLSUnknownRoot: an https upstream whose certificate the roots do
// not verify is not reached (a dial error), and Probe says so.
func TestTLSUnknownRoot(t *testing.T) {
	up := upstream(t, fixScript, true)
	tg := newGateway(t, up.URL, nil) // the host's roots
	if err := Probe(context.Background(), []Upstream{tg.g.Upstream()}, tg.g.tls.RootCAs, 5*time.Second); err == nil {
		t.Errorf("probe of an unverifiable upstream succeeded")
	}
	if code, _ := post(t, tg.url+"/v1/responses", `{}`); code != http.StatusBadGateway {
		t.Errorf("got %d, want 502", code)
	}
	if n, _ := tg.g.DialErrors(); n != 1 {
		t.Errorf("got %d dial errors, want 1", n)
	}
}

// TestCaps: a message past the cap is stored cut, the call marked
// Truncated, its sizes and usage those of the whole.
func TestCaps(t *testing.T) {
	up := upstream(t, fixScript, false)
	up2, _ := ParseUpstream("model=" + up.URL)
	dir := t.TempDir()
	rec, err := NewRecorder(RecorderConfig{Dir: dir, MaxMessageBytes: 300, MaxStoredBytes: 500})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := New(Config{Upstream: up2, Recorder: rec})
	srv := httptest.NewServer(g)
	path, body := request(apitype.ModelAPIMessages, true)
	for range 2 {
		post(t, srv.URL+path, body)
	}
	srv.Close()
	g.Close()
	rec.Close()
	calls, _ := ReadLog(dir)
	var total int
	for _, c := range calls {
		if !c.Truncated || c.Usage == nil || c.Usage.OutputTokens != 10 {
			t.Errorf("got %+v, want truncated with its usage", c)
		}
		for _, resp := range []bool{false, true} {
			b, _ := os.ReadFile(MessagePath(dir, c.Seq, resp))
			if len(b) > 300 {
				t.Errorf("a stored message of %d bytes, cap 300", len(b))
			}
			total += len(b)
		}
	}
	if total > 500 {
		t.Errorf("stored %d bytes, cap 500", total)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
