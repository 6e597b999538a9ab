package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

// flipByte returns b with the byte after the first occurrence of after
// changed (the first byte when after is "").
func flipByte(t *testing.T, b []byte, after string) []byte {
	t.Helper()
	i := bytes.Index(b, []byte(after))
	if i < 0 {
		t.Fatalf("%q not found", after)
	}
	i += len(after)
	out := append([]byte(nil), b...)
	if out[i] == 'x' {
		out[i] = 'y'
	} else {
		out[i] = 'x'
	}
	return out
}

func TestVerify(t *testing.T) {
	fx := newFixture(t)
	newSHA := journal.HashBytes([]byte(newFile))
	tests := []struct {
		name      string
		change    func(t *testing.T, files map[string][]byte)
		wantCode  int
		wantError string // in the one line on stderr
		wantCheck string // the check that fails
	}{
		{"good archive", func(*testing.T, map[string][]byte) {}, exitOK, "", ""},
		{"byte changed in a record", func(t *testing.T, f map[string][]byte) {
			f["journal.jsonl"] = flipByte(t, f["journal.jsonl"], `"op":"unlink","path":"READ`)
		}, exitNo, "chain: record 8 (line 8): hash does not match its content", "chain"},
		{"byte changed in a hash", func(t *testing.T, f map[string][]byte) {
			f["journal.jsonl"] = flipByte(t, f["journal.jsonl"], `"seq":3,`)
		}, exitNo, "journal:", "journal"},
		{"byte changed in a blob", func(t *testing.T, f map[string][]byte) {
			name := "journal.jsonl.blobs/" + newSHA[:2] + "/" + newSHA
			f[name] = flipByte(t, f[name], "print")
		}, exitNo, "blobs: blob " + newSHA + ": blob content does not match its hash", "blobs"},
		{"byte changed in journal_head", func(t *testing.T, f map[string][]byte) {
			f["attempt.json"] = flipByte(t, f["attempt.json"], `"journal_head":"`)
		}, exitNo, "is not attempt.json's journal_head", "head"},
		{"byte changed in the changeset", func(t *testing.T, f map[string][]byte) {
			f["attempt.json"] = flipByte(t, f["attempt.json"], `"path":"src/ne`)
		}, exitNo, `changeset: attempt.json lists "added src/nex.py`, "changeset"},
		{"change left out of attempt.json", func(t *testing.T, f map[string][]byte) {
			var a apitype.Attempt
			json.Unmarshal(f["attempt.json"], &a)
			a.Changeset = a.Changeset[:1]
			f["attempt.json"], _ = json.Marshal(a)
		}, exitNo, "which attempt.json's changeset lacks", "changeset"},
		{"journal rewritten with a new chain", func(t *testing.T, f map[string][]byte) {
			f["journal.jsonl"] = rewriteJournal(t, fx, func(r *journal.Record) {
				if r.Op == journal.OpUnlink {
					r.Comm = "bash"
				}
			})
		}, exitNo, "head: the journal's last hash", "head"},
		{"blob missing", func(t *testing.T, f map[string][]byte) {
			delete(f, "journal.jsonl.blobs/"+newSHA[:2]+"/"+newSHA)
		}, exitNo, "blob " + newSHA + " is missing", "chain"},
		{"stray file among the blobs", func(t *testing.T, f map[string][]byte) {
			f["journal.jsonl.blobs/ab/notes.txt"] = []byte("hi")
		}, exitNo, "blobs: ab/notes.txt: not a blob", "blobs"},
		{"task.json missing", func(t *testing.T, f map[string][]byte) {
			delete(f, "task.json")
		}, exitNo, "layout: missing task.json", "layout"},
		{"attempt of another task", func(t *testing.T, f map[string][]byte) {
			f["task.json"] = flipByte(t, f["task.json"], `"id":"rt-0`)
		}, exitNo, `task: attempt.json is of task "rt-01"`, "task"},
		{"a record cut off the end", func(t *testing.T, f map[string][]byte) {
			j := f["journal.jsonl"]
			j = j[:bytes.LastIndexByte(j[:len(j)-1], '\n')+1]
			f["journal.jsonl"] = j
		}, exitNo, "without an unmount record", "chain"},
		{"entry leading outside", func(t *testing.T, f map[string][]byte) {
			f["../evil"] = []byte("x")
		}, exitNo, `archive: entry "../`, "archive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := fx.archiveFiles(t)
			tt.change(t, files)
			file := filepath.Join(t.TempDir(), "a-1.tar")
			if err := os.WriteFile(file, tarFiles(t, files), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, "", nil, false, "verify", file)
			if code != tt.wantCode {
				t.Errorf("got exit %d, want %d\nstdout:\n%s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			if tt.wantError == "" {
				if stderr != "" || !strings.Contains(stdout, "verified: "+file+": attempt a-1 of task rt-01") {
					t.Errorf("got stdout %q, stderr %q; want verified", stdout, stderr)
				}
			} else {
				if !strings.Contains(stderr, tt.wantError) || strings.Count(stderr, "\n") != 1 {
					t.Errorf("got stderr %q, want one line containing %q", stderr, tt.wantError)
				}
			}
			code, stdout, _ = runCLI(t, "", nil, false, "verify", "--json", file)
			var res verifyResult
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("--json: %v\n%s", err, stdout)
			}
			if res.OK != (tt.wantCode == exitOK) || code != tt.wantCode {
				t.Errorf("--json: got ok %v, exit %d; want exit %d", res.OK, code, tt.wantCode)
			}
			var failed []string
			for _, c := range res.Checks {
				if !c.OK {
					failed = append(failed, c.Name)
				}
			}
			if tt.wantCheck == "" && len(failed) > 0 || tt.wantCheck != "" && (len(failed) == 0 || failed[0] != tt.wantCheck) {
				t.Errorf("got failed checks %q, want the first to be %q", failed, tt.wantCheck)
			}
		})
	}
}

func TestVerifyWithoutPolicy(t *testing.T) {
	fx := newFixture(t)
	fx.task.Allow, fx.task.Ignore = nil, nil
	file := filepath.Join(t.TempDir(), "a-1.tar")
	os.WriteFile(file, tarFiles(t, fx.archiveFiles(t)), 0o644)
	code, stdout, stderr := runCLI(t, "", nil, false, "verify", file)
	if code != exitOK {
		t.Fatalf("got exit %d, want 0: %s %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "note: task.json carries no edit policy: 2 change(s)") || !strings.Contains(stdout, "added __pycache__/c.pyc") {
		t.Errorf("got\n%s\nwant a note naming the changes outside attempt.json's changeset", stdout)
	}
}

func TestVerifyNotAnArchive(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.tar")
	os.WriteFile(junk, []byte("this is not a tar file at all, it is text\n"), 0o644)
	tests := []struct {
		name, file string
		wantCode   int
		wantErr    string
	}{
		{"missing file", filepath.Join(dir, "none.tar"), exitError, "no such file"},
		{"not a tar", junk, exitNo, "archive: not a tar archive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", nil, false, "verify", tt.file)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("got exit %d, stderr %q; want %d, %q", code, stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
}

// rewriteJournal writes the fixture's records, changed, as a new journal
// with a valid chain (as whoever tampers with one would), and returns it.
func rewriteJournal(t *testing.T, fx *fixture, change func(*journal.Record)) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "j.jsonl")
	w, err := journal.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range fx.recs {
		change(&r)
		if _, err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExportCutShort(t *testing.T) {
	fx := newFixture(t)
	whole := tarFiles(t, fx.archiveFiles(t))
	dir := t.TempDir()
	tests := []struct {
		name    string
		archive []byte
		wantErr bool
	}{
		{"whole", whole, false},
		{"cut inside an entry", whole[:700], true},
		{"not a tar", []byte(strings.Repeat("x", 1024)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".tar")
			_, err := writeFileAtomic(p, bytes.NewReader(tt.archive))
			if (err != nil) != tt.wantErr {
				t.Fatalf("got %v, want error %v", err, tt.wantErr)
			}
			if _, serr := os.Stat(p); (serr == nil) == tt.wantErr {
				t.Errorf("got file present %v, want %v", serr == nil, !tt.wantErr)
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".*"))
			if len(left) != 0 {
				t.Errorf("got temporary files %q left behind", left)
			}
		})
	}
}

func TestExportThenVerify(t *testing.T) {
	fx := newFixture(t)
	d := newFakeDaemon(t, fx)
	file := filepath.Join(t.TempDir(), "out.tar")
	code, stdout, stderr := runCLI(t, d.Socket, nil, false, "export", "a-1", "-o", file, "--json")
	if code != exitOK {
		t.Fatalf("export: got exit %d: %s", code, stderr)
	}
	var res exportResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.File != file || res.Bytes == 0 {
		t.Fatalf("export: got %s, want the file and its size", stdout)
	}
	b, _ := os.ReadFile(file)
	if got := journal.HashBytes(b); got != res.SHA256 || int64(len(b)) != res.Bytes {
		t.Errorf("export: the file has sha256 %s and %d bytes, the report says %s and %d", got, len(b), res.SHA256, res.Bytes)
	}
	if code, stdout, stderr := runCLI(t, "", nil, false, "verify", file); code != exitOK {
		t.Errorf("verify: got exit %d: %s %s", code, stdout, stderr)
	}
}
