package tasks

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const validManifest = `
[task]
id = "rt-99"
name = "Example"
description = "An example bundle."

[metadata]
category = "implement"
tags = ["python"]

[agent]
timeout_sec = 300

[verifier]
timeout_sec = 30

[environment]
memory_mb = 512
allow_internet = false
binds = ["/usr/share/dict"]

[bench]
world = "work-files"
difficulty = ["injected-fault"]

[bench.policy]
allow = ["src/counter.py"]
ignore = ["__pycache__/", "*.pyc"]

[bench.grader]
kind = "pytest"
public = ["tests/test_public.py"]
hidden = ["test_hidden.py"]
`

// writeBundle lays down a valid bundle in a temp dir, then applies edits
// (path -> content; an empty content removes the path).
func writeBundle(t *testing.T, edits map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rt-99-example")
	files := map[string]string{
		"task.toml":                          validManifest,
		"instruction.md":                     "Fix it.\n",
		"workspace/src/counter.py":           "x = 1\n",
		"tests/test_hidden.py":               "def test_x(): pass\n",
		"solution/files/src/counter.py":      "x = 2\n",
		"attempts/null/expect.toml":          "pass = false\ncode = \"tests_failed\"\n",
		"attempts/edit-tests/expect.toml":    "pass = false\ncode = \"wrong_files\"\ndelete = [\"tests/test_public.py\"]\nnote = \"deletes the tests\"\n",
		"attempts/edit-tests/files/src/a.py": "y = 1\n",
	}
	for k, v := range edits {
		files[k] = v
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if content == "" {
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadValid(t *testing.T) {
	dir := writeBundle(t, nil)
	task, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"id", task.ID, "rt-99"},
		{"name", task.Name, "Example"},
		{"category", task.Category, "implement"},
		{"tags", task.Tags, []string{"python"}},
		{"agent timeout", task.AgentTimeout, 300 * time.Second},
		{"verifier timeout", task.VerifierTimeout, 30 * time.Second},
		{"memory", task.MemoryMB, 512},
		{"internet", task.AllowInternet, false},
		{"binds", task.Binds, []string{"/usr/share/dict"}},
		{"world", task.World, "work-files"},
		{"difficulty", task.Difficulty, []string{TagInjectedFault}},
		{"allow", task.Policy.Allow, []string{"src/counter.py"}},
		{"ignore", task.Policy.Ignore, []string{"__pycache__/", "*.pyc"}},
		{"kind", task.Grader.Kind, KindPytest},
		{"params", task.Grader.Params, map[string]any{"public": []any{"tests/test_public.py"}, "hidden": []any{"test_hidden.py"}}},
		{"attempts", len(task.Attempts), 2},
		{"attempt 0", task.Attempts[0].Name, "edit-tests"},
		{"attempt 0 delete", task.Attempts[0].Delete, []string{"tests/test_public.py"}},
		{"attempt 0 expect", task.Attempts[0].Expect, Expect{Pass: false, Code: "wrong_files"}},
		{"attempt 0 note", task.Attempts[0].Note, "deletes the tests"},
		{"attempt 0 dir", task.Attempts[0].Dir, filepath.Join(dir, "attempts", "edit-tests", "files")},
		{"attempt 1", task.Attempts[1].Name, "null"},
		{"workspace", task.WorkspaceDir(), filepath.Join(dir, "workspace")},
		{"tests", task.TestsDir(), filepath.Join(dir, "tests")},
		{"solution", task.SolutionDir(), filepath.Join(dir, "solution", "files")},
		{"instruction", task.InstructionPath(), filepath.Join(dir, "instruction.md")},
		{"reference", task.Reference().Expect, Expect{Pass: true, Code: CodePass}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

// TestLoadCPUs: [environment] cpus is a number of CPUs, integer or not;
// absent, it is 0 (no quota).
func TestLoadCPUs(t *testing.T) {
	for _, tt := range []struct {
		line string
		want float64
	}{
		{"", 0},
		{"cpus = 2", 2},
		{"cpus = 1.5", 1.5},
		{"cpus = 0.25", 0.25},
	} {
		t.Run(tt.line, func(t *testing.T) {
			m := strings.Replace(validManifest, "memory_mb = 512", "memory_mb = 512\n"+tt.line, 1)
			task, err := Load(writeBundle(t, map[string]string{"task.toml": m}))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if task.CPUs != tt.want {
				t.Errorf("got CPUs %v, want %v", task.CPUs, tt.want)
			}
		})
	}
}

// TestLoadStorageMB: [environment] storage_mb is an integer number of
// MiB; absent, it is DefaultStorageMB.
func TestLoadStorageMB(t *testing.T) {
	for _, tt := range []struct {
		line string
		want int64
	}{
		{"", DefaultStorageMB},
		{"storage_mb = 16", 16},
		{"storage_mb = 2048", 2048},
		{"storage_mb = 1048576", MaxStorageMB},
	} {
		t.Run(tt.line, func(t *testing.T) {
			m := strings.Replace(validManifest, "memory_mb = 512", "memory_mb = 512\n"+tt.line, 1)
			task, err := Load(writeBundle(t, map[string]string{"task.toml": m}))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if task.StorageMB != tt.want {
				t.Errorf("got StorageMB %v, want %v", task.StorageMB, tt.want)
			}
		})
	}
}

func TestLoadDefaultsAndParamsTable(t *testing.T) {
	m := strings.Replace(validManifest, "[agent]\ntimeout_sec = 300\n", "", 1)
	m = strings.Replace(m, "public = [\"tests/test_public.py\"]\nhidden = [\"test_hidden.py\"]\n",
		"[bench.grader.params]\nhidden = [\"h.py\"]\n", 1)
	task, err := Load(writeBundle(t, map[string]string{"task.toml": m}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if task.AgentTimeout != DefaultAgentTimeout {
		t.Errorf("agent timeout: got %v, want %v", task.AgentTimeout, DefaultAgentTimeout)
	}
	if want := map[string]any{"hidden": []any{"h.py"}}; !reflect.DeepEqual(task.Grader.Params, want) {
		t.Errorf("params: got %#v, want %#v", task.Grader.Params, want)
	}
}

func TestLoadInvalid(t *testing.T) {
	repl := func(old, new string) map[string]string {
		return map[string]string{"task.toml": strings.Replace(validManifest, old, new, 1)}
	}
	tests := []struct {
		name  string
		edits map[string]string
		want  string // substring of the error
	}{
		{"no manifest", map[string]string{"task.toml": ""}, "no task.toml"},
		{"bad toml", map[string]string{"task.toml": "[task\n"}, "task.toml"},
		{"unknown key", repl("[metadata]", "[metadata]\ncolour = \"red\""), "unknown keys metadata.colour"},
		{"id with slash", repl(`id = "rt-99"`, `id = "../x"`), `id "../x"`},
		{"id upper case", repl(`id = "rt-99"`, `id = "RT-99"`), `id "RT-99"`},
		{"id empty", repl(`id = "rt-99"`, `id = ""`), `id ""`},
		{"no name", repl(`name = "Example"`, `name = " "`), "name is empty"},
		{"negative timeout", repl("timeout_sec = 300", "timeout_sec = -1"), "[agent] timeout_sec -1"},
		{"zero verifier timeout", repl("[verifier]\ntimeout_sec = 30\n", "[verifier]\ntimeout_sec = 0\n"), "[verifier] timeout_sec 0"},
		{"negative memory", repl("memory_mb = 512", "memory_mb = -5"), "memory_mb -5"},
		{"zero cpus", repl("memory_mb = 512", "memory_mb = 512\ncpus = 0"), "[environment] cpus 0: "},
		{"negative cpus", repl("memory_mb = 512", "memory_mb = 512\ncpus = -2"), "[environment] cpus -2: "},
		{"too few cpus", repl("memory_mb = 512", "memory_mb = 512\ncpus = 0.001"), "[environment] cpus 0.001: "},
		{"too many cpus", repl("memory_mb = 512", "memory_mb = 512\ncpus = 5000"), "[environment] cpus 5000: "},
		{"nan cpus", repl("memory_mb = 512", "memory_mb = 512\ncpus = nan"), "[environment] cpus NaN: "},
		{"cpus a string", repl("memory_mb = 512", "memory_mb = 512\ncpus = \"two\""), `[environment] cpus "two": want a number`},
		{"zero storage", repl("memory_mb = 512", "memory_mb = 512\nstorage_mb = 0"), "[environment] storage_mb 0: want 16 to 1048576 MiB"},
		{"negative storage", repl("memory_mb = 512", "memory_mb = 512\nstorage_mb = -64"), "[environment] storage_mb -64: "},
		{"too little storage", repl("memory_mb = 512", "memory_mb = 512\nstorage_mb = 15"), "[environment] storage_mb 15: "},
		{"too much storage", repl("memory_mb = 512", "memory_mb = 512\nstorage_mb = 1048577"), "[environment] storage_mb 1048577: "},
		{"fractional storage", repl("memory_mb = 512", "memory_mb = 512\nstorage_mb = 1.5"), "[environment] storage_mb 1.5: want an integer"},
		{"storage a string", repl("memory_mb = 512", "memory_mb = 512\nstorage_mb = \"1G\""), `[environment] storage_mb "1G": want an integer`},
		{"relative bind", repl(`binds = ["/usr/share/dict"]`, `binds = ["usr/share/dict"]`), `binds "usr/share/dict"`},
		{"unclean bind", repl(`binds = ["/usr/share/dict"]`, `binds = ["/usr/share/../../etc"]`), `binds "/usr/share/../../etc"`},
		{"root bind", repl(`binds = ["/usr/share/dict"]`, `binds = ["/"]`), `binds "/"`},
		{"unknown difficulty", repl(`difficulty = ["injected-fault"]`, `difficulty = ["hard"]`), `difficulty "hard"`},
		{"empty allow", repl(`allow = ["src/counter.py"]`, `allow = []`), "allow is empty"},
		{"absolute glob", repl(`allow = ["src/counter.py"]`, `allow = ["/etc/passwd"]`), "bad glob"},
		{"dotdot glob", repl(`allow = ["src/counter.py"]`, `allow = ["../x"]`), "bad glob"},
		{"malformed glob", repl(`ignore = ["__pycache__/", "*.pyc"]`, `ignore = ["[a"]`), "bad glob"},
		{"no grader", repl("[bench.grader]\nkind = \"pytest\"", "[bench.x]\nkind = \"pytest\""), "unknown keys"},
		{"unknown kind", repl(`kind = "pytest"`, `kind = "magic"`), `kind "magic"`},
		{"kind not a string", repl(`kind = "pytest"`, `kind = 3`), "kind is missing"},
		{"no instruction", map[string]string{"instruction.md": ""}, "missing instruction.md"},
		{"no workspace", map[string]string{"workspace/src/counter.py": "", "workspace": ""}, "missing workspace"},
		{"no tests", map[string]string{"tests/test_hidden.py": "", "tests": ""}, "missing tests"},
		{"no solution", map[string]string{"solution/files/src/counter.py": "", "solution": ""}, "missing solution/files"},
		{"attempt without expect", map[string]string{"attempts/null/expect.toml": "", "attempts/null/files/a.py": "x\n"}, "no expect.toml"},
		{"attempt without pass", map[string]string{"attempts/null/expect.toml": "code = \"tests_failed\"\n"}, "pass is missing"},
		{"attempt without code", map[string]string{"attempts/null/expect.toml": "pass = false\n"}, `code ""`},
		{"attempt bad code", map[string]string{"attempts/null/expect.toml": "pass = false\ncode = \"Tests Failed\"\n"}, `code "Tests Failed"`},
		{"passing attempt with failure code", map[string]string{"attempts/null/expect.toml": "pass = true\ncode = \"tests_failed\"\n"}, "exactly when pass is true"},
		{"failing attempt with pass code", map[string]string{"attempts/null/expect.toml": "pass = false\ncode = \"pass\"\n"}, "exactly when pass is true"},
		{"attempt unknown key", map[string]string{"attempts/null/expect.toml": "pass = false\ncode = \"x\"\nreward = 1\n"}, "unknown key reward"},
		{"attempt escaping delete", map[string]string{"attempts/null/expect.toml": "pass = false\ncode = \"x\"\ndelete = [\"../etc\"]\n"}, `path "../etc"`},
		{"attempt absolute delete", map[string]string{"attempts/null/expect.toml": "pass = false\ncode = \"x\"\ndelete = [\"/etc\"]\n"}, `path "/etc"`},
		{"attempt bad name", map[string]string{"attempts/Bad Name/expect.toml": "pass = false\ncode = \"x\"\n"}, `attempt name "Bad Name"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeBundle(t, tt.edits))
			if err == nil {
				t.Fatalf("Load: got nil error, want one containing %q", tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("got error %v, want one wrapping ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestFind(t *testing.T) {
	root := filepath.Dir(writeBundle(t, nil))
	// A directory without a manifest is not a bundle.
	if err := os.MkdirAll(filepath.Join(root, "rt-98-notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id      string
		wantErr error
	}{
		{"rt-99", nil},
		{"rt-99-example", nil},
		{"RT-99", nil},
		{"Rt-99-Example", nil},
		{"RT-98", ErrNotFound},
		{"rt-98", ErrNotFound},
		{"rt-9", ErrNotFound},
		{"../rt-99", ErrInvalid},
		{"rt-99/..", ErrInvalid},
		{"", ErrInvalid},
		{".", ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			task, err := Find(root, tt.id)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Find(%q): got error %v, want %v", tt.id, err, tt.wantErr)
			}
			if err == nil && task.ID != "rt-99" {
				t.Errorf("Find(%q): got task %q, want rt-99", tt.id, task.ID)
			}
		})
	}
}

func TestLoadAllSortedAndUnique(t *testing.T) {
	root := t.TempDir()
	for _, id := range []string{"rt-03", "rt-01", "rt-02"} {
		src := writeBundle(t, map[string]string{"task.toml": strings.Replace(validManifest, "rt-99", id, 1)})
		if err := CopyTree(src, filepath.Join(root, id+"-x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("not a bundle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	all, err := LoadAll(root)
	if err != nil {
		t.Fatalf("LoadAll: %v", err)
	}
	var ids []string
	for _, task := range all {
		ids = append(ids, task.ID)
	}
	if want := []string{"rt-01", "rt-02", "rt-03"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("got ids %v, want %v", ids, want)
	}
	if err := CopyTree(filepath.Join(root, "rt-01-x"), filepath.Join(root, "rt-01-y")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAll(root); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `id "rt-01" is used by`) {
		t.Errorf("LoadAll with a duplicate id: got %v, want a duplicate-id error", err)
	}
}

func TestDefaultDirEnv(t *testing.T) {
	t.Setenv("BENCHD_TASKS", "/srv/tasks")
	if got := DefaultDir(); got != "/srv/tasks" {
		t.Errorf("got %q, want /srv/tasks", got)
	}
	t.Setenv("BENCHD_TASKS", "")
	if got := DefaultDir(); got == "" {
		t.Error("got an empty default dir")
	}
}

// TestFindAnyDirectoryName: a bundle's id is its task.toml's, whatever
// its directory is named; a directory named after another id does not
// take that id.
func TestFindAnyDirectoryName(t *testing.T) {
	root := t.TempDir()
	put := func(dir, id string) {
		src := writeBundle(t, map[string]string{"task.toml": strings.Replace(validManifest, "rt-99", id, 1)})
		if err := CopyTree(src, filepath.Join(root, dir)); err != nil {
			t.Fatal(err)
		}
	}
	put("network-counter", "nc-07")
	put("nc-08-lookalike", "zz-01") // named like nc-08, is zz-01
	tests := []struct {
		id, want string
		wantErr  error
	}{
		{"nc-07", "nc-07", nil},
		{"NC-07", "nc-07", nil},
		{"network-counter", "nc-07", nil}, // a directory's whole name is accepted as before
		{"zz-01", "zz-01", nil},
		{"nc-08", "", ErrNotFound}, // a directory named like nc-08 whose id is zz-01
		{"nc-09", "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			task, err := Find(root, tt.id)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Find(%q): got error %v, want %v", tt.id, err, tt.wantErr)
			}
			if err == nil && task.ID != tt.want {
				t.Errorf("Find(%q): got task %q, want %q", tt.id, task.ID, tt.want)
			}
		})
	}
}

// TestLoadEachBroken: a malformed bundle is named by its directory and
// does not hide the others; LoadAll still refuses the store.
func TestLoadEachBroken(t *testing.T) {
	root := t.TempDir()
	for _, id := range []string{"rt-01", "rt-02"} {
		src := writeBundle(t, map[string]string{"task.toml": strings.Replace(validManifest, "rt-99", id, 1)})
		if err := CopyTree(src, filepath.Join(root, id)); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(root, "rt-03-broken")
	if err := CopyTree(filepath.Join(root, "rt-01"), bad); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "task.toml"), []byte("[task\nid = \"rt-03\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, broken, err := LoadEach(root)
	if err != nil {
		t.Fatalf("LoadEach: %v", err)
	}
	if len(ts) != 2 || ts[0].ID != "rt-01" || ts[1].ID != "rt-02" {
		t.Errorf("got %d tasks, want rt-01 and rt-02", len(ts))
	}
	if len(broken) != 1 || broken[0].Dir != bad || !strings.Contains(broken[0].Error(), bad) || !errors.Is(broken[0], ErrInvalid) {
		t.Fatalf("got broken %v, want one invalid bundle naming %s", broken, bad)
	}
	if _, err := LoadAll(root); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadAll: got %v, want the broken bundle's error", err)
	}
	if _, _, err := LoadEach(filepath.Join(root, "missing")); err == nil {
		t.Errorf("LoadEach of a missing root: got no error")
	}
}
