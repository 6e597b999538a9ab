package draw

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/tasks"
)

func writeManifest(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const tomlManifest = `
[[task]]
id = "mail-summary-1"
world = "mail"
difficulty = ["reply-only", "multi-session"]
needs = ["memory-across-sessions"]

[[task]]
id = "files-fix-1"
world = "work-files"
difficulty = ["connector"]
changeset = ["modified src/a.py", "renamed b.txt -> c.txt"]
needs_accounts = true
`

const jsonManifest = `{"id":"mail-summary-1","world":"mail","difficulty":["multi-session","reply-only"],"needs":["memory-across-sessions"]}

{"id":"files-fix-1","world":"work-files","difficulty":["connector"],"changeset":["renamed b.txt -> c.txt","modified src/a.py"],"needs_accounts":true}
`

func TestManifestFormats(t *testing.T) {
	dir := t.TempDir()
	a, err := Load(LoadConfig{Manifests: []string{writeManifest(t, dir, "a.toml", tomlManifest)}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(LoadConfig{Manifests: []string{writeManifest(t, dir, "b.jsonl", jsonManifest)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Tasks) != 2 {
		t.Fatalf("got %d tasks, want 2", len(a.Tasks))
	}
	if got, want := a.Tasks[0].ID, "files-fix-1"; got != want {
		t.Errorf("got first task %q, want %q (sorted by id)", got, want)
	}
	if got, want := a.Tasks[0].Changeset, []string{"modified src/a.py", "renamed b.txt -> c.txt"}; !slices.Equal(got, want) {
		t.Errorf("got changeset %q, want %q", got, want)
	}
	if a.Hash() != b.Hash() {
		t.Errorf("TOML and JSON lines of one library hash differently:\n%s\n%s", a.Canonical(), b.Canonical())
	}
}

func TestManifestDirectory(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, dir, "a.toml", tomlManifest)
	writeManifest(t, dir, "README.md", "not a manifest")
	writeManifest(t, dir, "b.jsonl", `{"id":"notes-x-1","world":"notes","changeset":["added notes/x.md"]}`+"\n")
	lib, err := Load(LoadConfig{Manifests: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range lib.Tasks {
		ids = append(ids, tk.ID)
	}
	if want := []string{"files-fix-1", "mail-summary-1", "notes-x-1"}; !slices.Equal(ids, want) {
		t.Errorf("got %v, want %v", ids, want)
	}
	if _, err := Load(LoadConfig{Manifests: []string{t.TempDir()}}); err == nil {
		t.Error("an empty directory: got no error, want one")
	}
}

func TestCanonical(t *testing.T) {
	lib, err := New([]Task{
		{ID: "b", World: "w", Difficulty: []string{"reply-only", "injected-fault"}, Faults: []string{"timeout"}, Needs: []string{"memory"}},
		{ID: "a", World: "w", Changeset: []string{"modified z", "added y"}, NeedsAccounts: true, NeedsInternet: true, RobotCheck: true},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "benchd-library 1\n" +
		"task a\nworld w\nneeds_accounts\nneeds_internet\nrobot_check\nchange added y\nchange modified z\nend\n" +
		"task b\nworld w\ndifficulty injected-fault\ndifficulty reply-only\nneeds memory\nfault timeout\nend\n"
	if got := string(lib.Canonical()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if h := lib.Hash(); !strings.HasPrefix(h, "sha256:") || len(h) != 7+64 {
		t.Errorf("got hash %q, want sha256: and 64 hex digits", h)
	}
}

func TestHashChanges(t *testing.T) {
	base := Task{ID: "a", World: "w", Difficulty: []string{"connector"}, Changeset: []string{"modified x"}}
	h := func(t0 Task) string {
		lib, err := New([]Task{t0}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return lib.Hash()
	}
	tests := []struct {
		name   string
		change func(*Task)
	}{
		{"id", func(t *Task) { t.ID = "b" }},
		{"world", func(t *Task) { t.World = "v" }},
		{"a tag", func(t *Task) { t.Difficulty = append(t.Difficulty, "approval") }},
		{"needs accounts", func(t *Task) { t.NeedsAccounts = true }},
		{"needs internet", func(t *Task) { t.NeedsInternet = true }},
		{"robot check", func(t *Task) { t.RobotCheck = true }},
		{"a change", func(t *Task) { t.Changeset = []string{"added x"} }},
		{"reply-only with needs", func(t *Task) {
			t.Changeset, t.Difficulty, t.Needs = nil, []string{"reply-only"}, []string{"memory"}
		}},
	}
	want := h(base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.Difficulty = slices.Clone(base.Difficulty)
			tt.change(&c)
			if got := h(c); got == want {
				t.Errorf("got the same hash %s after changing %s", got, tt.name)
			}
		})
	}
}

func TestInvalidTasks(t *testing.T) {
	ok := Task{ID: "a", World: "w", Changeset: []string{"modified x"}}
	tests := []struct {
		name   string
		change func(*Task)
		want   string
	}{
		{"bad id", func(t *Task) { t.ID = "A B" }, "task id"},
		{"no world", func(t *Task) { t.World = "" }, "world"},
		{"unknown tag", func(t *Task) { t.Difficulty = []string{"hard"} }, "difficulty"},
		{"tag twice", func(t *Task) { t.Difficulty = []string{"connector", "connector"} }, "twice"},
		{"reply-only with changes", func(t *Task) { t.Difficulty = []string{"reply-only"} }, "makes 1 change"},
		{"no changes, not reply-only", func(t *Task) { t.Changeset = nil }, "not tagged reply-only"},
		{"needs on a task with changes", func(t *Task) { t.Needs = []string{"memory"} }, "reply-only tasks"},
		{"faults without the tag", func(t *Task) {
			t.Changeset, t.Difficulty, t.Faults = nil, []string{"reply-only"}, []string{"timeout"}
		}, "injected-fault"},
		{"bad change kind", func(t *Task) { t.Changeset = []string{"read x"} }, "want"},
		{"absolute path", func(t *Task) { t.Changeset = []string{"added /etc/passwd"} }, "clean relative"},
		{"path outside", func(t *Task) { t.Changeset = []string{"added ../x"} }, "clean relative"},
		{"change twice", func(t *Task) { t.Changeset = []string{"added x", "added x"} }, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			_, err := New([]Task{c}, nil)
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want ErrInvalid containing %q", err, tt.want)
			}
		})
	}
	if _, err := New([]Task{ok, ok}, nil); err == nil || !strings.Contains(err.Error(), "task a is in") {
		t.Errorf("one id twice: got %v, want an error", err)
	}
	for _, m := range []string{"[[task]]\nid = \"a\"\nwrold = \"w\"\n", `{"id":"a","wrold":"w"}`} {
		if _, err := ParseManifest(strings.NewReader(m), "m"); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("unknown key in %q: got %v, want ErrInvalid", m, err)
		}
	}
}

// builtinDir is the repository's built-in bundles.
const builtinDir = "../tasks"

func TestBundlesJoin(t *testing.T) {
	bundles, err := tasks.LoadAll(builtinDir)
	if err != nil {
		t.Fatal(err)
	}
	var entries []Task
	for _, b := range bundles {
		entries = append(entries, Task{ID: b.ID, Changeset: []string{"modified src/" + b.ID + ".py"}})
	}
	lib, err := New(entries, bundles)
	if err != nil {
		t.Fatal(err)
	}
	if len(lib.Tasks) != len(bundles) {
		t.Fatalf("got %d tasks, want %d", len(lib.Tasks), len(bundles))
	}
	for i, tk := range lib.Tasks {
		if tk.World != bundles[i].World || !slices.Equal(tk.Difficulty, bundles[i].Difficulty) {
			t.Errorf("task %s: got world %q difficulty %v, want the bundle's %q %v", tk.ID, tk.World, tk.Difficulty, bundles[i].World, bundles[i].Difficulty)
		}
	}

	t.Run("a bundle without its changeset", func(t *testing.T) {
		if _, err := New(entries[1:], bundles); err == nil || !strings.Contains(err.Error(), "library index") {
			t.Errorf("got %v, want an error naming benchctl library index", err)
		}
	})
	t.Run("an entry that disagrees with its bundle", func(t *testing.T) {
		bad := slices.Clone(entries)
		bad[0].World = "mail"
		if _, err := New(bad, bundles); err == nil || !strings.Contains(err.Error(), "world") {
			t.Errorf("got %v, want an error about the world", err)
		}
		bad = slices.Clone(entries)
		bad[0].Difficulty = []string{"approval"}
		if _, err := New(bad, bundles); err == nil || !strings.Contains(err.Error(), "difficulty") {
			t.Errorf("got %v, want an error about the difficulty", err)
		}
	})
	t.Run("with a manifest through Load", func(t *testing.T) {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "index.toml"))
		if err != nil {
			t.Fatal(err)
		}
		WriteManifest(f, entries, "index")
		f.Close()
		writeManifest(t, dir, "more.toml", tomlManifest)
		got, err := Load(LoadConfig{Manifests: []string{dir}, TasksDir: builtinDir})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Tasks) != len(bundles)+2 {
			t.Errorf("got %d tasks, want %d", len(got.Tasks), len(bundles)+2)
		}
	})
}

func TestChangeLines(t *testing.T) {
	got := ChangeLines([]apitype.Change{
		{Kind: "modified", Path: "src/b.py", Type: "file"},
		{Kind: "renamed", From: "old.txt", Path: "new.txt", Type: "file"},
		{Kind: "added", Path: "src/a.py", Type: "file"},
	})
	want := []string{"added src/a.py", "modified src/b.py", "renamed old.txt -> new.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, l := range got {
		if _, err := ParseChange(l); err != nil {
			t.Errorf("ParseChange(%q): %v", l, err)
		}
	}
}
