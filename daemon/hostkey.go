package daemon

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/dsse"
	"benchd.dev/tasks"
)

// HostKeyFile is the name of benchd's host key in the state directory:
// an Ed25519 private key, PKCS #8 in PEM, mode 0600, owned by root.
const HostKeyFile = "hostkey.pem"

// HostKey loads benchd's host key from stateDir, making it first when
// it is missing. A key file that others may read, or (when benchd runs
// as root) that root does not own, is refused: anyone who can read it
// can sign attempts as this host.
func HostKey(stateDir string) (ed25519.PrivateKey, error) {
	p := filepath.Join(stateDir, HostKeyFile)
	key, err := readHostKey(p)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("unable to make the host key: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("unable to make the host key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("unable to make the host key: %w", err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	// Written aside and linked into place, so that two starts at once
	// cannot both make a key, and a crash leaves no half-written key.
	tmp, err := os.CreateTemp(stateDir, HostKeyFile+".new-")
	if err != nil {
		return nil, fmt.Errorf("unable to make the host key: %w", err)
	}
	defer os.Remove(tmp.Name())
	werr := tmp.Chmod(0o600)
	if werr == nil && os.Geteuid() == 0 {
		werr = tmp.Chown(0, 0)
	}
	if werr == nil {
		_, werr = tmp.Write(b)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("unable to write the host key: %w", werr)
	}
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("unable to write the host key: %w", err)
	}
	if d, err := os.Open(stateDir); err == nil {
		d.Sync()
		d.Close()
	}
	return readHostKey(p)
}

// readHostKey reads and checks the key file p.
func readHostKey(p string) (ed25519.PrivateKey, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("host key %s is not a regular file", p)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("host key %s may be read by others (mode %04o): make it mode 0600 (chmod 600), or remove it to make a new key", p, perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && st.Uid != 0 {
		return nil, fmt.Errorf("host key %s is owned by uid %d, want root (chown root:root)", p, st.Uid)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("host key %s: %w", p, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("host key %s is not a PEM private key", p)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("host key %s: %w", p, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("host key %s is a %T, want an Ed25519 key", p, k)
	}
	return priv, nil
}

// PublicHostKey describes the public half of key.
func PublicHostKey(key ed25519.PrivateKey) apitype.HostKey {
	pub := key.Public().(ed25519.PublicKey)
	return apitype.HostKey{Algorithm: "ed25519", PublicKey: hex.EncodeToString(pub), KeyID: dsse.KeyID(pub)}
}

// sign signs the statement of attempt id as the store has it, with pol
// as the edit policy of the bundle that graded it (nil: looked up by the
// attempt's bundle hash), and stores the envelope. Every ending of an
// attempt calls it after the attempt's last update, so that the signed
// fields are the stored ones; a failure is logged.
func (s *server) sign(ctx context.Context, id string, pol *apitype.TaskPolicy) {
	if _, err := s.signAttempt(ctx, id, pol); err != nil {
		s.log.Error("unable to sign the attempt's statement", "attempt", id, "err", err)
	}
}

// signAttempt is sign, returning the attempt as signed or what failed.
func (s *server) signAttempt(ctx context.Context, id string, pol *apitype.TaskPolicy) (apitype.Attempt, error) {
	a, err := s.store.GetAttempt(ctx, id)
	if err == nil && a.BenchdVersion == "" {
		a.BenchdVersion = Version
		err = s.store.UpdateAttempt(ctx, a)
	}
	if err != nil {
		return a, err
	}
	st := apitype.StatementOf(a)
	st.TaskPolicy = pol
	if pol == nil {
		st.TaskPolicy = s.policyOf(a)
	}
	payload, err := json.Marshal(st)
	if err != nil {
		return a, err
	}
	env := dsse.Sign(s.key, apitype.StatementPayloadType, payload)
	b, err := json.Marshal(env)
	if err != nil {
		return a, err
	}
	return a, s.store.SaveEnvelope(ctx, id, env.Signatures[0].KeyID, b)
}

// signedPolicy returns the edit policy in the statement signed for
// attempt id, nil when there is none (no envelope, or none signed).
func (s *server) signedPolicy(ctx context.Context, id string) *apitype.TaskPolicy {
	b, err := s.store.Envelope(ctx, id)
	if err != nil {
		return nil
	}
	env, err := dsse.Parse(b)
	if err != nil {
		return nil
	}
	var st apitype.Statement
	if json.Unmarshal(env.Payload, &st) != nil {
		return nil
	}
	return st.TaskPolicy
}

// policyOf returns the edit policy of the bundle that graded a, nil when
// the task store no longer has that bundle.
func (s *server) policyOf(a apitype.Attempt) *apitype.TaskPolicy {
	t, err := tasks.Find(s.cfg.TasksDir, a.Task)
	if err != nil || a.TaskSHA256 == "" {
		return nil
	}
	if sha, err := bundleSHA256(t); err != nil || sha != a.TaskSHA256 {
		return nil
	}
	return &apitype.TaskPolicy{Allow: t.Policy.Allow, Ignore: t.Policy.Ignore}
}

func (s *server) handleKey(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, PublicHostKey(s.key))
	return nil
}
