package daemon

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSocket(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"absent socket in an existing directory", filepath.Join(dir, "a.sock"), nil},
		{"missing last directory only", filepath.Join(dir, "run", "a.sock"), nil},
		{"missing tree", filepath.Join(dir, "x", "y", "a.sock"), errInvalid},
		{"a regular file", plain, errInvalid},
		{"a live socket", live, errConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkSocket(tc.path)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	// checkSocket itself makes nothing.
	if _, err := os.Stat(filepath.Join(dir, "run")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("checkSocket made the socket's directory: %v", err)
	}
}

// TestRunRefusesBeforeMakingState starts Run on a socket another process
// listens on, on one under a missing tree, and with a missing task store:
// each must fail before the state directory (and the host key, the
// database in it) exist.
func TestRunRefusesBeforeMakingState(t *testing.T) {
	dir := t.TempDir()
	busy := filepath.Join(dir, "busy.sock")
	ln, err := net.Listen("unix", busy)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name, socket, tasks string
		want                error
	}{
		{"busy socket", busy, dir, errConflict},
		{"missing tree", filepath.Join(dir, "no", "such", "benchd.sock"), dir, errInvalid},
		{"missing task store", filepath.Join(dir, "free.sock"), filepath.Join(dir, "no-tasks"), errInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(dir, "state-"+strings.ReplaceAll(tc.name, " ", "-"))
			err := Run(context.Background(), Config{
				Socket: tc.socket, StateDir: state, TasksDir: tc.tasks,
				AgentUID: 65534, AgentGID: 65534,
				Logger: slog.New(slog.DiscardHandler),
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("state directory %s: got %v, want it never made", state, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the socket's missing tree was made: %v", err)
			}
		})
	}
}
