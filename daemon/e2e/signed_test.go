package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"benchd.dev/client/apitype"
)

// exportOf runs one attempt of task by agent to its end and returns it
// with its export archive.
func exportOf(t *testing.T, d *daemonProc, task, agent string) (apitype.Attempt, []byte) {
	t.Helper()
	ctx := context.Background()
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: task, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	final := wait(t, d.client, run.Attempts[0])
	if final.State != apitype.StateDone {
		t.Fatalf("%s on %s: got state %s (%s), want done", agent, task, final.State, final.InfraError)
	}
	body, err := d.client.Export(ctx, final.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	archive, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return final, archive
}

// untar returns a tar's regular files by name.
func untar(t *testing.T, archive []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

// retar unpacks files into a new directory and packs it the way a
// person would, with "tar cf FILE ." in it (every entry below "./").
func retar(t *testing.T, files map[string][]byte, file string) {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("tar", "cf", file, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar cf: %v\n%s", err, out)
	}
}

// TestSignedExport: benchd signs each ended attempt; an export verifies
// with benchd's public key, also repacked with "tar cf x.tar .", and
// fails, naming what failed, once its verdict is forged, a journal
// record edited, its signature removed, or when checked with another
// key. Without a key verify says the signer was not checked.
func TestSignedExport(t *testing.T) {
	d := shared(t)
	ctx := context.Background()

	// The key, three ways: the API, benchctl key, benchd key.
	hk, err := d.client.HostKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if hk.Algorithm != "ed25519" || len(hk.PublicKey) != 64 || len(hk.KeyID) != 64 {
		t.Fatalf("GET /v1/key: got %+v", hk)
	}
	out, code := runBenchctl(t, nil, "key")
	if code != 0 || strings.TrimSpace(out) != hk.PublicKey {
		t.Errorf("benchctl key: got exit %d, %q; want %s", code, out, hk.PublicKey)
	}
	out, code = runBenchctl(t, nil, "key", "--json")
	var viaCLI apitype.HostKey
	if code != 0 || json.Unmarshal([]byte(out), &viaCLI) != nil || viaCLI != hk {
		t.Errorf("benchctl key --json: got exit %d, %q; want %+v", code, out, hk)
	}
	bout, err := exec.Command(benchdBin, "key", "--state", d.state).Output()
	if err != nil || strings.TrimSpace(string(bout)) != hk.PublicKey {
		t.Errorf("benchd key --state: got %q, %v; want %s", bout, err, hk.PublicKey)
	}
	fi, err := os.Stat(filepath.Join(d.state, "hostkey.pem"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("host key file: got %v, %v; want mode 0600", fi, err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "host.pub")
	os.WriteFile(keyFile, []byte(hk.PublicKey+"\n"), 0o644)
	otherPub, _, _ := ed25519.GenerateKey(nil)
	otherKey := hex.EncodeToString(otherPub)

	// A failing attempt, so that a forged pass means something.
	final, archive := exportOf(t, d, "rt-01", apitype.AgentAttemptPrefix+"adds-helper-file")
	if final.Pass || !strings.Contains(strings.Join(codes(final), ","), "wrong_files") {
		t.Fatalf("adds-helper-file: got pass %v codes %v, want wrong_files", final.Pass, codes(final))
	}
	files := untar(t, archive)
	if _, ok := files["attempt.dsse.json"]; !ok {
		t.Fatalf("the export has no attempt.dsse.json: %v", names(files))
	}
	good := filepath.Join(dir, "good.tar")
	os.WriteFile(good, archive, 0o644)

	verify := func(t *testing.T, file string, args ...string) (string, int) {
		t.Helper()
		return runBenchctl(t, nil, append(append([]string{"verify"}, args...), file)...)
	}
	t.Run("genuine", func(t *testing.T) {
		for _, k := range []string{hk.PublicKey, keyFile} {
			out, code := verify(t, good, "--key", k)
			if code != 0 || !strings.Contains(out, "verified: ") || !strings.Contains(out, "rederive") {
				t.Errorf("--key %s: got exit %d, want 0\n%s", k, code, out)
			}
		}
		out, code := verify(t, good, "--json", "--key", hk.PublicKey)
		var res struct {
			OK            bool `json:"ok"`
			SignerChecked bool `json:"signer_checked"`
			Checks        []struct {
				Name   string `json:"name"`
				OK     bool   `json:"ok"`
				Detail string `json:"detail"`
			} `json:"checks"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.OK || !res.SignerChecked {
			t.Fatalf("--json: got exit %d\n%s", code, out)
		}
		for _, c := range res.Checks {
			// The real bundle's policy is signed, so wrong_files is
			// re-derived from the journal, not skipped.
			if c.Name == "rederive" && !strings.Contains(c.Detail, "wrong_files present as claimed") {
				t.Errorf("rederive: got %q, want wrong_files re-derived", c.Detail)
			}
		}
	})
	t.Run("without a key", func(t *testing.T) {
		out, code := verify(t, good)
		if code != 3 || !strings.Contains(out, "the signer was not checked") || !strings.Contains(out, "the grade itself was not re-run") {
			t.Errorf("got exit %d, want 3 saying the signer was not checked\n%s", code, out)
		}
	})
	t.Run("tar cf x.tar .", func(t *testing.T) {
		p := filepath.Join(dir, "dot.tar")
		retar(t, files, p)
		if out, code := verify(t, p, "--key", hk.PublicKey); code != 0 {
			t.Errorf("got exit %d, want 0\n%s", code, out)
		}
	})

	edit := func(change func(f map[string][]byte)) map[string][]byte {
		f := map[string][]byte{}
		for k, v := range files {
			f[k] = bytes.Clone(v)
		}
		change(f)
		return f
	}
	cases := []struct {
		name  string
		files map[string][]byte
		key   string
		want  string
	}{
		{"forged verdict", edit(func(f map[string][]byte) {
			var a map[string]any
			json.Unmarshal(f["attempt.json"], &a)
			a["pass"], a["reward"], a["reasons"] = true, 1, []any{}
			f["attempt.json"], _ = json.MarshalIndent(a, "", "  ")
		}), hk.PublicKey, "statement: signed field verdict differs"},
		{"edited journal record", edit(func(f map[string][]byte) {
			j := f["journal.jsonl"]
			i := bytes.Index(j, []byte(`"path":"src/`))
			if i < 0 {
				t.Fatal("no record of src/ in the journal")
			}
			j[i+len(`"path":"src/`)] ^= 1
		}), hk.PublicKey, "chain: record"},
		{"wrong key", files, otherKey, "signature: not signed by the key given"},
		{"missing signature", edit(func(f map[string][]byte) { delete(f, "attempt.dsse.json") }), hk.PublicKey, "signature: missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".tar")
			retar(t, c.files, p)
			out, code := verify(t, p, "--key", c.key)
			t.Logf("verify --key %s:\n%s", c.key[:12], out)
			if code != 1 || !strings.Contains(out, c.want) {
				t.Errorf("got exit %d, want 1 with %q\n%s", code, c.want, out)
			}
		})
	}
}

func names(files map[string][]byte) []string {
	var out []string
	for n := range files {
		out = append(out, n)
	}
	return out
}

// TestNoVerdictYet: an attempt without a verdict reports pass, exit
// status and wall time as null (JSON) or none (text), not false, 0 and
// 0ms; once canceled it is still signed.
func TestNoVerdictYet(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	out, code := runBenchctl(t, nil, "run", "--task", "rt-01", "--agent", "sleep 3600", "--detach", "--json")
	if code != 0 {
		t.Fatalf("run --detach --json: exit %d\n%s", code, out)
	}
	var detached struct {
		Attempts []map[string]json.RawMessage `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(out), &detached); err != nil || len(detached.Attempts) != 1 {
		t.Fatalf("run --detach --json: got %s (%v), want one attempt", out, err)
	}
	a := detached.Attempts[0]
	for _, k := range []string{"pass", "exit_code", "wall_ms"} {
		if string(a[k]) != "null" {
			t.Errorf("run --detach --json: got %s %s, want null", k, a[k])
		}
	}
	var id string
	json.Unmarshal(a["id"], &id)
	waitPhase(t, d, id, apitype.PhaseRun)
	if _, err := d.client.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	out, code = runBenchctl(t, nil, "show", "--json", id)
	var shown map[string]json.RawMessage
	if code != 1 || json.Unmarshal([]byte(out), &shown) != nil {
		t.Fatalf("show --json: exit %d (want 1: a canceled attempt did not pass)\n%s", code, out)
	}
	if string(shown["state"]) != `"canceled"` {
		t.Fatalf("show --json: got state %s, want canceled", shown["state"])
	}
	for _, k := range []string{"pass", "exit_code", "wall_ms"} {
		if string(shown[k]) != "null" {
			t.Errorf("show --json of a canceled attempt: got %s %s, want null", k, shown[k])
		}
	}
	out, _ = runBenchctl(t, nil, "show", id)
	for _, re := range []string{`(?m)^exit status\s+none$`, `(?m)^wall time\s+none$`, `(?m)^verdict\s+canceled$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("show of a canceled attempt: got\n%s\nwant a line matching %s", out, re)
		}
	}
	// Ended, it is signed like any other.
	body, err := d.client.Export(ctx, id)
	if err == nil {
		archive, _ := io.ReadAll(body)
		body.Close()
		if _, ok := untar(t, archive)["attempt.dsse.json"]; !ok {
			t.Errorf("the export of a canceled attempt has no attempt.dsse.json")
		}
	} else {
		t.Logf("the canceled attempt is not exported (%v): its signature is not checked here", err)
	}
}

// TestHostKeyAcrossRestarts: the host key is made once and kept; a key
// file that others may read stops benchd at start, naming the file and
// the fix; an export made before a restart verifies with the key after.
func TestHostKeyAcrossRestarts(t *testing.T) {
	require(t)
	dir := newDaemonDir(t)
	defer os.RemoveAll(dir)
	ctx := context.Background()
	d := startDaemon(t, dir)
	k1, err := d.client.HostKey(ctx)
	if err != nil {
		d.kill()
		t.Fatal(err)
	}
	_, archive := exportOf(t, d, "rt-01", apitype.AgentReference)
	d.stop(t)

	keyFile := filepath.Join(d.state, "hostkey.pem")
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, benchdBin, "--socket", filepath.Join(dir, "benchd.sock"), "--state", d.state, "--tasks", tasksDir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "may be read by others (mode 0644)") || !strings.Contains(string(out), "chmod 600") {
		t.Errorf("benchd with a key file of mode 0644: got %v\n%s\nwant it to refuse to start, naming the mode and the fix", err, out)
	}
	if err := os.Chmod(keyFile, 0o600); err != nil {
		t.Fatal(err)
	}

	d = startDaemon(t, dir)
	defer d.stop(t)
	k2, err := d.client.HostKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if k2 != k1 {
		t.Errorf("host key after a restart: got %+v, want the same as before, %+v", k2, k1)
	}
	p := filepath.Join(t.TempDir(), "before.tar")
	os.WriteFile(p, archive, 0o644)
	if out, code := runBenchctlOn(t, d, "verify", "--key", k2.PublicKey, p); code != 0 {
		t.Errorf("verify of an export made before the restart: exit %d\n%s", code, out)
	}
}

// runBenchctlOn runs benchctl against d's socket.
func runBenchctlOn(t *testing.T, d *daemonProc, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(benchctl, append([]string{"--socket", d.socket}, args...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
