package tasks

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, c := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestApplyOverlay(t *testing.T) {
	tests := []struct {
		name    string
		overlay map[string]string // nil: no overlay dir
		deletes []string
		want    map[string]string
		wantErr bool
	}{
		{
			name:    "replace and add",
			overlay: map[string]string{"src/a.py": "new a\n", "src/new/b.py": "b\n"},
			want:    map[string]string{"src/a.py": "new a\n", "src/new/b.py": "b\n", "tests/t.py": "t\n"},
		},
		{
			name:    "delete then overlay",
			overlay: map[string]string{"src/a.py": "new a\n"},
			deletes: []string{"tests/t.py", "missing.py"},
			want:    map[string]string{"src/a.py": "new a\n"},
		},
		{
			name: "nothing",
			want: map[string]string{"src/a.py": "a\n", "tests/t.py": "t\n"},
		},
		{
			name:    "escaping delete",
			deletes: []string{"../outside"},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := t.TempDir()
			write(t, dst, map[string]string{"src/a.py": "a\n", "tests/t.py": "t\n"})
			overlay := filepath.Join(t.TempDir(), "files")
			if tt.overlay != nil {
				write(t, overlay, tt.overlay)
			}
			err := ApplyOverlay(dst, overlay, tt.deletes)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ApplyOverlay: got error %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got := readTree(t, dst); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got tree %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCopyTreeKeepsModesAndLinks(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"bin/run.sh": "#!/bin/sh\n", "data.txt": "d\n"})
	if err := os.Chmod(filepath.Join(src, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("data.txt", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	// A symlink already in dst must be replaced, not written through.
	outside := filepath.Join(t.TempDir(), "victim")
	write(t, filepath.Dir(outside), map[string]string{"victim": "keep\n"})
	if err := os.Symlink(outside, filepath.Join(dst, "data.txt")); err != nil {
		t.Fatal(err)
	}
	if err := CopyTree(src, dst); err != nil {
		t.Fatalf("CopyTree: %v", err)
	}
	got := readTree(t, dst)
	want := map[string]string{"bin/run.sh": "#!/bin/sh\n", "data.txt": "d\n", "link": "-> data.txt"}
	if !reflect.DeepEqual(got, want) {
		keys := make([]string, 0, len(got))
		for k := range got {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Errorf("got tree %v, want %v", got, want)
	}
	fi, err := os.Stat(filepath.Join(dst, "bin/run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("mode: got %v, want 0755", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep\n" {
		t.Errorf("a symlink in dst was written through: victim holds %q", b)
	}
}
