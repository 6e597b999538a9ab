package main

import (
	"encoding/json"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

func TestLog(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	tests := []struct {
		name      string
		args      []string
		wantLines int // records shown
		want      []string
		notWant   []string
	}{
		{"timeline", []string{"log", "a-1"}, 12,
			[]string{"SEQ  TIME     PID   COMMAND  OP       PATH", "+0.250s  4242  python3  open     src/counter.py     allowed   ok      flags 0x201",
				"+1.000s  4243  rm       unlink   README.md          denied    EACCES", "create   src/new.py         allowed   ok      mode 0644",
				"12 records of 12; chain intact, head " + fx.attempt.JournalHead[:12] + " is the one stored for a-1"}, nil},
		{"denied only", []string{"log", "--denied", "a-1"}, 1,
			[]string{"8    +1.000s  4243  rm       unlink  README.md  denied    EACCES  -", "1 denied operation of 12"}, []string{"python3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != exitOK {
				t.Fatalf("got exit %d, want 0 (stderr %q)", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("got\n%s\nwant it to contain %q", stdout, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(stdout, w) {
					t.Errorf("got\n%s\nwant it not to contain %q", stdout, w)
				}
			}
			code, stdout, _ = runCLI(t, d.Socket, nil, false, append(tt.args, "--json")...)
			var res logResult
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != exitOK {
				t.Fatalf("--json: got exit %d, %v", code, err)
			}
			if len(res.Records) != tt.wantLines || !res.Verified || res.Head != fx.attempt.JournalHead {
				t.Errorf("--json: got %d records, verified %v, head %s; want %d, true, %s",
					len(res.Records), res.Verified, res.Head, tt.wantLines, fx.attempt.JournalHead)
			}
		})
	}
}

func TestLogHeadMismatch(t *testing.T) {
	fx := newFixture(t)
	fx.attempt.JournalHead = strings.Repeat("0", 64)
	d := newFakeDaemon(t, fx)
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "log", "a-1")
	if code != exitNo {
		t.Errorf("got exit %d, want %d", code, exitNo)
	}
	if !strings.Contains(stderr, "is not the head 0000") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("got stderr %q, want one line saying the head differs", stderr)
	}
	if !strings.Contains(stdout, "README.md") {
		t.Errorf("got stdout %q, want the records shown all the same", stdout)
	}
}

func TestDiff(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	counterDiff := "--- a/src/counter.py\n+++ b/src/counter.py\n@@ -1,5 +1,5 @@\n def count(n):\n     total = 0\n" +
		"-    for i in range(n):\n+    for i in range(n + 1):\n         total += i\n     return total\n"
	newDiff := "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+print('new')\n"
	truncDiff := "--- a/src/counter.py\n+++ b/src/counter.py\n@@ -1,5 +0,0 @@\n-def count(n):\n-    total = 0\n" +
		"-    for i in range(n):\n-        total += i\n-    return total\n"
	tests := []struct {
		name      string
		args      []string
		wantHead  string
		wantDiffs []string
		notWant   []string
	}{
		{"final changeset", []string{"diff", "a-1"}, "# a-1: 2 changes\n#   modified src/counter.py\n#   added src/new.py\n",
			[]string{counterDiff, newDiff}, []string{"__pycache__"}},
		{"all changes", []string{"diff", "--all", "a-1"}, "# a-1: 4 changes\n#   added __pycache__\n",
			[]string{counterDiff, newDiff, "Binary files /dev/null and b/__pycache__/c.pyc differ\n", "# __pycache__: new dir, mode 0755\n"}, nil},
		{"after the truncating open", []string{"diff", "a-1", "--at", "2"},
			"# a-1 after record 2 (+0.250s, open src/counter.py): 1 change since the start\n", []string{truncDiff}, []string{"new.py"}},
		{"after the first release", []string{"diff", "a-1", "--at", "4"},
			"# a-1 after record 4 (+0.500s, release src/counter.py): 1 change since the start\n", []string{counterDiff}, []string{"new.py"}},
		{"at the start", []string{"diff", "a-1", "--at", "1"}, "# a-1 after record 1 (+0.125s, mount /): 0 changes since the start\n", nil, []string{"---"}},
		{"tree at a record", []string{"diff", "a-1", "--tree", "--at", "5"}, "# a-1 after record 5",
			[]string{"0644  file  0   e3b0c44298fc  src/new.py\n", "0644  file  91  b547659ac291  src/counter.py\n"}, []string{"@@"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != exitOK {
				t.Fatalf("got exit %d, want 0 (stderr %q)", code, stderr)
			}
			if !strings.HasPrefix(stdout, tt.wantHead) {
				t.Errorf("got\n%s\nwant it to start with %q", stdout, tt.wantHead)
			}
			for _, w := range tt.wantDiffs {
				if !strings.Contains(stdout, w) {
					t.Errorf("got\n%s\nwant it to contain\n%s", stdout, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(stdout, w) {
					t.Errorf("got\n%s\nwant it not to contain %q", stdout, w)
				}
			}
		})
	}
}

func TestDiffJSON(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	code, stdout, _ := runCLI(t, d.Socket, nil, false, "diff", "a-1", "--json")
	var res diffResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != exitOK {
		t.Fatalf("got exit %d, %v", code, err)
	}
	if res.At != 12 || len(res.Changeset) != 2 || len(res.Diffs) != 2 {
		t.Fatalf("got at %d, %d changes, %d diffs; want 12, 2, 2", res.At, len(res.Changeset), len(res.Diffs))
	}
	if got := res.Diffs[1]; got.Kind != journal.Added || got.Path != "src/new.py" || !strings.HasSuffix(got.Diff, "+print('new')\n") {
		t.Errorf("got %+v, want src/new.py added", got)
	}
}

func TestDiffFailures(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(fx *fixture, d *fakeDaemon)
		args     []string
		wantCode int
		wantErr  string
	}{
		{"record past the end", nil, []string{"diff", "a-1", "--at", "13"}, exitError, "--at 13: the journal of a-1 ends at record 12"},
		{"blob altered in transit", func(fx *fixture, d *fakeDaemon) { d.corruptBlob = true }, []string{"diff", "a-1"}, exitError, "from benchd hashes to"},
		{"head not the stored one", func(fx *fixture, d *fakeDaemon) {
			d.attempts["a-1"] = attemptWith(fx, "a-1", func(a *apitype.Attempt) { a.JournalHead = strings.Repeat("1", 64) })
		}, []string{"diff", "a-1"}, exitNo, "is not the head 1111"},
		{"unknown attempt", nil, []string{"diff", "a-9"}, exitError, "no attempt a-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			d := newFakeDaemon(t, fx)
			if tt.setup != nil {
				tt.setup(fx, d)
			}
			code, _, stderr := runCLI(t, d.Socket, nil, false, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("got exit %d, stderr %q; want %d and one line containing %q", code, stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
}
