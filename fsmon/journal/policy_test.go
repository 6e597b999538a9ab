package journal

import "testing"

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"*.py", "a.py", true},
		{"*.py", "src/pkg/a.py", true},
		{"*.py", "src/a.pyc", false},
		// The last segment only: a directory named like an allowed file
		// does not allow what is below it.
		{"*.py", "src/evil.py/notes.txt", false},
		{"*.py", "evil.py/deeper/x.sh", false},
		{"*.py", "src/evil.py", true},
		{"__pycache__/", "__pycache__", true},
		{"__pycache__/", "src/__pycache__/m.pyc", true},
		{"__pycache__/", "src/__pycache__/sub/m.pyc", true},
		{"__pycache__/", "src/__pycache__x/m.pyc", false},
		{"src/counter.py", "src/counter.py", true},
		{"src/counter.py", "x/src/counter.py", false},
		{"src/counter.py", "src/counter.py/x", false},
		{"src/**/*.py", "src/a.py", true},
		{"src/**/*.py", "src/a/b/c.py", true},
		{"src/**/*.py", "src/a.py/x.txt", false},
		{"kv/**", "kv/seg/0001.dat", true},
		{"kv/**", "kvx/a", false},
		{"docs/", "docs/a/b.md", true},
		{"docs/", "src/docs/a.md", true}, // any depth, as "__pycache__/"
	}
	for _, tt := range tests {
		if got := MatchGlob(tt.glob, tt.path); got != tt.want {
			t.Errorf("MatchGlob(%q, %q): got %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
}

// TestPolicyDirectoryNamedLikeAFile: under allow = ["*.py"] an agent may
// make a directory x.py, but not change what it puts below it.
func TestPolicyDirectoryNamedLikeAFile(t *testing.T) {
	p := Policy{Allow: []string{"*.py"}, Ignore: []string{"__pycache__/", "*.tmp"}}
	for path, want := range map[string]Decision{
		"x.py":                      Allowed,
		"x.py/notes.txt":            Denied,
		"x.py/conftest.py":          Allowed,
		"x.py/__pycache__/a.pyc":    Ignored,
		"a.tmp/payload.sh":          Denied,
		"src/__pycache__/c.pyc":     Ignored,
		"tests/test_public.py.orig": Denied,
	} {
		if got := p.Decide(path); got != want {
			t.Errorf("Decide(%q): got %s, want %s", path, got, want)
		}
	}
}
