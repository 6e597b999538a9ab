package repo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScriptsAnswerHelp runs every script in scripts/ with --help and
// with -h, from a copy of it, under a PATH whose only tools are a shell,
// awk and decoys of what a script would set up with (apt-get, dpkg-query,
// go, npm, node, git, mkdir, qemu...): each decoy called leaves a mark.
// Each must exit 0, print its usage, call no decoy, and leave the copy's
// tree as it was.
func TestScriptsAnswerHelp(t *testing.T) {
	names, err := filepath.Glob("scripts/*")
	if err != nil || len(names) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	bin := t.TempDir()
	marks := t.TempDir()
	for _, tool := range []string{"bash", "sh", "awk"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if p, err = filepath.EvalSymlinks(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for _, decoy := range []string{"apt-get", "dpkg-query", "go", "npm", "node", "git", "mkdir", "mktemp",
		"dirname", "id", "cp", "rm", "qemu-system-x86_64", "systemctl", "python3", "curl", "wget", "sudo"} {
		script := "#!" + filepath.Join(bin, "sh") + "\n: >" + filepath.Join(marks, decoy) + "\nexit 1\n"
		if err := os.WriteFile(filepath.Join(bin, decoy), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		for _, flag := range []string{"--help", "-h"} {
			t.Run(filepath.Base(name)+" "+flag, func(t *testing.T) {
				root := t.TempDir()
				copied := filepath.Join(root, "scripts", filepath.Base(name))
				src, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(filepath.Dir(copied), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(copied, src, 0o755); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(filepath.Join(bin, "bash"), copied, flag)
				if strings.HasPrefix(string(src), "#!/bin/sh") {
					cmd = exec.Command(filepath.Join(bin, "sh"), copied, flag)
				}
				cmd.Dir = root
				cmd.Env = []string{"PATH=" + bin, "HOME=" + root}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("got %v, output\n%s", err, out)
				}
				if !strings.Contains(string(out), "usage") || !strings.Contains(string(out), "./scripts/"+filepath.Base(name)) {
					t.Errorf("got output\n%s\nwant its usage, naming ./scripts/%s", out, filepath.Base(name))
				}
				if called, _ := os.ReadDir(marks); len(called) > 0 {
					for _, c := range called {
						t.Errorf("--help called %s", c.Name())
						os.Remove(filepath.Join(marks, c.Name()))
					}
				}
				var tree []string
				filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
					tree = append(tree, p)
					return nil
				})
				if want := []string{root, filepath.Dir(copied), copied}; !slices.Equal(tree, want) {
					t.Errorf("got tree %v after %s, want %v", tree, flag, want)
				}
			})
		}
	}
}

// TestSetupDepsLeavesAgentsAlone: scripts/setup-deps, as the demo and
// the install run it, does not install the agent CLIs (npm); with
// --tests (scripts/test, CI) and --agents it does. apt and Go are
// stubs that say everything is there.
func TestSetupDepsLeavesAgentsAlone(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "sh", "grep", "dirname"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	stub := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!"+filepath.Join(bin, "sh")+"\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stub(bin, "dpkg-query", "printf 'install ok installed'")
	stub(bin, "go", "exit 0")
	stub(bin, "apt-get", "echo apt-get called >&2; exit 1")
	src, err := os.ReadFile("scripts/setup-deps")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args       []string
		wantAgents bool
	}{{nil, false}, {[]string{"--tests"}, true}, {[]string{"--agents"}, true}} {
		t.Run(strings.Join(append([]string{"setup-deps"}, tc.args...), " "), func(t *testing.T) {
			root := t.TempDir()
			scripts := filepath.Join(root, "scripts")
			os.Mkdir(scripts, 0o755)
			if err := os.WriteFile(filepath.Join(scripts, "setup-deps"), src, 0o755); err != nil {
				t.Fatal(err)
			}
			// go is /usr/local/go/bin/go, which setup-deps puts first:
			// a module with nothing to download.
			if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.test/x\n\ngo 1.22\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			mark := filepath.Join(root, "agents-installed")
			stub(scripts, "setup-agents", ": >"+mark)
			cmd := exec.Command(filepath.Join(bin, "bash"), append([]string{filepath.Join(scripts, "setup-deps")}, tc.args...)...)
			gohome, err := os.MkdirTemp("", "setup-deps-go-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(gohome)
			cmd.Env = []string{"PATH=" + bin, "HOME=/nonexistent", "GOPATH=" + gohome, "GOCACHE=" + gohome + "/cache", "GOTOOLCHAIN=local"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("got %v, output\n%s", err, out)
			}
			if _, err := os.Stat(mark); (err == nil) != tc.wantAgents {
				t.Errorf("agent CLIs installed: got %v, want %v", err == nil, tc.wantAgents)
			}
		})
	}
	// The demo runs it without asking for the agents.
	demo, _ := os.ReadFile("scripts/demo")
	if !strings.Contains(string(demo), "./scripts/setup-deps\n") || strings.Contains(string(demo), "setup-agents\n") {
		t.Error("scripts/demo must run ./scripts/setup-deps alone, without the agent CLIs")
	}
}

// TestAgentsDocTemporaryFiles: docs/agents.md says the editors'
// temporary files are ignored by the built-in tasks; each of their
// policies must list both patterns, or the doc is wrong.
func TestAgentsDocTemporaryFiles(t *testing.T) {
	doc, err := os.ReadFile("docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "The built-in tasks list these names in\ntheir policy's `ignore` (`\"*.tmp.*\"`, `\"*.tmp\"`") {
		t.Error("docs/agents.md no longer says the built-in tasks ignore the editors' temporary files")
	}
	bundles, _ := filepath.Glob("tasks/rt-*/task.toml")
	if len(bundles) == 0 {
		t.Fatal("no built-in task bundle")
	}
	for _, b := range bundles {
		toml, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(toml), "\n") {
			if strings.HasPrefix(line, "ignore = ") && !(strings.Contains(line, `"*.tmp.*"`) && strings.Contains(line, `"*.tmp"`)) {
				t.Errorf("%s: %s lacks the temporary-file patterns docs/agents.md promises", b, line)
			}
		}
		if !strings.Contains(string(toml), "\nignore = ") {
			t.Errorf("%s has no ignore list", b)
		}
	}
}
