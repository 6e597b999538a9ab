package main

import (
	"archive/tar"
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/forensics"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/dsse"
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
			resign(t, fx, f) // as if benchd had stored a wrong head
		}, exitNo, "is not attempt.json's journal_head", "head"},
		{"byte changed in the changeset", func(t *testing.T, f map[string][]byte) {
			f["attempt.json"] = flipByte(t, f["attempt.json"], `"path":"src/ne`)
			resign(t, fx, f)
		}, exitNo, `changeset: attempt.json lists "added src/nex.py`, "changeset"},
		{"change left out of attempt.json", func(t *testing.T, f map[string][]byte) {
			var a apitype.Attempt
			json.Unmarshal(f["attempt.json"], &a)
			a.Changeset = a.Changeset[:1]
			f["attempt.json"], _ = json.Marshal(a)
			resign(t, fx, f)
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
		{"entry leading outside through ./", func(t *testing.T, f map[string][]byte) {
			f["./../evil"] = []byte("x")
		}, exitNo, `archive: entry "./../" leads outside`, "archive"},
		{"entry leading outside through a directory", func(t *testing.T, f map[string][]byte) {
			f["blobs/../../evil"] = []byte("x")
		}, exitNo, `leads outside`, "archive"},
		{"forged verdict", func(t *testing.T, f map[string][]byte) {
			var a apitype.Attempt
			json.Unmarshal(f["attempt.json"], &a)
			a.Pass, a.Reward, a.Reasons = true, 1, []apitype.Reason{}
			f["attempt.json"], _ = json.Marshal(a)
		}, exitNo, "statement: signed field verdict differs", "statement"},
		{"byte changed in a reason", func(t *testing.T, f map[string][]byte) {
			f["attempt.json"] = flipByte(t, f["attempt.json"], `"message":"the agent t`)
		}, exitNo, "statement: signed field verdict differs", "statement"},
		{"byte changed in the agent's hash", func(t *testing.T, f map[string][]byte) {
			f["attempt.json"] = flipByte(t, f["attempt.json"], `"sha256":"e`)
		}, exitNo, "statement: signed field agent differs", "statement"},
		{"byte changed in the task bundle hash", func(t *testing.T, f map[string][]byte) {
			f["attempt.json"] = flipByte(t, f["attempt.json"], `"task_sha256":"7`)
			f["task.json"] = flipByte(t, f["task.json"], `"sha256":"7`)
		}, exitNo, "statement: signed field task_sha256 differs", "statement"},
		{"byte changed in the signed payload", func(t *testing.T, f map[string][]byte) {
			env, err := dsse.Parse(f["attempt.dsse.json"])
			if err != nil {
				t.Fatal(err)
			}
			env.Payload = flipByte(t, env.Payload, `"pass":`)
			f["attempt.dsse.json"], _ = json.Marshal(env)
		}, exitNo, "signature: signature does not verify", "signature"},
		{"signed by another key", func(t *testing.T, f map[string][]byte) {
			other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
			f["attempt.dsse.json"] = envelopeOf(t, other, f["attempt.json"], f["task.json"])
		}, exitNo, "signature: not signed by the key given", "signature"},
		{"signature missing", func(t *testing.T, f map[string][]byte) {
			delete(f, "attempt.dsse.json")
		}, exitNo, "signature: missing", "signature"},
		{"envelope without signatures", func(t *testing.T, f map[string][]byte) {
			env, _ := dsse.Parse(f["attempt.dsse.json"])
			env.Signatures = nil
			f["attempt.dsse.json"], _ = json.Marshal(env)
		}, exitNo, "signature: missing: the envelope carries no signature", "signature"},
		{"edit policy widened in task.json", func(t *testing.T, f map[string][]byte) {
			var task apitype.TaskInfo
			json.Unmarshal(f["task.json"], &task)
			task.Allow = append(task.Allow, "README.md")
			f["task.json"], _ = json.Marshal(task)
		}, exitNo, "policy: signed field task_policy differs", "policy"},
		{"edit policy left out of task.json", func(t *testing.T, f map[string][]byte) {
			var task apitype.TaskInfo
			json.Unmarshal(f["task.json"], &task)
			task.Allow, task.Ignore = nil, nil
			f["task.json"], _ = json.Marshal(task)
		}, exitOK, "", ""},
		{"denied count the journal does not show", func(t *testing.T, f map[string][]byte) {
			var a apitype.Attempt
			json.Unmarshal(f["attempt.json"], &a)
			a.Denied = 0
			f["attempt.json"], _ = json.Marshal(a)
			resign(t, fx, f) // a verdict signed but wrong
		}, exitNo, "rederive: the journal has 1 denied operation(s), attempt.json claims 0", "rederive"},
		{"wrong_files left out of a signed verdict", func(t *testing.T, f map[string][]byte) {
			var a apitype.Attempt
			json.Unmarshal(f["attempt.json"], &a)
			a.Pass, a.Reward, a.Reasons = true, 1, []apitype.Reason{}
			f["attempt.json"], _ = json.Marshal(a)
			resign(t, fx, f)
		}, exitNo, "rederive: the journal has 1 denied operation(s), but the verdict has no wrong_files", "rederive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := fx.archiveFiles(t)
			tt.change(t, files)
			file := filepath.Join(t.TempDir(), "a-1.tar")
			if err := os.WriteFile(file, tarFiles(t, files), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, "", nil, false, "verify", "--key", fx.keyHex(), file)
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
			code, stdout, _ = runCLI(t, "", nil, false, "verify", "--json", "--key", fx.keyHex(), file)
			var res forensics.Result
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

// resign signs attempt.json's statement again, as benchd would have had
// it stored that attempt.json.
func resign(t *testing.T, fx *fixture, f map[string][]byte) {
	f["attempt.dsse.json"] = envelopeOf(t, fx.key, f["attempt.json"], f["task.json"])
}

// TestVerifyWithoutKey: every check but the signer's passes, and verify
// says so with its own exit status.
func TestVerifyWithoutKey(t *testing.T) {
	fx := newFixture(t)
	file := filepath.Join(t.TempDir(), "a-1.tar")
	os.WriteFile(file, tarFiles(t, fx.archiveFiles(t)), 0o644)
	code, stdout, stderr := runCLI(t, "", nil, false, "verify", file)
	if code != exitUnchecked {
		t.Errorf("got exit %d, want %d\n%s%s", code, exitUnchecked, stdout, stderr)
	}
	for _, want := range []string{"the signer was not checked", "the grade itself was not re-run"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("got stdout\n%s\nwant it to say %q", stdout, want)
		}
	}
	// The signature's line does not say ok for a signer nobody checked.
	if !regexp.MustCompile(`(?m)^unchecked\s+signature\s+not checked`).MatchString(stdout) || regexp.MustCompile(`(?m)^ok\s+signature`).MatchString(stdout) {
		t.Errorf("got stdout\n%s\nwant the signature line to say unchecked, not ok", stdout)
	}
	if _, withKey, _ := runCLI(t, "", nil, false, "verify", "--key", fx.keyHex(), file); !regexp.MustCompile(`(?m)^ok\s+signature\s+signed by the key given`).MatchString(withKey) {
		t.Errorf("with --key: got stdout\n%s\nwant the signature line ok", withKey)
	}
	code, stdout, _ = runCLI(t, "", nil, false, "verify", "--json", file)
	var res forensics.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if code != exitUnchecked || !res.OK || res.SignerChecked || res.Regraded {
		t.Errorf("--json: got exit %d ok %v signer_checked %v regraded %v, want %d, true, false, false", code, res.OK, res.SignerChecked, res.Regraded, exitUnchecked)
	}
	// A failure without a key is still a failure.
	files := fx.archiveFiles(t)
	delete(files, "attempt.dsse.json")
	os.WriteFile(file, tarFiles(t, files), 0o644)
	if code, _, stderr := runCLI(t, "", nil, false, "verify", file); code != exitNo || !strings.Contains(stderr, "signature: missing") {
		t.Errorf("no signature, no key: got exit %d, %q; want %d naming the signature", code, stderr, exitNo)
	}
}

// TestVerifyKeyForms: --key takes hex, a file of hex (benchctl key's
// output) or a PEM public key; anything else is a usage error.
func TestVerifyKeyForms(t *testing.T) {
	fx := newFixture(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a-1.tar")
	os.WriteFile(file, tarFiles(t, fx.archiveFiles(t)), 0o644)
	hexFile := filepath.Join(dir, "host.pub")
	os.WriteFile(hexFile, []byte(fx.keyHex()+"\n"), 0o644)
	der, err := x509.MarshalPKIXPublicKey(fx.key.Public())
	if err != nil {
		t.Fatal(err)
	}
	pemFile := filepath.Join(dir, "host.pem")
	os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
	for _, k := range []string{fx.keyHex(), hexFile, pemFile} {
		if code, stdout, stderr := runCLI(t, "", nil, false, "verify", "--key", k, file); code != exitOK {
			t.Errorf("--key %s: got exit %d, want 0\n%s%s", k, code, stdout, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "", nil, false, "verify", "--key", "abcd", file); code != exitError || !strings.Contains(stderr, "neither a file nor an Ed25519 public key") {
		t.Errorf("--key abcd: got exit %d, %q; want a usage error", code, stderr)
	}
}

// TestVerifyDotSlash: an archive repacked with "tar cf x.tar ." (every
// entry below "./", the first "./" itself) verifies.
func TestVerifyDotSlash(t *testing.T) {
	fx := newFixture(t)
	files := map[string][]byte{}
	for n, b := range fx.archiveFiles(t) {
		files["./"+n] = b
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.Close()
	dotDir := buf.Bytes()[:512] // the "./" header alone
	file := filepath.Join(t.TempDir(), "x.tar")
	os.WriteFile(file, append(append([]byte{}, dotDir...), tarFiles(t, files)...), 0o644)
	code, stdout, stderr := runCLI(t, "", nil, false, "verify", "--key", fx.keyHex(), file)
	if code != exitOK {
		t.Errorf("got exit %d, want 0\n%s%s", code, stdout, stderr)
	}
}

func TestVerifyWithoutPolicy(t *testing.T) {
	fx := newFixture(t)
	fx.task.Allow, fx.task.Ignore = nil, nil
	file := filepath.Join(t.TempDir(), "a-1.tar")
	os.WriteFile(file, tarFiles(t, fx.archiveFiles(t)), 0o644)
	code, stdout, stderr := runCLI(t, "", nil, false, "verify", "--key", fx.keyHex(), file)
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
	if code, stdout, stderr := runCLI(t, "", nil, false, "verify", "--key", fx.keyHex(), file); code != exitOK {
		t.Errorf("verify: got exit %d: %s %s", code, stdout, stderr)
	}
}

// TestVerifyEverySignedField edits the value of each signed field of
// attempt.json in turn, the way a forger would (the signature left as it
// was): each edit fails verify's statement check, naming the field.
func TestVerifyEverySignedField(t *testing.T) {
	fx := newFixture(t)
	base := fx.archiveFiles(t)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(base["attempt.json"], &fields); err != nil {
		t.Fatal(err)
	}
	sb, err := json.Marshal(apitype.StatementOf(fx.exported()))
	if err != nil {
		t.Fatal(err)
	}
	var signed map[string]json.RawMessage
	if err := json.Unmarshal(sb, &signed); err != nil {
		t.Fatal(err)
	}
	// Signed fields that attempt.json leaves out when empty: added.
	for k, v := range map[string]string{"infra_error": `"x"`, "signal": `9`, "benchd_version": `"x"`} {
		if _, ok := fields[k]; ok {
			t.Fatalf("attempt.json has %s: the test adds it", k)
		}
		fields[k] = json.RawMessage(v)
	}
	// The statement's name of each attempt.json field.
	rename := map[string]string{"id": "attempt", "pass": "verdict", "reward": "verdict", "reasons": "verdict"}
	tested := map[string]bool{}
	for key, raw := range fields {
		name := key
		if n, ok := rename[key]; ok {
			name = n
		}
		if _, ok := signed[name]; !ok {
			continue // not a signed field (phase)
		}
		t.Run(key, func(t *testing.T) {
			f := map[string][]byte{}
			for k, v := range base {
				f[k] = v
			}
			fields2 := map[string]json.RawMessage{}
			for k, v := range fields {
				fields2[k] = v
			}
			fields2[key] = editValue(t, raw)
			// The fields the test added are added unedited, except this one.
			for k := range map[string]bool{"infra_error": true, "signal": true, "benchd_version": true} {
				if k != key {
					delete(fields2, k)
				}
			}
			f["attempt.json"], _ = json.Marshal(fields2)
			file := filepath.Join(t.TempDir(), "a.tar")
			os.WriteFile(file, tarFiles(t, f), 0o644)
			code, stdout, _ := runCLI(t, "", nil, false, "verify", "--json", "--key", fx.keyHex(), file)
			var res forensics.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			if code != exitNo {
				t.Errorf("%s edited to %s: got exit %d, want %d", key, fields2[key], code, exitNo)
			}
			for _, c := range res.Checks {
				if c.Name == "statement" {
					if c.OK || !strings.Contains(c.Detail, "signed field "+name+" differs") {
						t.Errorf("%s edited to %s: got statement check %+v, want it to name %s", key, fields2[key], c, name)
					}
					return
				}
			}
			t.Errorf("%s edited: no statement check in %+v", key, res.Checks)
		})
		tested[name] = true
	}
	for name := range signed {
		if !tested[name] && name != "_type" && name != "task_policy" {
			t.Errorf("signed field %s has no counterpart in attempt.json that this test edited", name)
		}
	}
}

// editValue changes one byte of a JSON value's content, keeping it JSON.
func editValue(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	s := string(raw)
	switch {
	case s == "true":
		return json.RawMessage("false")
	case s == "false":
		return json.RawMessage("true")
	case s == "null":
		return json.RawMessage(`{"timeout_ms":1,"memory_bytes":0}`)
	case strings.HasSuffix(s, `Z"`): // a time: its last digit
		b := []byte(s)
		i := len(b) - 3
		if b[i] == '9' {
			b[i] = '8'
		} else {
			b[i]++
		}
		return b
	case s[0] >= '0' && s[0] <= '9' || s[0] == '-':
		b := []byte(s)
		last := len(b) - 1
		if b[last] == '9' {
			b[last] = '8'
		} else {
			b[last]++
		}
		return b
	case s[0] == '"':
		return flipByte(t, raw, `"`)
	}
	// An object or array: the first string value inside.
	if i := strings.Index(s, `":"`); i >= 0 {
		return flipByte(t, raw, s[:i+3])
	}
	if i := strings.Index(s, `":`); i >= 0 {
		b := []byte(s)
		j := i + 2
		if b[j] >= '0' && b[j] <= '8' {
			b[j]++
			return b
		}
	}
	t.Fatalf("no value to edit in %s", s)
	return nil
}

// TestVerifyAddedRetryOf: a forger adds retry_of to attempt.json (to pass
// a first attempt for another's retry); the statement signs none, so the
// check fails naming the field.
func TestVerifyAddedRetryOf(t *testing.T) {
	fx := newFixture(t)
	f := fx.archiveFiles(t)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(f["attempt.json"], &fields); err != nil {
		t.Fatal(err)
	}
	if _, ok := fields["retry_of"]; ok {
		t.Fatal("the fixture's attempt.json has retry_of: the test adds it")
	}
	fields["retry_of"] = json.RawMessage(`"a-forged"`)
	f["attempt.json"], _ = json.Marshal(fields)
	file := filepath.Join(t.TempDir(), "a.tar")
	os.WriteFile(file, tarFiles(t, f), 0o644)
	code, stdout, _ := runCLI(t, "", nil, false, "verify", "--json", "--key", fx.keyHex(), file)
	var res forensics.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if code != exitNo {
		t.Errorf("got exit %d, want %d", code, exitNo)
	}
	found := false
	for _, c := range res.Checks {
		if c.Name == "statement" {
			found = true
			if c.OK || !strings.Contains(c.Detail, "signed field retry_of differs") || !strings.Contains(c.Detail, "the signature covers nothing") {
				t.Errorf("got statement check %+v, want it to name retry_of, signed as none", c)
			}
		}
	}
	if !found {
		t.Errorf("no statement check in %+v", res.Checks)
	}
}
