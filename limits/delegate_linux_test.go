package limits

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDelegatedParent(t *testing.T) {
	tests := []struct{ own, want string }{
		{"/system.slice/benchd.service", "/system.slice/benchd.service"},
		{"/system.slice/benchd.service/supervisor", "/system.slice/benchd.service"},
		{"/system.slice/benchd.service/.control", "/system.slice/benchd.service"},
		{"/system.slice/benchd.service/supervisor/", "/system.slice/benchd.service"},
		{"/supervisor", "/"},
		{"/", "/"},
		{"/a/supervisor-x", "/a/supervisor-x"},
	}
	for _, tt := range tests {
		if got := DelegatedParent(tt.own); got != tt.want {
			t.Errorf("DelegatedParent(%q) = %q, want %q", tt.own, got, tt.want)
		}
	}
}

// TestDelegateFake runs Delegate against fake unified trees laid out as
// systemd leaves them: a service alone in its group (systemd 252), a
// service already in its DelegateSubgroup= leaf (254+), a login scope
// shared with a shell, with and without a service manager to ask for a
// scope, a unit without Delegate=yes, an explicit parent, and a v2 root.
func TestDelegateFake(t *testing.T) {
	const pid = 4242
	svc := "system.slice/benchd.service"
	full := "cpuset cpu io memory pids\n"
	tests := []struct {
		name     string
		files    map[string]string
		parent   string
		scope    bool // a fake service manager answers
		wantErr  error
		errHas   []string
		want     Delegation
		wantFile map[string]string
	}{{
		name: "service alone in its group",
		files: map[string]string{
			"self": "0::/" + svc + "\n", svc + "/cgroup.controllers": full,
			svc + "/cgroup.procs": fmt.Sprintln(pid), svc + "/cgroup.subtree_control": "\n",
		},
		want: Delegation{Parent: "/" + svc, From: "/" + svc, Self: "/" + svc + "/supervisor", Enabled: []string{"memory", "pids", "cpu"}},
		wantFile: map[string]string{
			svc + "/supervisor/cgroup.procs": fmt.Sprint(pid),
			svc + "/cgroup.subtree_control":  "+memory +pids +cpu",
		},
	}, {
		name: "DelegateSubgroup leaf",
		files: map[string]string{
			"self": "0::/" + svc + "/supervisor\n", svc + "/cgroup.controllers": "memory pids\n",
			svc + "/cgroup.procs": "", svc + "/cgroup.subtree_control": "pids\n",
			svc + "/supervisor/cgroup.procs": fmt.Sprintln(pid),
		},
		want:     Delegation{Parent: "/" + svc, Self: "/" + svc + "/supervisor", Enabled: []string{"memory"}},
		wantFile: map[string]string{svc + "/cgroup.subtree_control": "+memory"},
	}, {
		name: "login scope shared with a shell, no service manager",
		files: map[string]string{
			"self": "0::/user.slice/session-1.scope\n", "user.slice/session-1.scope/cgroup.controllers": full,
			"user.slice/session-1.scope/cgroup.procs": fmt.Sprintf("812\n%d\n", pid),
		},
		wantErr: ErrParentBusy,
		errHas:  []string{"pids [812]", "systemd-run --scope -p Delegate=yes", "--cgroup-parent"},
	}, {
		name: "login scope shared with a shell, systemd makes a scope",
		files: map[string]string{
			"self": "0::/user.slice/session-1.scope\n", "user.slice/session-1.scope/cgroup.controllers": full,
			"user.slice/session-1.scope/cgroup.procs": fmt.Sprintf("812\n%d\n", pid),
		},
		scope: true,
		want: Delegation{
			Parent: "/system.slice/benchd-4242.scope", From: "/system.slice/benchd-4242.scope",
			Self: "/system.slice/benchd-4242.scope/supervisor", Scope: "benchd-4242.scope",
			Enabled: []string{"memory", "pids", "cpu"},
		},
		wantFile: map[string]string{"system.slice/benchd-4242.scope/supervisor/cgroup.procs": fmt.Sprint(pid)},
	}, {
		name: "unit without Delegate=yes",
		files: map[string]string{
			"self": "0::/" + svc + "\n", svc + "/cgroup.controllers": "pids\n",
			svc + "/cgroup.procs": fmt.Sprintln(pid),
		},
		wantErr: ErrNoController,
		errHas:  []string{"memory controller is not delegated to /" + svc, "cgroup.controllers lists \"pids\"", "Delegate=yes"},
	}, {
		name: "explicit parent",
		files: map[string]string{
			"self": "0::/" + svc + "\n", "benchd.slice/cgroup.controllers": full,
			"benchd.slice/cgroup.procs": "", "benchd.slice/cgroup.subtree_control": "memory pids cpu\n",
		},
		parent: "/benchd.slice",
		want:   Delegation{Parent: "/benchd.slice", Self: "/" + svc},
	}, {
		name:    "explicit parent that is not absolute",
		files:   map[string]string{"self": "0::/" + svc + "\n"},
		parent:  "benchd.slice",
		wantErr: ErrInvalid,
	}, {
		name:  "v2 root",
		files: map[string]string{"self": "0::/\n"},
		want:  Delegation{Self: "/"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fakeTree(t, tt.files)
			cfg := DelegateConfig{Root: root, Layout: Unified, ProcCgroup: filepath.Join(root, "self"), Pid: pid, Parent: tt.parent}
			cfg.Scope = func(context.Context, int) (string, error) {
				return "", errors.New("no service manager in this test")
			}
			if tt.scope {
				cfg.Scope = func(_ context.Context, p int) (string, error) {
					unit := fmt.Sprintf("benchd-%d.scope", p)
					dir := filepath.Join(root, "system.slice", unit)
					if err := os.MkdirAll(dir, 0o755); err != nil {
						return "", err
					}
					for name, content := range map[string]string{"cgroup.controllers": full, "cgroup.procs": fmt.Sprintln(p), "cgroup.subtree_control": ""} {
						if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
							return "", err
						}
					}
					return unit, os.WriteFile(filepath.Join(root, "self"), []byte("0::/system.slice/"+unit+"\n"), 0o644)
				}
			}
			d, err := Delegate(t.Context(), cfg)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Delegate error = %v, want %v", err, tt.wantErr)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Delegate: %v", err)
			}
			got := Delegation{Parent: d.Parent, From: d.From, Self: d.Self, Scope: d.Scope, Enabled: d.Enabled}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Delegation = %+v, want %+v", got, tt.want)
			}
			for file, want := range tt.wantFile {
				if got := readFakeFile(t, filepath.Join(root, file)); got != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
		})
	}
}

// TestNewBesideLeafFake checks that once a process sits in its leaf, New
// makes groups beside the leaf, in the delegated group, and Cleanup looks
// for leftovers there.
func TestNewBesideLeafFake(t *testing.T) {
	root := fakeTree(t, map[string]string{
		"svc/cgroup.controllers":          "memory pids\n",
		"svc/cgroup.subtree_control":      "memory pids\n",
		"svc/supervisor/cgroup.procs":     "1\n",
		"self":                            "0::/svc/supervisor\n",
		"svc/benchd-c-9-old/cgroup.procs": "",
	})
	g, err := New(t.Context(), Config{Root: root, Layout: Unified, ProcCgroup: filepath.Join(root, "self"), Name: "a1", SampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.abandon()
	if got, want := g.Path(), "/svc/a1"; got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	own, err := readProcCgroup(filepath.Join(root, "self"))
	if err != nil {
		t.Fatal(err)
	}
	bases, err := cleanupBases(Config{Root: root}, Unified, own, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(bases) != 1 || bases[0].rel != "/svc" {
		t.Errorf("cleanup bases = %+v, want the delegated group /svc", bases)
	}
}

// TestCPUWeightWithoutCPUFake: where the cpu controller is not offered (a
// v2 root whose subtree_control lacks it, as systemd leaves it until a
// unit asks), a weight alone is dropped, and a quota is still an error.
func TestCPUWeightWithoutCPUFake(t *testing.T) {
	root := fakeTree(t, map[string]string{"cgroup.subtree_control": "memory pids\n", "self": "0::/\n"})
	cfg := Config{Root: root, Layout: Unified, ProcCgroup: filepath.Join(root, "self"), Name: "a1", Intermediate: "bd-2", CPUWeight: 50, SampleInterval: -1}
	g, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New with a weight and no cpu controller: %v", err)
	}
	defer g.abandon()
	if got, want := readFakeFile(t, filepath.Join(root, "bd-2/cgroup.subtree_control")), "+memory +pids"; got != want {
		t.Errorf("intermediate subtree_control = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(root, "bd-2/a1/cpu.weight")); err == nil {
		t.Error("cpu.weight written where the controller is not offered")
	}
	cfg.Name, cfg.CPUQuota = "a2", 50*time.Millisecond
	if _, err := New(t.Context(), cfg); !errors.Is(err, ErrNoController) {
		t.Errorf("New with a quota and no cpu controller: error %v, want ErrNoController", err)
	}
}
