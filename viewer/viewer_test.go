package viewer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client"
	"benchd.dev/client/apitype"
)

// fakeBenchd answers every request on a unix socket with what it was
// asked, and records it: what the viewer passes on, and nothing else.
type fakeBenchd struct {
	socket string

	mu   sync.Mutex
	seen []string
}

func newFakeBenchd(t *testing.T) *fakeBenchd {
	t.Helper()
	f := &fakeBenchd{socket: filepath.Join(t.TempDir(), "b.sock")}
	l, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.RequestURI()+" cookie="+r.Header.Get("Cookie"))
		f.mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/missing"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			io.WriteString(w, `{"code":"not_found","message":"no attempt missing"}`)
		case strings.Contains(r.URL.Path, "/blobs/"):
			w.Header().Set("Content-Type", "text/html") // what benchd never sends: the viewer must not pass it on
			io.WriteString(w, "<script>alert(1)</script>")
		case strings.HasSuffix(r.URL.Path, "/request"):
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "POST /v1/responses HTTP/1.1\r\n\r\n{}")
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"path":%q}`, r.URL.RequestURI())
		}
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func (f *fakeBenchd) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// serve starts a viewer on the fake and returns it and its base URL.
func serve(t *testing.T, f *fakeBenchd, views map[string]View) (*Server, string) {
	t.Helper()
	s, err := New(Config{API: &client.Client{Socket: f.socket}, Views: views})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, "http://" + s.Addr()
}

// do sends one request with the cookie given, if any, and returns the
// response with its body read.
func do(t *testing.T, method, u string, cookie *http.Cookie, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	c := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// session trades s's token for its cookie.
func session(t *testing.T, s *Server) *http.Cookie {
	t.Helper()
	resp, body := do(t, "GET", s.URL(), nil, nil)
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 {
		t.Fatalf("the token: got %s, cookies %v, %q; want 200 and the session cookie", resp.Status, resp.Cookies(), body)
	}
	return resp.Cookies()[0]
}

func TestListenLoopbackOnly(t *testing.T) {
	f := newFakeBenchd(t)
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "localhost:0", "192.0.2.1:0", "example.com:80"} {
		_, err := New(Config{Listen: addr, API: &client.Client{Socket: f.socket}})
		if !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Listen %q: got %v, want ErrNotLoopback", addr, err)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:0", "127.0.0.2:0"} {
		s, err := New(Config{Listen: addr, API: &client.Client{Socket: f.socket}})
		if err != nil {
			t.Errorf("Listen %q: %v", addr, err)
			continue
		}
		if h, _, _ := net.SplitHostPort(s.Addr()); !net.ParseIP(h).IsLoopback() {
			t.Errorf("Listen %q: got address %s", addr, s.Addr())
		}
		s.ln.Close()
	}
}

// TestTokenOnce: the token gives one session cookie, HttpOnly and
// SameSite=Strict, and works once; every request needs the cookie; the
// browser that has it may open the link again.
func TestTokenOnce(t *testing.T) {
	f := newFakeBenchd(t)
	s, base := serve(t, f, nil)
	u, _ := url.Parse(s.URL())
	token := u.Query().Get("token")
	if len(token) != 64 {
		t.Fatalf("got token %q, want 64 hex digits", token)
	}

	if resp, _ := do(t, "GET", base+"/", nil, nil); resp.StatusCode != 403 {
		t.Errorf("the page without a session: got %s, want 403", resp.Status)
	}
	if resp, _ := do(t, "GET", base+"/?token="+strings.Repeat("0", 64), nil, nil); resp.StatusCode != 403 || len(resp.Cookies()) != 0 {
		t.Errorf("a wrong token: got %s and cookies %v, want 403 and none", resp.Status, resp.Cookies())
	}
	if resp, _ := do(t, "HEAD", s.URL(), nil, nil); len(resp.Cookies()) != 0 {
		t.Errorf("HEAD with the token: got cookies %v, want none (a link preview must not spend the token)", resp.Cookies())
	}

	resp, body := do(t, "GET", s.URL(), nil, nil)
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 {
		t.Fatalf("the token: got %s, cookies %v", resp.Status, resp.Cookies())
	}
	c := resp.Cookies()[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || len(c.Value) != 64 || c.Value == token || !strings.HasSuffix(c.Name, u.Port()) {
		t.Errorf("got cookie %+v, want HttpOnly, SameSite=Strict, path /, a value of its own, named after the port", c)
	}
	if !strings.Contains(body, `http-equiv="refresh" content="0; url=/"`) || !strings.Contains(body, `<script src="/continue.js"></script>`) {
		t.Errorf("got %q, want a page that goes on to / (with the link's route, by continue.js)", body)
	}
	// continue.js is static and needs no session: the exchange's page
	// loads it before the cookie is known to stick.
	if resp, body := do(t, "GET", base+"/continue.js", nil, nil); resp.StatusCode != 200 || !strings.Contains(body, "location.replace") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("continue.js without a session: got %s %q", resp.Status, body)
	}

	if resp, _ := do(t, "GET", s.URL(), nil, nil); resp.StatusCode != 403 || len(resp.Cookies()) != 0 {
		t.Errorf("the token again: got %s and cookies %v, want 403 and none", resp.Status, resp.Cookies())
	}
	if resp, _ := do(t, "GET", s.URL(), c, nil); resp.StatusCode != 200 || len(resp.Cookies()) != 0 {
		t.Errorf("the link again with the session: got %s, cookies %v; want 200 and no new cookie", resp.Status, resp.Cookies())
	}
	if resp, body := do(t, "GET", base+"/", c, nil); resp.StatusCode != 200 || !strings.Contains(body, `<script src="/app.js"`) {
		t.Errorf("the page with the session: got %s %q", resp.Status, body)
	}
	forged := *c
	forged.Value = strings.Repeat("a", 64)
	for _, p := range []string{"/", "/app.js", "/api/v1/status", "/view/x"} {
		if resp, _ := do(t, "GET", base+p, &forged, nil); resp.StatusCode != 403 {
			t.Errorf("%s with a forged cookie: got %s, want 403", p, resp.Status)
		}
	}
	if got := f.requests(); len(got) != 0 {
		t.Errorf("benchd got %q before any session asked, want nothing", got)
	}
}

// TestRefusals: what is refused, before benchd hears of it.
func TestRefusals(t *testing.T) {
	f := newFakeBenchd(t)
	views := map[string]View{"echo": func(ctx context.Context, q url.Values) (any, error) { return q, nil }}
	s, base := serve(t, f, views)
	c := session(t, s)
	_, port, _ := net.SplitHostPort(s.Addr())
	tests := []struct {
		name, method, path string
		hdr                map[string]string
		status             int
	}{
		{"POST", "POST", "/api/v1/attempts/a-1/cancel", nil, 405},
		{"POST of a read", "POST", "/api/v1/attempts", nil, 405},
		{"PUT", "PUT", "/api/v1/status", nil, 405},
		{"DELETE", "DELETE", "/", nil, 405},
		{"OPTIONS", "OPTIONS", "/api/v1/status", nil, 405},
		{"cancel", "GET", "/api/v1/attempts/a-1/cancel", nil, 404},
		{"review", "GET", "/api/v1/attempts/a-1/review", nil, 404},
		{"regrade", "GET", "/api/v1/attempts/a-1/regrade", nil, 404},
		{"export", "GET", "/api/v1/attempts/a-1/export", nil, 404},
		{"events", "GET", "/api/v1/attempts/a-1/events", nil, 404},
		{"prune", "GET", "/api/v1/prune", nil, 404},
		{"key", "GET", "/api/v1/key", nil, 404},
		{"runs", "GET", "/api/v1/runs", nil, 404},
		{"retry", "GET", "/api/v1/runs/r-1/retry", nil, 404},
		{"check", "GET", "/api/v1/tasks/check", nil, 404},
		{"another version", "GET", "/api/v2/status", nil, 404},
		{"benchd's own path", "GET", "/v1/status", nil, 404},
		{"dot segments", "GET", "/api/v1/attempts/../status", nil, 307}, // to the clean path, checked again there
		{"an escaped slash", "GET", "/api/v1/attempts/a%2F..%2Fstatus", nil, 400},
		{"a long id", "GET", "/api/v1/attempts/" + strings.Repeat("a", 129), nil, 400},
		{"a bad sha", "GET", "/api/v1/attempts/a-1/blobs/" + strings.Repeat("G", 64), nil, 400},
		{"a bad seq", "GET", "/api/v1/attempts/a-1/model/0/request", nil, 400},
		{"another part", "GET", "/api/v1/attempts/a-1/model/1/headers", nil, 404},
		{"a query not listed", "GET", "/api/v1/attempts?order=random", nil, 400},
		{"a query where none goes", "GET", "/api/v1/status?x=1", nil, 400},
		{"no such view", "GET", "/view/nothing", nil, 404},
		{"no such file", "GET", "/etc/passwd", nil, 404},
		{"a rebound name", "GET", "/api/v1/status", map[string]string{"Host": "attacker.example:" + port}, 421},
		{"another port", "GET", "/api/v1/status", map[string]string{"Host": "127.0.0.1:1"}, 421},
		{"another site's fetch", "GET", "/api/v1/status", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"another port's fetch", "GET", "/view/echo", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, tt.method, base+tt.path, c, tt.hdr)
			if resp.StatusCode != tt.status {
				t.Errorf("got %s %q, want %d", resp.Status, body, tt.status)
			}
		})
	}
	if got := f.requests(); len(got) != 0 {
		t.Errorf("benchd got %q, want nothing of what was refused", got)
	}
	// localhost:PORT is the same listener's name.
	if resp, _ := do(t, "GET", base+"/api/v1/status", c, map[string]string{"Host": "localhost:" + port}); resp.StatusCode != 200 {
		t.Errorf("Host localhost:%s: got %s, want 200", port, resp.Status)
	}
	if resp, _ := do(t, "GET", base+"/api/v1/status", c, map[string]string{"Sec-Fetch-Site": "same-origin"}); resp.StatusCode != 200 {
		t.Errorf("the page's own fetch: got %s, want 200", resp.Status)
	}
}

// TestForward: each endpoint of Forwarded reaches benchd as benchd's
// path, its values escaped and its query as given, without the cookie;
// the answer comes back with the data's headers.
func TestForward(t *testing.T) {
	f := newFakeBenchd(t)
	s, base := serve(t, f, nil)
	c := session(t, s)
	sha := strings.Repeat("ab", 32)
	tests := []struct{ path, want string }{
		{"/api/v1/status", "/v1/status"},
		{"/api/v1/tasks", "/v1/tasks"},
		{"/api/v1/runs/r-1", "/v1/runs/r-1"},
		{"/api/v1/runs/r-1/status", "/v1/runs/r-1/status"},
		{"/api/v1/attempts?agent=%3Cb%3E&task=rt-01&task=rt-02&limit=5", "/v1/attempts?agent=%3Cb%3E&limit=5&task=rt-01&task=rt-02"},
		{"/api/v1/attempts/latest", "/v1/attempts/latest"},
		{"/api/v1/attempts/a-1/journal", "/v1/attempts/a-1/journal"},
		{"/api/v1/attempts/a-1/blobs/" + sha, "/v1/attempts/a-1/blobs/" + sha},
		{"/api/v1/attempts/a-1/transcript", "/v1/attempts/a-1/transcript"},
		{"/api/v1/attempts/a-1/model", "/v1/attempts/a-1/model"},
		{"/api/v1/attempts/a-1/model/12/request", "/v1/attempts/a-1/model/12/request"},
		{"/api/v1/attempts/a-1/model/3/response", "/v1/attempts/a-1/model/3/response"},
	}
	if len(tests) != len(Forwarded) {
		t.Fatalf("the test has %d endpoints, Forwarded %d", len(tests), len(Forwarded))
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			n := len(f.requests())
			resp, body := do(t, "GET", base+tt.path, c, map[string]string{"Sec-Fetch-Site": "same-origin"})
			if resp.StatusCode != 200 {
				t.Fatalf("got %s %q", resp.Status, body)
			}
			got := f.requests()[n:]
			if want := "GET " + tt.want + " cookie="; len(got) != 1 || got[0] != want {
				t.Errorf("benchd got %q, want %q", got, want)
			}
			h := resp.Header
			if csp := h.Get("Content-Security-Policy"); csp != dataCSP {
				t.Errorf("got CSP %q, want %q", csp, dataCSP)
			}
			for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"} {
				if h.Get(k) != v {
					t.Errorf("got %s %q, want %q", k, h.Get(k), v)
				}
			}
			if strings.Contains(tt.path, "/blobs/") {
				if h.Get("Content-Type") != "application/octet-stream" || h.Get("Content-Disposition") != "attachment" {
					t.Errorf("a blob benchd sent as text/html: got %s, %s; want bytes, an attachment", h.Get("Content-Type"), h.Get("Content-Disposition"))
				}
			}
		})
	}
	// benchd's errors come back as they were.
	resp, body := do(t, "GET", base+"/api/v1/attempts/missing", c, nil)
	var e apitype.Error
	json.Unmarshal([]byte(body), &e)
	if resp.StatusCode != 404 || e.Code != apitype.CodeNotFound || e.Message != "no attempt missing" {
		t.Errorf("an error of benchd: got %s %q", resp.Status, body)
	}
}

// TestPageHeaders: the page's files carry its policy: scripts, styles
// and fetches from itself only, no inline script, Trusted Types.
func TestPageHeaders(t *testing.T) {
	f := newFakeBenchd(t)
	s, base := serve(t, f, nil)
	c := session(t, s)
	for path, typ := range map[string]string{"/": "text/html", "/app.js": "text/javascript", "/app.css": "text/css", "/continue.js": "text/javascript"} {
		resp, body := do(t, "GET", base+path, c, nil)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), typ) || len(body) == 0 {
			t.Errorf("%s: got %s %s", path, resp.Status, resp.Header.Get("Content-Type"))
		}
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "require-trusted-types-for 'script'", "trusted-types 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: got CSP %q, want %q in it", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "http:") || strings.Contains(csp, "*") {
			t.Errorf("%s: got CSP %q, want nothing from elsewhere and nothing inline", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: got headers %v", path, resp.Header)
		}
	}
	// The page itself: no inline script or style, nothing from elsewhere.
	for _, name := range []string{"page/index.html", "page/app.js", "page/app.css", "page/continue.js"} {
		b, err := page.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, bad := range []string{"http://", "https://", "//cdn", "@import", "url(", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "<script>", "style="} {
			if strings.Contains(text, bad) {
				t.Errorf("%s holds %q", name, bad)
			}
		}
	}
}

// TestViews: a view gets its query and answers JSON; its refusal of the
// query is a 400 with its message, benchd's errors keep their class.
func TestViews(t *testing.T) {
	f := newFakeBenchd(t)
	views := map[string]View{
		"echo": func(ctx context.Context, q url.Values) (any, error) { return map[string]any{"q": q}, nil },
		"bad": func(ctx context.Context, q url.Values) (any, error) {
			return nil, fmt.Errorf("%w: --state %q: want one of ...", ErrBadQuery, q.Get("state"))
		},
		"gone": func(ctx context.Context, q url.Values) (any, error) {
			return nil, &client.Error{Status: 404, Code: apitype.CodeNotFound, Message: "no attempt a-9"}
		},
		"down": func(ctx context.Context, q url.Values) (any, error) {
			return nil, fmt.Errorf("%w at /run/benchd/benchd.sock", client.ErrNotRunning)
		},
	}
	s, base := serve(t, f, views)
	c := session(t, s)
	tests := []struct {
		path   string
		status int
		want   string
	}{
		{"/view/echo?a=%3Cb%3E&a=2", 200, `{"q":{"a":["\u003cb\u003e","2"]}}`},
		{"/view/bad?state=lost", 400, `{"code":"invalid","message":"bad query: --state \"lost\": want one of ..."}`},
		{"/view/gone", 404, `{"code":"not_found","message":"no attempt a-9"}`},
		{"/view/down", 502, `{"code":"internal","message":"benchd is not running at /run/benchd/benchd.sock"}`},
	}
	for _, tt := range tests {
		resp, body := do(t, "GET", base+tt.path, c, nil)
		if resp.StatusCode != tt.status || strings.TrimSpace(body) != tt.want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: got %s %s %s, want %d %s", tt.path, resp.Status, resp.Header.Get("Content-Type"), body, tt.status, tt.want)
		}
	}
}
