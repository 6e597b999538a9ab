package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// TestView: benchctl view against the real benchd: two builtin:reference
// attempts of rt-01 listed by their run, one read whole through the
// viewer (the attempt, its journal checked, its changes, its transcript,
// the scorecard), benchd's answers passed on as they are; a POST is
// refused before benchd hears of it; SIGINT ends it with status 0.
func TestView(t *testing.T) {
	d := shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentReference, Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range run.Attempts {
		if a := wait(t, d.client, id); !a.Pass {
			t.Fatalf("%s: got %s pass %v, want a pass", id, a.State, a.Pass)
		}
	}
	id := run.Attempts[0]

	cmd := exec.CommandContext(ctx, benchctl, "--socket", d.socket, "view", "--json")
	cmd.Dir = "/"
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("benchctl view printed nothing: %v; %s", err, stderr.String())
	}
	var l struct{ Listening, URL string }
	if err := json.Unmarshal([]byte(line), &l); err != nil || !strings.HasPrefix(l.URL, "http://127.0.0.1:") {
		t.Fatalf("benchctl view --json printed %q", line)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 2 * time.Minute}
	base := "http://" + l.Listening
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(l.URL); code != 200 {
		t.Fatalf("the token: got %d", code)
	}
	tests := []struct {
		path  string
		check func(body string) bool
	}{
		{"/view/attempts?run=" + run.ID, func(b string) bool { return strings.Count(b, `"verdict":"pass"`) == 2 }},
		{"/view/attempt?attempt=" + id, func(b string) bool {
			return strings.Contains(b, `"task":"rt-01"`) && strings.Contains(b, `"verdict":"pass"`)
		}},
		{"/view/log?attempt=" + id, func(b string) bool {
			return strings.Contains(b, `"verified":true`) && strings.Contains(b, `"op":"mount"`) && strings.Contains(b, `"op":"unmount"`)
		}},
		{"/view/diff?attempt=" + id, func(b string) bool { return strings.Contains(b, `"kind":"modified"`) && strings.Contains(b, "@@ ") }},
		{"/view/scorecard?run=" + run.ID + "&all-purposes=1", func(b string) bool {
			return strings.Contains(b, `"agent":"builtin:reference`) && strings.Contains(b, `"plot":"\u003csvg`)
		}},
		{"/api/v1/attempts/" + id + "/transcript", func(b string) bool { return strings.Contains(b, `"stdout"`) }},
		{"/api/v1/runs/" + run.ID + "/status", func(b string) bool { return strings.Contains(b, `"ended":true`) }},
		{"/api/v1/tasks", func(b string) bool { return strings.Contains(b, `"rt-06"`) }},
	}
	for _, tt := range tests {
		if code, body := get(base + tt.path); code != 200 || !tt.check(body) {
			t.Errorf("GET %s: got %d %.300s", tt.path, code, body)
		}
	}
	// The model log: benchd's answer whatever it is (a ModelLog, or 404
	// from a benchd without it), which the page shows either way.
	if code, body := get(base + "/api/v1/attempts/" + id + "/model"); code != 200 && code != 404 {
		t.Errorf("the model log: got %d %.300s, want benchd's 200 or 404", code, body)
	}
	resp, err := hc.Post(base+"/api/v1/attempts/"+id+"/cancel", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST cancel: got %s, want 405", resp.Status)
	}

	cmd.Process.Signal(syscall.SIGINT)
	werr := make(chan error, 1)
	go func() { werr <- cmd.Wait() }()
	select {
	case err := <-werr:
		exited = true
		if err != nil {
			t.Errorf("benchctl view after SIGINT: %v, want exit 0; %s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Errorf("benchctl view did not end within a minute of SIGINT")
	}
}
