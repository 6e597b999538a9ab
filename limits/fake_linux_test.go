package limits

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeTree writes files (path relative to root -> content) below a new
// temporary directory, making directories as needed, and returns it.
func fakeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func readFakeFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

// abandon stops g's sampler and drops its references without removing
// anything, as a crash would (and as a fake tree needs: its directories
// hold regular files, which rmdir refuses).
func (g *Group) abandon() {
	g.stopSampler()
	<-g.samplerDone
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.fd >= 0 {
		_ = closeFD(g.fd)
		g.fd = -1
	}
	interMu.Lock()
	defer interMu.Unlock()
	for i := range g.hs {
		if g.hs[i].inter != "" {
			d := g.hs[i].interDir()
			if interRefs[d]--; interRefs[d] <= 0 {
				delete(interRefs, d)
			}
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{name: "zero", cfg: Config{}, ok: true},
		{name: "root without layout", cfg: Config{Root: "/tmp/x"}, ok: false},
		{name: "root with layout", cfg: Config{Root: "/tmp/x", Layout: Hybrid}, ok: true},
		{name: "unknown layout", cfg: Config{Layout: "both"}, ok: false},
		{name: "relative parent", cfg: Config{Parent: "system.slice"}, ok: false},
		{name: "climbing parent", cfg: Config{Parent: "/a/../.."}, ok: false},
		{name: "bad name", cfg: Config{Name: "a/b"}, ok: false},
		{name: "negative memory", cfg: Config{MemoryMax: -1}, ok: false},
		{name: "weight too big", cfg: Config{CPUWeight: 10001}, ok: false},
		{name: "tiny quota", cfg: Config{CPUQuota: time.Microsecond}, ok: false},
		{name: "limits", cfg: Config{MemoryMax: 1 << 30, PidsMax: 64, CPUWeight: 100, CPUQuota: 50 * time.Millisecond}, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.withDefaults(7)
			if (err == nil) != tt.ok {
				t.Fatalf("withDefaults = %v, want ok %v", err, tt.ok)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("withDefaults = %v, want ErrInvalid", err)
				}
				return
			}
			wantName := fmt.Sprintf("benchd-%d-7", os.Getpid())
			if tt.cfg.Name == "" && got.Name != wantName {
				t.Errorf("default name = %q, want %q", got.Name, wantName)
			}
			if got.CPUPeriod != DefaultCPUPeriod || got.SampleInterval != DefaultSampleInterval {
				t.Errorf("period, interval = %v, %v, want %v, %v", got.CPUPeriod, got.SampleInterval, DefaultCPUPeriod, DefaultSampleInterval)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	root := fakeTree(t, map[string]string{
		"memory/": "", "pids/": "", "cpu/": "", "freezer/": "", "unified/": "",
	})
	hybridOwn := ownCgroups{
		v1:      map[string]string{"memory": "/process_api/ec96", "pids": "/", "cpu": "/", "cpuacct": "/", "freezer": "/"},
		unified: "/", hasV2: true,
	}
	type want struct{ label, rel string }
	tests := []struct {
		name   string
		cfg    Config
		layout Layout
		own    ownCgroups
		want   []want
		err    error
	}{
		{
			name:   "hybrid: intermediate only at roots, no cpu without cpu limits",
			cfg:    Config{Name: "a1", Intermediate: "benchd-9"},
			layout: Hybrid, own: hybridOwn,
			want: []want{{"memory", "/process_api/ec96/a1"}, {"pids", "/benchd-9/a1"}, {"unified", "/benchd-9/a1"}},
		},
		{
			name:   "hybrid with cpu",
			cfg:    Config{Name: "a1", Intermediate: "benchd-9", CPUWeight: 50},
			layout: Hybrid, own: hybridOwn,
			want: []want{{"memory", "/process_api/ec96/a1"}, {"pids", "/benchd-9/a1"}, {"cpu", "/benchd-9/a1"}, {"unified", "/benchd-9/a1"}},
		},
		{
			name:   "legacy uses the freezer and no v2",
			cfg:    Config{Name: "a1", Intermediate: "benchd-9"},
			layout: Legacy, own: hybridOwn,
			want: []want{{"memory", "/process_api/ec96/a1"}, {"pids", "/benchd-9/a1"}, {"freezer", "/benchd-9/a1"}},
		},
		{
			name:   "configured parent",
			cfg:    Config{Name: "a1", Intermediate: "benchd-9", Parent: "/benchd.slice/"},
			layout: Hybrid, own: hybridOwn,
			want: []want{{"memory", "/benchd.slice/a1"}, {"pids", "/benchd.slice/a1"}, {"unified", "/benchd.slice/a1"}},
		},
		{
			name:   "unified below the service",
			cfg:    Config{Name: "a1", Intermediate: "benchd-9"},
			layout: Unified, own: ownCgroups{unified: "/system.slice/benchd.service", hasV2: true},
			want: []want{{"unified", "/system.slice/benchd.service/a1"}},
		},
		{
			name:   "unified at the root",
			cfg:    Config{Name: "a1", Intermediate: "benchd-9"},
			layout: Unified, own: ownCgroups{unified: "/", hasV2: true},
			want: []want{{"unified", "/benchd-9/a1"}},
		},
		{
			name:   "memory controller missing",
			cfg:    Config{Name: "a1", Intermediate: "benchd-9"},
			layout: Hybrid, own: ownCgroups{v1: map[string]string{"pids": "/"}, unified: "/", hasV2: true},
			err: ErrNoController,
		},
		{
			name:   "unified without a v2 entry",
			cfg:    Config{Name: "a1", Intermediate: "benchd-9"},
			layout: Unified, own: ownCgroups{v1: map[string]string{"memory": "/"}},
			err: ErrUnavailable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Root = root
			if tt.layout == Unified {
				cfg.Root = filepath.Join(root, "unified")
			}
			hs, err := plan(cfg, tt.layout, tt.own)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("plan error = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []want
			for _, h := range hs {
				got = append(got, want{h.label(), h.rel})
				if (h.parent == "/") != (h.inter != "") {
					t.Errorf("%s: parent %q, intermediate %q: want an intermediate exactly at a root", h.label(), h.parent, h.inter)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("plan = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLimitWrites(t *testing.T) {
	cfg := Config{MemoryMax: 64 << 20, PidsMax: 20, CPUWeight: 50, CPUQuota: 150 * time.Millisecond, CPUPeriod: 100 * time.Millisecond}
	tests := []struct {
		name   string
		h      hier
		layout Layout
		want   []limitWrite
	}{
		{"v1 memory", hier{ctrl: "memory"}, Hybrid, []limitWrite{
			{"memory.limit_in_bytes", "67108864", false}, {"memory.memsw.limit_in_bytes", "67108864", true}}},
		{"v1 pids", hier{ctrl: "pids"}, Hybrid, []limitWrite{{"pids.max", "20", false}}},
		{"v1 cpu", hier{ctrl: "cpu"}, Legacy, []limitWrite{
			{"cpu.shares", "512", false}, {"cpu.cfs_period_us", "100000", false}, {"cpu.cfs_quota_us", "150000", false}}},
		{"v1 freezer", hier{ctrl: "freezer"}, Legacy, nil},
		{"hybrid v2", hier{v2: true}, Hybrid, nil},
		{"unified", hier{v2: true}, Unified, []limitWrite{
			{"memory.max", "67108864", false}, {"memory.swap.max", "0", true}, {"pids.max", "20", false},
			{"cpu.weight", "50", false}, {"cpu.max", "150000 100000", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := limitWrites(cfg, &tt.h, tt.layout)
			if !slices.Equal(got, tt.want) {
				t.Errorf("limitWrites = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNewUnifiedFake makes a group in a fake unified tree and checks what
// New wrote: controllers enabled in the parent, the limits, the fd.
func TestNewUnifiedFake(t *testing.T) {
	root := fakeTree(t, map[string]string{
		"cgroup.subtree_control":     "cpu memory pids\n",
		"svc/cgroup.controllers":     "cpuset cpu io memory pids\n",
		"svc/cgroup.subtree_control": "\n",
		"self":                       "0::/svc\n",
	})
	g, err := New(t.Context(), Config{
		Root: root, Layout: Unified, ProcCgroup: filepath.Join(root, "self"), Name: "a1",
		MemoryMax: 1 << 30, PidsMax: 64, CPUQuota: 50 * time.Millisecond, SampleInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.abandon()
	if got, want := g.Path(), "/svc/a1"; got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	if _, ok := g.FD(); !ok {
		t.Error("FD on unified: got no fd, want one")
	}
	for file, want := range map[string]string{
		"svc/cgroup.subtree_control": "+memory +pids +cpu",
		"svc/a1/memory.max":          "1073741824",
		"svc/a1/pids.max":            "64",
		"svc/a1/cpu.max":             "50000 100000",
	} {
		if got := readFakeFile(t, filepath.Join(root, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "svc/a1/memory.swap.max")); err == nil {
		t.Error("memory.swap.max was created, want it written only where the kernel has it")
	}

	_, err = New(t.Context(), Config{Root: root, Layout: Unified, ProcCgroup: filepath.Join(root, "self"), Name: "a1", SampleInterval: -1})
	if !errors.Is(err, ErrExists) {
		t.Errorf("second New with the same name: error %v, want ErrExists", err)
	}
}

// TestNewUnifiedFakeRoot checks that at a v2 root New makes an
// intermediate group, enables controllers there, and never writes the
// root's subtree_control.
func TestNewUnifiedFakeRoot(t *testing.T) {
	tests := []struct {
		name    string
		rootCtl string
		err     error
	}{
		{name: "controllers enabled at root", rootCtl: "cpu memory pids io\n"},
		{name: "memory missing at root", rootCtl: "cpu pids\n", err: ErrNoController},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeTree(t, map[string]string{"cgroup.subtree_control": tt.rootCtl, "self": "0::/\n"})
			g, err := New(t.Context(), Config{
				Root: root, Layout: Unified, ProcCgroup: filepath.Join(root, "self"),
				Name: "a1", Intermediate: "bd-1", SampleInterval: -1,
			})
			if got := readFakeFile(t, filepath.Join(root, "cgroup.subtree_control")); got != tt.rootCtl {
				t.Errorf("root subtree_control = %q, want it untouched (%q)", got, tt.rootCtl)
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("New error = %v, want %v", err, tt.err)
				}
				if _, err := os.Stat(filepath.Join(root, "bd-1")); !os.IsNotExist(err) {
					t.Errorf("intermediate left after a failed New: stat error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer g.abandon()
			if got, want := g.Path(), "/bd-1/a1"; got != want {
				t.Errorf("Path = %q, want %q", got, want)
			}
			if got, want := readFakeFile(t, filepath.Join(root, "bd-1/cgroup.subtree_control")), "+memory +pids"; got != want {
				t.Errorf("intermediate subtree_control = %q, want %q", got, want)
			}
		})
	}
}

// TestUsageFake reads Usage from fake v1 and v2 files.
func TestUsageFake(t *testing.T) {
	tests := []struct {
		name   string
		layout Layout
		files  map[string]string
		want   Usage
	}{
		{
			name:   "v1",
			layout: Hybrid,
			files: map[string]string{
				"memory/g/memory.usage_in_bytes":     "4096\n",
				"memory/g/memory.max_usage_in_bytes": "212336640\n",
				"memory/g/memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
				"memory/g/memory.failcnt":            "33\n",
				"memory/g/cgroup.procs":              "",
				"pids/g/pids.events":                 "max 4\n",
			},
			want: Usage{PeakBytes: 212336640, CurrentBytes: 4096, OOMKills: 1, MemoryLimitHits: 33, PidsLimitHits: 4},
		},
		{
			name:   "v2",
			layout: Unified,
			files: map[string]string{
				"memory.current": "8192\n",
				"memory.peak":    "300000000\n",
				"memory.events":  "low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n",
				"pids.events":    "max 0\n",
				"cgroup.procs":   "1\n2\n",
				"cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
			},
			want: Usage{PeakBytes: 300000000, CurrentBytes: 8192, OOMKills: 2, MemoryLimitHits: 9, Procs: 2, CPU: 2500 * time.Millisecond},
		},
		{
			name:   "v2 without memory.peak",
			layout: Unified,
			files: map[string]string{
				"memory.current": "8192\n",
				"memory.events":  "oom_kill 0\n",
				"pids.events":    "max 0\n",
				"cgroup.procs":   "",
			},
			want: Usage{PeakBytes: 8192, CurrentBytes: 8192},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeTree(t, tt.files)
			g := &Group{layout: tt.layout}
			if tt.layout == Unified {
				g.hs = []hier{{v2: true, mount: root, rel: "/"}}
			} else {
				g.hs = []hier{{ctrl: "memory", mount: root + "/memory", rel: "/g"}, {ctrl: "pids", mount: root + "/pids", rel: "/g"}}
			}
			got, err := g.readUsage()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("readUsage = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestIsEmptyFake(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"v2 populated", map[string]string{"u/g/cgroup.events": "populated 1\nfrozen 0\n"}, false},
		{"v2 empty", map[string]string{"u/g/cgroup.events": "populated 0\nfrozen 0\n", "m/g/cgroup.procs": ""}, true},
		{"v1 procs left", map[string]string{"u/g/cgroup.events": "populated 0\n", "m/g/cgroup.procs": "42\n"}, false},
		{"gone", map[string]string{"u/": "", "m/": ""}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeTree(t, tt.files)
			hs := []hier{{v2: true, mount: root + "/u", rel: "/g"}, {ctrl: "memory", mount: root + "/m", rel: "/g"}}
			if got := isEmpty(hs); got != tt.want {
				t.Errorf("isEmpty = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCleanupTargetsFake checks which directories Cleanup would remove:
// groups with the prefix (and their children) below the parent and below
// intermediates of this process or of dead processes, never those of a
// live process or groups without the prefix.
func TestCleanupTargetsFake(t *testing.T) {
	const deadPid = 4194304 // above any pid_max: never a live process
	self := os.Getpid()
	root := fakeTree(t, map[string]string{
		"memory/svc/bx-1/":                           "",
		"memory/svc/bx-2/sub/":                       "",
		"memory/svc/other/":                          "",
		fmt.Sprintf("pids/benchd-%d/bx-1/", self):    "",
		fmt.Sprintf("pids/benchd-%d/bx-3/", deadPid): "",
		"pids/benchd-1/bx-4/":                        "", // pid 1 is alive
		"pids/benchd-x/bx-5/":                        "",
		"pids/unrelated/bx-6/":                       "",
		"unified/benchd-1/bx-7/":                     "",
		fmt.Sprintf("unified/benchd-%d/keep/", self): "",
	})
	cfg, err := Config{Root: root, Layout: Hybrid}.withDefaults(0)
	if err != nil {
		t.Fatal(err)
	}
	own := ownCgroups{v1: map[string]string{"memory": "/svc", "pids": "/"}, unified: "/", hasV2: true}
	bases, err := cleanupBases(cfg, Hybrid, own, false)
	if err != nil {
		t.Fatal(err)
	}
	victims, err := cleanupTargets(bases, "bx-")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range victims {
		got = append(got, v.label()+":"+v.rel)
	}
	slices.Sort(got)
	want := []string{
		"memory:/svc/bx-1",
		"memory:/svc/bx-2",
		"memory:/svc/bx-2/sub",
		fmt.Sprintf("pids:/benchd-%d/bx-3", deadPid),
		fmt.Sprintf("pids:/benchd-%d/bx-1", self),
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("cleanup targets = %v, want %v", got, want)
	}
}

func TestOwnedIntermediate(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{fmt.Sprintf("benchd-%d", os.Getpid()), true},
		{"benchd-4194304", true},
		{"benchd-1", false},
		{"benchd-01", false},
		{"benchd-", false},
		{"benchd-12-3", false},
		{"other-4194304", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownedIntermediate(tt.name); got != tt.want {
				t.Errorf("ownedIntermediate(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestCleanupRejectsBadPrefix(t *testing.T) {
	for _, p := range []string{"", "a/b", ".."} {
		if err := Cleanup(context.Background(), Config{}, p); !errors.Is(err, ErrInvalid) {
			t.Errorf("Cleanup(prefix %q) = %v, want ErrInvalid", p, err)
		}
	}
}
