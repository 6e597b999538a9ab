package daemon

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
)

func TestScrubberText(t *testing.T) {
	sc := newScrubber([]apitype.EnvVar{
		{Name: "SHORT", Value: "12345"},
		{Name: "KEY", Value: "sk-abcdef"},
		{Name: "LONG", Value: "sk-abcdef-and-more"},
		{Name: "SAME", Value: "sk-abcdef"},
	})
	for _, tt := range []struct{ in, want string }{
		{"key sk-abcdef.", "key [env KEY]."},
		{"sk-abcdef-and-more", "[env LONG]"},
		{"sk-abcdefsk-abcdef", "[env KEY][env KEY]"},
		{"pin 12345 stays", "pin 12345 stays"},
		{"sk-abcde is not the value", "sk-abcde is not the value"},
	} {
		if got := sc.text(tt.in); got != tt.want {
			t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := (scrubber{}).text("sk-abcdef"); got != "sk-abcdef" {
		t.Errorf("the zero scrubber: got %q, want the text unchanged", got)
	}
}

func TestScrubberAttemptAndFile(t *testing.T) {
	const secret = "hunter2-secret"
	sc := newScrubber([]apitype.EnvVar{{Name: "TOKEN", Value: secret}})
	a := apitype.Attempt{
		InfraError: "agent run: " + secret,
		Reasons:    []apitype.Reason{{Code: "tests_failed", Message: "expected " + secret}},
		Network:    apitype.Network{DNS: []apitype.DNSQuery{{Name: secret + ".example"}}},
	}
	sc.attempt(&a)
	if a.InfraError != "agent run: [env TOKEN]" || a.Reasons[0].Message != "expected [env TOKEN]" || a.Network.DNS[0].Name != "[env TOKEN].example" {
		t.Errorf("got %q, %q, %q, want each value replaced by [env TOKEN]", a.InfraError, a.Reasons[0].Message, a.Network.DNS[0].Name)
	}
	path := filepath.Join(t.TempDir(), "stdout")
	if err := os.WriteFile(path, []byte("token="+secret+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := sc.file(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "token=[env TOKEN]\n" {
		t.Errorf("scrubbed file: got %q, want %q", b, "token=[env TOKEN]\n")
	}
	if err := sc.file(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Errorf("a missing capture file: got %v, want nothing to do", err)
	}
}

// TestScrubHandler: while an attempt is live its values never reach the
// log, in the message or any attribute; once it has ended, scrubbing
// stops.
func TestScrubHandler(t *testing.T) {
	const secret = "s3cr3t-log-value"
	var buf bytes.Buffer
	set := &secretSet{}
	log := slog.New(set.handler(slog.NewTextHandler(&buf, nil))).With("component", "test")
	set.add("a-1", []apitype.EnvVar{{Name: "TOKEN", Value: secret}})
	log.Info("agent said "+secret,
		"text", "x"+secret,
		"err", errors.New("failed: "+secret),
		slog.Group("g", "inner", secret),
		"list", []string{secret})
	log.WithGroup("w").With("with", secret).Warn("done")
	got := buf.String()
	if strings.Contains(got, secret) {
		t.Errorf("the log holds the value:\n%s", got)
	}
	if n := strings.Count(got, "[env TOKEN]"); n != 6 {
		t.Errorf("got %d markers, want 6:\n%s", n, got)
	}
	set.remove("a-1")
	buf.Reset()
	log.Info(secret)
	if !strings.Contains(buf.String(), secret) {
		t.Errorf("after the attempt ended: got %q, want the text as logged", buf.String())
	}
}
