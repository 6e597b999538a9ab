package e2e

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/dsse"
)

// TestVerifyRegrade: verify --regrade grades an export again from its
// journal with benchd's grader and the facts and seed the attempt
// recorded, and agrees with a genuine verdict, passing or failing. A
// verdict forged and signed again with another key passes every check of
// the record but the regrade; a bundle other than the one that graded the
// attempt is refused, naming both.
func TestVerifyRegrade(t *testing.T) {
	d := shared(t)
	dir := t.TempDir()
	verify := func(t *testing.T, archive string, args ...string) (string, int) {
		t.Helper()
		if strings.Contains(strings.Join(args, " "), "--regrade") {
			args = append(args, "--benchd", benchdBin)
		}
		return runBenchctl(t, nil, append(append([]string{"verify"}, args...), archive)...)
	}
	hk, err := d.client.HostKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task, agent string
		pass        bool
		code        string
	}{
		{"rt-01", apitype.AgentReference, true, ""},
		{"rt-01", apitype.AgentAttemptPrefix + "special-cases-hidden", false, "checks_failed"},
		{"rt-02", apitype.AgentAttemptPrefix + "detects-file", false, "tests_detect_file"},
		{"rt-01", apitype.AgentAttemptPrefix + "links-solution", false, "unsafe_link"},
	} {
		t.Run(tc.task+"/"+tc.agent, func(t *testing.T) {
			final, archive := exportOf(t, d, tc.task, tc.agent)
			if final.Pass != tc.pass || (tc.code != "" && !strings.Contains(strings.Join(codes(final), ","), tc.code)) {
				t.Fatalf("got pass %v codes %v, want pass %v with %q", final.Pass, codes(final), tc.pass, tc.code)
			}
			p := filepath.Join(dir, strings.NewReplacer("/", "-", ":", "-").Replace(tc.task+tc.agent)+".tar")
			os.WriteFile(p, archive, 0o644)
			out, code := verify(t, p, "--key", hk.PublicKey, "--regrade", "--tasks", tasksDir)
			if code != 0 || !strings.Contains(out, "as attempt.json says") {
				t.Fatalf("verify --regrade: got exit %d, want 0 with the regrade agreeing\n%s", code, out)
			}
		})
	}

	// A failing attempt's verdict made a pass, and the statement signed
	// again with a key of the forger's: the record checks out against
	// that key; the regrade does not.
	final, archive := exportOf(t, d, "rt-01", apitype.AgentAttemptPrefix+"special-cases-hidden")
	files := untar(t, archive)
	forged := final
	forged.Pass, forged.Reward, forged.Reasons = true, 1, []apitype.Reason{}
	b, err := json.MarshalIndent(forged, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	files["attempt.json"] = b
	var env dsse.Envelope
	if err := json.Unmarshal(files["attempt.dsse.json"], &env); err != nil {
		t.Fatal(err)
	}
	var st apitype.Statement
	if err := json.Unmarshal(env.Payload, &st); err != nil {
		t.Fatal(err)
	}
	forgedSt := apitype.StatementOf(forged)
	forgedSt.TaskPolicy = st.TaskPolicy
	payload, _ := json.Marshal(forgedSt)
	pub, priv, _ := ed25519.GenerateKey(nil)
	files["attempt.dsse.json"], _ = json.Marshal(dsse.Sign(priv, apitype.StatementPayloadType, payload))
	p := filepath.Join(dir, "forged.tar")
	retar(t, files, p)
	out, code := verify(t, p, "--key", hex.EncodeToString(pub))
	if code != 0 {
		t.Fatalf("the forged record with the forger's key: got exit %d, want 0 (every record check passes)\n%s", code, out)
	}
	out, code = verify(t, p, "--key", hex.EncodeToString(pub), "--regrade", "--tasks", tasksDir)
	if code != 1 || !strings.Contains(out, "regrade: graded again, the attempt gets fail") {
		t.Fatalf("forged, --regrade: got exit %d, want 1 naming the regrade\n%s", code, out)
	}

	// Another bundle: the same task with its tests changed.
	other := filepath.Join(dir, "tasks")
	if err := os.CopyFS(other, os.DirFS(tasksDir)); err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(other, "rt-01-circular-counter", "tests", "gen_checks.py")
	if err := os.WriteFile(gen, append(mustRead(t, gen), "\n# changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.tar")
	os.WriteFile(good, archive, 0o644)
	out, code = verify(t, good, "--key", hk.PublicKey, "--regrade", "--tasks", other)
	if code != 1 || !strings.Contains(out, "the attempt was graded with bundle") {
		t.Fatalf("another bundle: got exit %d, want 1 naming both bundles\n%s", code, out)
	}
	if out, code := runBenchctl(t, nil, "verify", "--regrade", good); code != 2 || !strings.Contains(out, "--regrade needs --tasks") {
		t.Errorf("--regrade without --tasks: got exit %d\n%s", code, out)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
