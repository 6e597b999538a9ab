package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSdNotify(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cases := []struct{ name, env, send, want string }{
		{"ready", p, "READY=1", "READY=1"},
		{"stopping", p, "STOPPING=1", "STOPPING=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("NOTIFY_SOCKET", c.env)
			sdNotify(log, c.send)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 256)
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(buf[:n]); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
	t.Run("no socket", func(t *testing.T) {
		t.Setenv("NOTIFY_SOCKET", "")
		logs.Reset()
		sdNotify(log, "READY=1")
		if logs.Len() != 0 {
			t.Fatalf("got log %q, want nothing when systemd did not ask", logs.String())
		}
	})
	t.Run("dead socket", func(t *testing.T) {
		t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "gone"))
		logs.Reset()
		sdNotify(log, "READY=1")
		if !strings.Contains(logs.String(), "unable to notify systemd") {
			t.Fatalf("got log %q, want a warning", logs.String())
		}
	})
}

// TestServeBadUsage: flags-only arguments start the daemon, so its flag
// errors are usage errors (exit 2, one line) that start nothing.
func TestServeBadUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--bogus"}, "flag provided but not defined"},
		{"stray argument", []string{"--state", t.TempDir(), "extra"}, `unexpected argument "extra"`},
		{"negative concurrency", []string{"--concurrency", "-1"}, "negative"},
		{"bad concurrency", []string{"--concurrency", "many"}, "invalid value"},
		{"negative retries", []string{"--retries", "-1"}, "--retries -1 is negative"},
		{"bad retries", []string{"--retries", "twice"}, "invalid value"},
		{"zero max queued", []string{"--max-queued", "0"}, "--max-queued 0: want at least 1"},
		{"not a postgres URL", []string{"--database", "mysql://h/db"}, "--database: want a postgres:// or postgresql:// URL"},
		{"negative drain timeout", []string{"--drain-timeout", "-1s"}, "--drain-timeout -1s is negative"},
		{"bad drain timeout", []string{"--drain-timeout", "soon"}, "invalid value"},
		{"metrics without port", []string{"--metrics", "127.0.0.1"}, "--metrics \"127.0.0.1\": want host:port"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), c.args, &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), c.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
				t.Fatalf("got exit %d stderr %q, want exit 2 and one line containing %q", code, errb.String(), c.want)
			}
		})
	}
}
