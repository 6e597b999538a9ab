package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	drawFixture = "../../draw/testdata/library.toml"
	drawGolden  = "../../draw/testdata/draw-20261004.list"
)

func TestDraw(t *testing.T) {
	golden, err := os.ReadFile(drawGolden)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	list := filepath.Join(dir, "batch.list")
	code, stdout, stderr := runCLI(t, "", nil, false, "draw", "--library", drawFixture, "--seed", "20261004", "-o", list)
	if code != exitOK {
		t.Fatalf("got exit %d, want 0 (stderr %q)", code, stderr)
	}
	got, err := os.ReadFile(list)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(golden) {
		t.Errorf("the list written differs from %s", drawGolden)
	}
	for _, want := range []string{"169 tasks drawn with seed 20261004, cap 2", "library 312\n", "groups 128\n", "drawn 170\n", "listed 169\n", "worlds 10 of 11\n", "world work-files listed 68 share 40%"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("got stdout\n%s\nwant it to contain %q", stdout, want)
		}
	}

	t.Run("twice, byte for byte", func(t *testing.T) {
		again := filepath.Join(dir, "again.list")
		if code, _, stderr := runCLI(t, "", nil, false, "draw", "--library", drawFixture, "--seed", "20261004", "-o", again); code != exitOK {
			t.Fatalf("got exit %d (stderr %q)", code, stderr)
		}
		b, _ := os.ReadFile(again)
		if string(b) != string(got) {
			t.Error("two draws with one seed wrote different lists")
		}
	})
	t.Run("to stdout", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "", nil, false, "draw", "--library", drawFixture, "--seed", "20261004")
		if code != exitOK || stdout != string(golden) {
			t.Errorf("got exit %d and %d bytes, want 0 and the list (%d bytes)", code, len(stdout), len(golden))
		}
	})
	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "", nil, false, "draw", "--json", "--library", drawFixture, "--seed", "20261004", "--cap", "3", "-o", filepath.Join(dir, "cap3.list"))
		if code != exitOK {
			t.Fatalf("got exit %d (stderr %q)", code, stderr)
		}
		var m struct {
			Output      string `json:"output"`
			Rule        struct{ Seed, Cap int }
			LibrarySize int   `json:"library_size"`
			Groups      int   `json:"groups"`
			List        []any `json:"list"`
		}
		if err := json.Unmarshal([]byte(stdout), &m); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		if m.Rule.Seed != 20261004 || m.Rule.Cap != 3 || m.LibrarySize != 312 || m.Groups != 128 || len(m.List) <= 169 {
			t.Errorf("got %+v (%d listed), want seed 20261004, cap 3, 312 tasks, 128 groups, more than 169 listed", m, len(m.List))
		}
	})
}

func TestDrawVerify(t *testing.T) {
	golden, err := os.ReadFile(drawGolden)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.list", string(golden))
	edited := write("edited.list", strings.Replace(string(golden), "\n3 ", "\n3x ", 1))
	reseeded := write("reseeded.list", strings.Replace(string(golden), "seed 20261004\n", "seed 20261005\n", 1))
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"identical", []string{"--verify", good}, exitOK, "is the rule's list: seed 20261004, cap 2, 169 tasks"},
		{"identical, seed asked", []string{"--verify", good, "--seed", "20261004"}, exitOK, "is the rule's list"},
		{"a line changed", []string{"--verify", edited}, exitNo, "line 14"},
		{"another seed in the list", []string{"--verify", reseeded}, exitNo, "differs from the rule's list"},
		{"not the seed asked", []string{"--verify", good, "--seed", "20261005"}, exitNo, "want seed 20261005"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", nil, false, append([]string{"draw", "--library", drawFixture}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stdout, tt.wantOut) {
				t.Errorf("got stdout %q, want it to contain %q", stdout, tt.wantOut)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "", nil, false, "draw", "--verify", edited, "--library", drawFixture, "--json")
		if code != exitNo {
			t.Errorf("got exit %d, want %d", code, exitNo)
		}
		var m drawVerifyResult
		if err := json.Unmarshal([]byte(stdout), &m); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		if m.Identical || m.Difference == nil || m.Difference.Line != 14 || m.Seed != 20261004 {
			t.Errorf("got %+v, want a difference at line 14 of a list with seed 20261004", m)
		}
	})
}

func TestDrawUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no seed", []string{"--library", drawFixture}, "missing --seed"},
		{"seed not a date", []string{"--library", drawFixture, "--seed", "20261399"}, "not a date"},
		{"seed not a number", []string{"--library", drawFixture, "--seed", "4oct"}, "YYYYMMDD"},
		{"no library", []string{"--seed", "20261004"}, "missing --library"},
		{"cap 0", []string{"--library", drawFixture, "--seed", "20261004", "--cap", "0"}, "want at least 1"},
		{"no such library", []string{"--library", filepath.Join(dir, "none.toml"), "--seed", "20261004"}, "unable to read library"},
		{"verify and -o", []string{"--library", drawFixture, "--verify", drawGolden, "-o", "x"}, "do not go together"},
		{"-o in a missing directory", []string{"--library", drawFixture, "--seed", "20261004", "-o", "/nonexistent-benchd/x.list"}, "-o /nonexistent-benchd/x.list: directory /nonexistent-benchd does not exist"},
		{"no such list", []string{"--library", drawFixture, "--verify", filepath.Join(dir, "none.list")}, "unable to read the list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", nil, false, append([]string{"draw"}, tt.args...)...)
			if code != exitError {
				t.Errorf("got exit %d, want %d", code, exitError)
			}
			if !strings.Contains(stderr, tt.wantErr) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("got stderr %q, want one line containing %q", stderr, tt.wantErr)
			}
		})
	}
}
