package sandbox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"benchd.dev/internal/testenv"
	"benchd.dev/limits"
	"benchd.dev/netns"
	"benchd.dev/sandbox"
)

// nobody is the unprivileged identity the hostile programs run as.
const nobody = 65534

const python = "/usr/bin/python3"

// rig is one test's sandbox set-up: a workspace owned by nobody, capture
// files, a marker that every process of the test carries in its command
// line, and the checks that nothing of the test is left afterwards.
type rig struct {
	t      *testing.T
	dir    string
	ws     string
	out    string
	errOut string
	marker string
}

func newRig(t *testing.T, features ...testenv.Feature) *rig {
	t.Helper()
	testenv.Require(t, append([]testenv.Feature{testenv.Root, testenv.Userns}, features...)...)
	dir := t.TempDir()
	// The agent's uid may need to reach files here from the host side
	// (controls run outside the sandbox).
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	r := &rig{
		t:      t,
		dir:    dir,
		ws:     ws,
		out:    filepath.Join(dir, "stdout"),
		errOut: filepath.Join(dir, "stderr"),
		marker: "bxmark" + hex.EncodeToString(b),
	}
	fdsBefore := openFDs(t)
	t.Cleanup(func() {
		if pids := procsWith(r.marker); len(pids) > 0 {
			t.Errorf("processes left after the test: %v", pids)
		}
		if ms := hostMountsUnder(t, dir); len(ms) > 0 {
			t.Errorf("mounts left after the test: %v", ms)
		}
		if diff := newFDs(fdsBefore, openFDs(t)); len(diff) > 0 {
			t.Errorf("file descriptors left open: %v", diff)
		}
	})
	return r
}

// config is the base configuration of the rig's sandboxes.
func (r *rig) config(args ...string) sandbox.Config {
	return sandbox.Config{
		Args:       args,
		Env:        []string{"MARK=" + r.marker},
		UID:        nobody,
		GID:        nobody,
		Workspace:  r.ws,
		StdoutPath: r.out,
		StderrPath: r.errOut,
		Timeout:    30 * time.Second,
	}
}

// py runs a python program in the sandbox; the marker is its argv[1].
func (r *rig) py(prog string) sandbox.Config {
	return r.config(python, "-c", prog, r.marker)
}

// run runs cfg to the end and returns the result and the captured output.
func (r *rig) run(cfg sandbox.Config) (sandbox.Result, string, string) {
	r.t.Helper()
	res, err := sandbox.Run(context.Background(), cfg)
	if err != nil {
		r.t.Fatalf("sandbox.Run: %v", err)
	}
	return res, r.stdout(), r.stderr()
}

func (r *rig) stdout() string { b, _ := os.ReadFile(r.out); return string(b) }
func (r *rig) stderr() string { b, _ := os.ReadFile(r.errOut); return string(b) }

// decode reads the JSON object the hostile program printed last.
func decode(t *testing.T, stdout, stderr string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("program output is not JSON: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
}

// group makes a limits group for the test and wires it into cfg.
func group(t *testing.T, cfg *sandbox.Config, lc limits.Config) *limits.Group {
	t.Helper()
	g, err := limits.New(context.Background(), lc)
	if err != nil {
		t.Fatalf("limits.New: %v", err)
	}
	paths := g.Paths()
	t.Cleanup(func() {
		if err := g.Close(context.Background()); err != nil {
			t.Errorf("close group: %v", err)
		}
		for h, p := range paths {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("cgroup %s (%s) left after the test", p, h)
			}
		}
	})
	cfg.Join = g.Add
	if fd, ok := g.FD(); ok {
		cfg.UseCgroupFD, cfg.CgroupFD = true, fd
	}
	cfg.Kill = g.Kill
	cfg.OOMKilled = func() bool {
		u, err := g.Usage()
		return err == nil && u.OOMKills > 0
	}
	return g
}

// namespace makes a network namespace for the test and wires it into cfg.
func namespace(t *testing.T, cfg *sandbox.Config, nc netns.Config) *netns.Namespace {
	t.Helper()
	if nc.RunDir == "" {
		nc.RunDir = t.TempDir()
	}
	n, err := netns.New(context.Background(), nc)
	if err != nil {
		t.Fatalf("netns.New: %v", err)
	}
	path := n.Path()
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close netns: %v", err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("netns %s left after the test", path)
		}
		if ms := hostMountsUnder(t, path); len(ms) > 0 {
			t.Errorf("netns mount left after the test: %v", ms)
		}
	})
	cfg.NetnsPath = path
	cfg.Files = append(cfg.Files,
		sandbox.File{Path: "/etc/hosts", Data: n.Hosts()},
		sandbox.File{Path: "/etc/resolv.conf", Data: n.ResolvConf()})
	return n
}

// procsWith lists the host pids whose command line contains s.
func procsWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hostMountsUnder lists the mount points of this (the host's) mount
// namespace at or below dir.
func hostMountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// openFDs maps this process's open descriptors to what they point at.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil {
			m[e.Name()] = l
		}
	}
	return m
}

// newFDs lists descriptors open in after but not in before, except the
// launcher's handle on this process's own network namespace (opened
// once, on the first Start).
func newFDs(before, after map[string]string) []string {
	own, _ := os.Readlink("/proc/self/ns/net")
	var out []string
	for fd, l := range after {
		if before[fd] == l || l == own {
			continue
		}
		out = append(out, fmt.Sprintf("%s -> %s", fd, l))
	}
	return out
}

// rss returns this process's resident set size in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
