package agents

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakePrefix lays out an install prefix with the files the built-in
// presets look for.
func fakePrefix(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{
		"node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
		"node_modules/@anthropic-ai/claude-code/bin/claude.exe",
		"node_modules/@qwen-code/qwen-code/cli-entry.js",
	} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "node_modules/.bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../@anthropic-ai/claude-code/bin/claude.exe", filepath.Join(bin, "claude")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBuiltins(t *testing.T) {
	prefix := fakePrefix(t)
	for _, tc := range []struct {
		name, exe, keyEnv, urlEnv, urlWant string
		argWant                            []string
	}{
		{"codex", "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", "OPENAI_API_KEY", "", "",
			[]string{"exec", "--dangerously-bypass-approvals-and-sandbox", "model_providers.benchd.base_url=http://api.model.test:8080/v1", "check_for_update_on_startup=false", "analytics.enabled=false"}},
		{"claude", "node_modules/@anthropic-ai/claude-code/bin/claude.exe", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "http://api.model.test:8080",
			[]string{"-p", "--dangerously-skip-permissions"}},
		{"qwen", "node_modules/@qwen-code/qwen-code/cli-entry.js", "OPENAI_API_KEY", "OPENAI_BASE_URL", "http://api.model.test:8080/v1",
			[]string{"--yolo", "--auth-type", "openai"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Find(tc.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.APIKeyEnv != tc.keyEnv {
				t.Errorf("api_key_env: got %q, want %q", p.APIKeyEnv, tc.keyEnv)
			}
			c, err := p.Resolve(Input{Model: "m-1", BaseURLs: map[string]string{"model": "http://api.model.test:8080"}, EnvNames: []string{tc.keyEnv}, Home: "/home/agent", Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := c.Argv[0], filepath.Join(prefix, tc.exe); got != want {
				t.Errorf("executable: got %s, want %s", got, want)
			}
			if !slices.Contains(c.Argv, "m-1") || c.Model != "m-1" {
				t.Errorf("model: argv %q, Model %q, want m-1 in both", c.Argv, c.Model)
			}
			for _, a := range tc.argWant {
				if !slices.Contains(c.Argv, a) {
					t.Errorf("argv %q lacks %q", c.Argv, a)
				}
			}
			if !strings.Contains(c.Argv[len(c.Argv)-1], "{plan}") {
				t.Errorf("prompt %q does not name {plan}", c.Argv[len(c.Argv)-1])
			}
			if tc.urlEnv != "" && !slices.Contains(c.Env, tc.urlEnv+"="+tc.urlWant) {
				t.Errorf("env %q lacks %s=%s", c.Env, tc.urlEnv, tc.urlWant)
			}
			for _, kv := range c.Env {
				if strings.HasPrefix(kv, tc.keyEnv+"=") {
					t.Errorf("the preset sets the API key: %s", kv)
				}
			}
			// The install tree is outside the sandbox's root: the
			// preset binds it.
			if !slices.Equal(c.Binds, []string{prefix}) {
				t.Errorf("binds: got %q, want [%s]", c.Binds, prefix)
			}
			for _, f := range c.Files {
				if !strings.HasPrefix(f.Path, "/home/agent/") {
					t.Errorf("file %s is outside $HOME", f.Path)
				}
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	prefix := fakePrefix(t)
	p, err := Find("claude", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"no gateway", Input{EnvNames: []string{"ANTHROPIC_API_KEY"}, Prefix: prefix}, "--gateway model="},
		{"other gateway", Input{BaseURLs: map[string]string{"other": "http://h:1"}, EnvNames: []string{"ANTHROPIC_API_KEY"}, Prefix: prefix}, "--gateway model="},
		{"no key", Input{BaseURLs: map[string]string{"model": "http://h:1"}, Prefix: prefix}, "--env ANTHROPIC_API_KEY"},
		{"not installed", Input{BaseURLs: map[string]string{"model": "http://h:1"}, EnvNames: []string{"ANTHROPIC_API_KEY"}, Prefix: t.TempDir()}, "not installed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Resolve(tc.in)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
	c, err := p.Resolve(Input{BaseURLs: map[string]string{"model": "http://api.anthropic.com"}, EnvNames: []string{"ANTHROPIC_API_KEY"}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Env, "ANTHROPIC_BASE_URL=http://api.anthropic.com") {
		t.Errorf("got env %q, want the gateway's base URL", c.Env)
	}
	if c.Model != p.Model {
		t.Errorf("default model: got %q, want %q", c.Model, p.Model)
	}
}

func TestUserPresets(t *testing.T) {
	sys, user := t.TempDir(), t.TempDir()
	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(sys, "mine", `name = "mine"
command = ["sys"]`)
	write(user, "mine", `name = "mine"
command = ["/bin/echo", "{model}"]
model = "x"
binds = ["/srv/models", "{prefix}/share"]
[env]
A = "{home}/a"
[files]
".mine/conf" = "model={model}"`)
	write(user, "codex", `name = "codex"
command = ["/bin/true"]`)
	write(user, "wrongname", `name = "other"
command = ["x"]`)
	write(user, "badkey", `name = "badkey"
command = ["x"]
colour = "red"`)
	write(user, "secret", `name = "secret"
command = ["x"]
api_key_env = "K"
[env]
K = "sk-live"`)
	write(user, "escape", `name = "escape"
command = ["x"]
[files]
"../etc/passwd" = ""`)
	for name, bind := range map[string]string{"relbind": "srv", "dotbind": "/srv/../etc", "rootbind": "/", "prefixdot": "{prefix}/../etc", "midprefix": "/x{prefix}"} {
		write(user, name, "name = \""+name+"\"\ncommand = [\"x\"]\nbinds = [\""+bind+"\"]\n")
	}
	dirs := []string{sys, user}

	p, err := Find("mine", dirs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Resolve(Input{Home: "/home/agent"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(c.Argv, " "), "/bin/echo x"; got != want {
		t.Errorf("argv: got %q, want %q (the user's file wins)", got, want)
	}
	if got, want := strings.Join(c.Env, ","), "A=/home/agent/a"; got != want {
		t.Errorf("env: got %q, want %q", got, want)
	}
	if len(c.Files) != 1 || c.Files[0].Path != "/home/agent/.mine/conf" || string(c.Files[0].Data) != "model=x" {
		t.Errorf("files: got %+v", c.Files)
	}
	if want := []string{"/srv/models", DefaultPrefix + "/share"}; !slices.Equal(c.Binds, want) {
		t.Errorf("binds: got %q, want %q", c.Binds, want)
	}
	if p, err := Find("codex", dirs); err != nil || p.Command[0] != "/bin/true" {
		t.Errorf("override of a built-in: got %v, %v", p, err)
	}
	for _, name := range []string{"wrongname", "badkey", "secret", "escape", "relbind", "dotbind", "rootbind", "prefixdot", "midprefix"} {
		t.Run(name, func(t *testing.T) {
			if _, err := Find(name, dirs); !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
		})
	}
	for _, name := range []string{"nope", "python3 agent.py", "/usr/bin/x"} {
		if _, err := Find(name, dirs); !errors.Is(err, ErrNotFound) {
			t.Errorf("Find(%q): got %v, want ErrNotFound", name, err)
		}
	}
	if got := Builtin(); !slices.Equal(got, []string{"claude", "codex", "qwen"}) {
		t.Errorf("built-ins: got %v", got)
	}
}
