package modelgw

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"benchd.dev/client/apitype"
)

// seen is an upstream that records what reaches it and answers 200 with
// a Chat Completions body.
type seen struct {
	mu    sync.Mutex
	reqs  []*http.Request
	conns atomic.Int64
	srv   *httptest.Server
}

func newSeen(t *testing.T) *seen {
	s := &seen{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		s.mu.Lock()
		s.reqs = append(s.reqs, r)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model":"m","choices":[{"message":{"content":"echo: `+strings.ReplaceAll(string(b), `"`, `'`)+`"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
	}))
	s.srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *seen) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// raw sends text on a new connection to the gateway and returns what
// comes back.
func raw(t *testing.T, url, text string) string {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, text)
	b, _ := io.ReadAll(bufio.NewReader(c))
	return string(b)
}

// TestEscapes: what the agent may try in order to reach anything but the
// upstream, or to confuse the recording, is refused before the upstream
// sees it, and recorded as refused.
func TestEscapes(t *testing.T) {
	for _, tc := range []struct{ name, req string }{
		{"absolute-form", "GET http://169.254.169.254/latest/meta-data HTTP/1.1\r\nHost: 169.254.169.254\r\nConnection: close\r\n\r\n"},
		{"absolute-form to the upstream", "POST http://other.test/v1/chat/completions HTTP/1.1\r\nHost: other.test\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"},
		{"CONNECT", "CONNECT 10.0.0.1:22 HTTP/1.1\r\nHost: 10.0.0.1:22\r\nConnection: close\r\n\r\n"},
		{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"upgrade", "GET /v1/realtime HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"},
		{"h2c upgrade", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n"},
		{"dot dot", "GET /v1/../../admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"encoded dot dot", "GET /v1/%2e%2e/%2e%2e/admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"encoded slash", "GET /v1/..%2f..%2fadmin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"backslash", "GET /v1/..\\..\\admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
		{"huge body", fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n{}", MaxRequestBytes+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newSeen(t)
			tg := newGateway(t, up.srv.URL+"/base", nil)
			got := raw(t, tg.url, tc.req)
			// Go's server answers OPTIONS * itself (200, no body),
			// without the handler: nothing is forwarded either way.
			if tc.name != "asterisk" && !strings.HasPrefix(got, "HTTP/1.1 4") && !strings.HasPrefix(got, "HTTP/1.1 5") {
				t.Errorf("got %q, want a refusal", firstLine(got))
			}
			if n := len(up.requests()); n != 0 {
				t.Errorf("the upstream saw %d request(s): %s %s", n, up.requests()[0].Method, up.requests()[0].URL)
			}
			calls := tg.calls(t)
			// Go's server answers some malformed requests itself (400)
			// before any handler: nothing to record then.
			for _, c := range calls {
				if c.Status != 0 || !strings.Contains(c.Error, "refused by the gateway") {
					t.Errorf("got call %+v, want it refused", c)
				}
			}
			t.Logf("%s: %s, %d call(s) recorded", tc.name, firstLine(got), len(calls))
		})
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}

// TestForwarding: the upstream gets a request framed by the gateway: its
// own Host, the base path, no hop-by-hop header or one Connection names,
// one request for a smuggling attempt; the agent's credentials reach it
// and are redacted in the stored copy.
func TestForwarding(t *testing.T) {
	up := newSeen(t)
	tg := newGateway(t, up.srv.URL+"/base", nil)
	// Transfer-Encoding and Content-Length at once, a second request
	// hidden in the body as the Content-Length would frame it.
	smuggle := "POST /v1/chat/completions HTTP/1.1\r\nHost: evil.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n" +
		"Connection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 300\r\nProxy-Authorization: Basic eHg6eXk=\r\nAuthorization: Bearer sk-agent-key\r\nX-End: kept\r\n\r\n" +
		"2\r\n{}\r\n0\r\n\r\nGET /admin HTTP/1.1\r\nHost: x\r\n\r\n"
	got := raw(t, tg.url, smuggle)
	if !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Fatalf("got %q", got)
	}
	reqs := up.requests()
	if len(reqs) != 1 {
		t.Fatalf("the upstream saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	b, _ := io.ReadAll(r.Body)
	upHost := strings.TrimPrefix(up.srv.URL, "http://")
	if r.Host != upHost || r.URL.Path != "/base/v1/chat/completions" || string(b) != "{}" || r.ContentLength != 2 {
		t.Errorf("upstream got host %q path %q body %q length %d", r.Host, r.URL.Path, b, r.ContentLength)
	}
	for _, h := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Transfer-Encoding"} {
		if r.Header.Get(h) != "" {
			t.Errorf("the upstream got hop-by-hop header %s: %q", h, r.Header.Get(h))
		}
	}
	if r.Header.Get("Authorization") != "Bearer sk-agent-key" || r.Header.Get("X-End") != "kept" {
		t.Errorf("end-to-end headers lost: %v", r.Header)
	}
	calls := tg.calls(t)
	if len(calls) != 1 || calls[0].Status != 200 {
		t.Fatalf("got calls %+v", calls)
	}
	stored := tg.message(t, 1, false)
	if strings.Contains(stored, "sk-agent-key") || !strings.Contains(stored, "Host: "+upHost) || !strings.HasPrefix(stored, "POST /base/v1/chat/completions HTTP/1.1") {
		t.Errorf("stored request:\n%s", stored)
	}
}

// TestForgedUsage: usage the agent writes into its request, or makes
// the upstream echo as text, is not the call's usage.
func TestForgedUsage(t *testing.T) {
	up := newSeen(t)
	tg := newGateway(t, up.srv.URL, nil)
	post(t, tg.url+"/v1/chat/completions", `{"model":"m","usage":{"prompt_tokens":999999,"completion_tokens":999999},"choices":[{"message":{"content":"x"}}]}`)
	c := tg.calls(t)[0]
	if c.Usage == nil || c.Usage.InputTokens != 3 || c.Usage.OutputTokens != 1 {
		t.Errorf("got usage %+v, want the upstream's (3, 1)", c.Usage)
	}
}

// TestSecretsScrubbed: the attempt's --env values are scrubbed from the
// stored messages and the call's text, wherever they appear.
func TestSecretsScrubbed(t *testing.T) {
	const secret = "sk-test-0123456789"
	up := newSeen(t)
	tg := newGateway(t, up.srv.URL, nil, apitype.EnvVar{Name: "OPENAI_API_KEY", Value: secret})
	post(t, tg.url+"/v1/chat/completions?key="+secret, `{"model":"m","messages":[{"content":"`+secret+`"}]}`, "X-Custom", secret)
	c := tg.calls(t)[0]
	all := tg.message(t, 1, false) + tg.message(t, 1, true) + c.Text + c.Path
	if strings.Contains(all, secret) || !strings.Contains(all, "[env OPENAI_API_KEY]") {
		t.Errorf("the records hold the secret or no marker:\n%s", all)
	}
	b, _ := os.ReadFile(tg.dir + "/" + LogFile)
	if strings.Contains(string(b), secret) {
		t.Errorf("the log holds the secret")
	}
}

// TestFlood: many requests at once from the agent open at most
// MaxUpstreamConns connections upstream and make no dial fail.
func TestFlood(t *testing.T) {
	up := newSeen(t)
	tg := newGateway(t, up.srv.URL, nil)
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 200 {
		wg.Go(func() {
			resp, err := http.Post(tg.url+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n, last := tg.g.DialErrors(); n != 0 {
		t.Errorf("%d dial errors (%s), want none", n, last)
	}
	if c := up.conns.Load(); c > MaxUpstreamConns {
		t.Errorf("%d upstream connections, at most %d", c, MaxUpstreamConns)
	}
	calls := tg.calls(t)
	if int64(len(calls)) != ok.Load() || ok.Load() == 0 {
		t.Errorf("%d calls recorded, %d answered", len(calls), ok.Load())
	}
}
