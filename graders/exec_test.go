package graders

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
)

func TestExecRunner(t *testing.T) {
	tests := []struct {
		name       string
		spec       RunSpec
		wantExit   int
		wantSignal int
		wantTO     bool
		wantOut    string
		maxWall    time.Duration
	}{
		{name: "exit status", spec: RunSpec{Args: []string{"/bin/sh", "-c", "echo hi; echo err >&2; exit 3"}}, wantExit: 3, wantOut: "hi\n"},
		{name: "env and dir", spec: RunSpec{Args: []string{"/bin/sh", "-c", "echo $FOO; pwd"}, Env: []string{"FOO=bar"}, Dir: "/"}, wantOut: "bar\n/\n"},
		{name: "default env", spec: RunSpec{Args: []string{"/bin/sh", "-c", "echo $PATH"}}, wantOut: "/usr/bin:/bin\n"},
		{name: "signal", spec: RunSpec{Args: []string{"/bin/sh", "-c", "kill -TERM $$"}}, wantExit: -1, wantSignal: 15},
		{
			// The child's own child keeps the pipes open: the whole
			// group must die at the limit, not only the direct child.
			name:     "timeout kills the group",
			spec:     RunSpec{Args: []string{"/bin/sh", "-c", "sleep 30 & sleep 30"}, Timeout: 300 * time.Millisecond},
			wantExit: -1, wantSignal: 9, wantTO: true, maxWall: 10 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ExecRunner{}.Run(context.Background(), tt.spec)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.wantExit || res.Signal != tt.wantSignal || res.TimedOut != tt.wantTO {
				t.Errorf("got exit %d signal %d timed out %v, want %d %d %v", res.ExitCode, res.Signal, res.TimedOut, tt.wantExit, tt.wantSignal, tt.wantTO)
			}
			if tt.wantOut != "" && string(res.Stdout) != tt.wantOut {
				t.Errorf("stdout: got %q, want %q", res.Stdout, tt.wantOut)
			}
			if tt.maxWall > 0 && res.Wall > tt.maxWall {
				t.Errorf("wall: got %v, want under %v", res.Wall, tt.maxWall)
			}
		})
	}
}

func TestExecRunnerMaxRSS(t *testing.T) {
	testenv.Require(t, testenv.Python)
	res, err := ExecRunner{}.Run(context.Background(), RunSpec{Args: []string{Python, "-c", "b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096])"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v, exit %d: %s", err, res.ExitCode, res.Stderr)
	}
	if res.MaxRSS < 64<<20 {
		t.Errorf("MaxRSS: got %d, want at least %d", res.MaxRSS, 64<<20)
	}
}

func TestExecRunnerMemoryLimit(t *testing.T) {
	testenv.Require(t, testenv.Python)
	res, err := ExecRunner{}.Run(context.Background(), RunSpec{
		Args:        []string{Python, "-c", "b = bytearray(512 << 20)"},
		MemoryLimit: 256 << 20,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode == 0 || !bytes.Contains(res.Stderr, []byte("MemoryError")) {
		t.Errorf("got exit %d stderr %q, want a MemoryError", res.ExitCode, res.Stderr)
	}
}

func TestExecRunnerCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := ExecRunner{}.Run(ctx, RunSpec{Args: []string{"/bin/sleep", "30"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got error %v, want the context's deadline", err)
	}
}

func TestExecRunnerNoCommand(t *testing.T) {
	if _, err := (ExecRunner{}).Run(context.Background(), RunSpec{}); err == nil {
		t.Error("got nil error for an empty command")
	}
	if _, err := (ExecRunner{}).Run(context.Background(), RunSpec{Args: []string{"/nonexistent/binary"}}); err == nil {
		t.Error("got nil error for a missing binary")
	}
}

// TestExecRunnerClosesNetwork checks that, as root, commands see only a
// loopback interface, and with AllowNetwork the host's interfaces.
func TestExecRunnerClosesNetwork(t *testing.T) {
	testenv.Require(t, testenv.Root, testenv.Netns)
	host, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		r      ExecRunner
		wantLo bool // only lo
	}{
		{"closed", ExecRunner{}, true},
		{"open", ExecRunner{AllowNetwork: true}, strings.Count(string(host), ":") == 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.r.NetIsolated() != tt.r.AllowNetwork {
				t.Fatalf("NetIsolated: got %v with AllowNetwork %v", tt.r.NetIsolated(), tt.r.AllowNetwork)
			}
			res, err := tt.r.Run(context.Background(), RunSpec{Args: []string{"/bin/cat", "/proc/net/dev"}})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Run: %v exit %d %s", err, res.ExitCode, res.Stderr)
			}
			var ifaces []string
			for _, l := range strings.Split(string(res.Stdout), "\n")[2:] {
				if name, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
					ifaces = append(ifaces, name)
				}
			}
			onlyLo := len(ifaces) == 1 && ifaces[0] == "lo"
			if onlyLo != tt.wantLo {
				t.Errorf("interfaces %v: got only-loopback %v, want %v", ifaces, onlyLo, tt.wantLo)
			}
		})
	}
}

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"under", 10, []string{"abc", "de"}, "abcde"},
		{"exact", 4, []string{"ab", "cd"}, "abcd"},
		{"over", 4, []string{"abcdef", "gh"}, "ab\n[... 4 bytes dropped ...]\ngh"},
		{"many small", 4, []string{"a", "b", "c", "d", "e", "f"}, "ab\n[... 2 bytes dropped ...]\nef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &capBuffer{max: tt.max}
			for _, w := range tt.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write: got %d, %v", n, err)
				}
			}
			if got := string(c.Bytes()); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
