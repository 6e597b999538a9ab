package daemon

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/daemon/store"
	"benchd.dev/internal/dsse"
	"benchd.dev/tasks"
)

func TestHostKeyMadeOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	k1, err := HostKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, HostKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("got mode %04o, want 0600", got)
	}
	if os.Geteuid() == 0 {
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
			t.Errorf("got owner uid %d, want root", uid)
		}
	}
	k2, err := HostKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equal(k2) {
		t.Error("a second HostKey made a new key, want the stored one")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("got %d entries in the state dir, want the key alone", len(entries))
	}
	pub := PublicHostKey(k1)
	if pub.Algorithm != "ed25519" || len(pub.PublicKey) != 64 || pub.KeyID != dsse.KeyID(k1.Public().(ed25519.PublicKey)) {
		t.Errorf("got public key %+v", pub)
	}
}

func TestHostKeyRefused(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	tests := []struct {
		name   string
		change func(t *testing.T, p string)
		want   string
	}{
		{"readable by others", func(t *testing.T, p string) { os.Chmod(p, 0o644) }, "may be read by others (mode 0644)"},
		{"readable by the group", func(t *testing.T, p string) { os.Chmod(p, 0o640) }, "may be read by others (mode 0640)"},
		{"not PEM", func(t *testing.T, p string) { os.WriteFile(p, []byte("hello"), 0o600) }, "is not a PEM private key"},
		{"another kind of key", func(t *testing.T, p string) {
			os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}), 0o600)
		}, "want an Ed25519 key"},
		{"a directory", func(t *testing.T, p string) { os.Remove(p); os.Mkdir(p, 0o700) }, "not a regular file"},
	}
	if os.Geteuid() == 0 {
		tests = append(tests, struct {
			name   string
			change func(t *testing.T, p string)
			want   string
		}{"not root's", func(t *testing.T, p string) { os.Chown(p, 65534, 65534) }, "owned by uid 65534, want root"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := HostKey(dir); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, HostKeyFile)
			tt.change(t, p)
			_, err := HostKey(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestSign: the envelope stored for an ended attempt verifies with the
// host key, and its statement is the stored attempt's, the bundle's edit
// policy and benchd's version included.
func TestSign(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	st, err := store.Open(ctx, store.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key, err := HostKey(state)
	if err != nil {
		t.Fatal(err)
	}
	tasksDir := "../tasks"
	task, err := tasks.Find(tasksDir, "rt-01")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := bundleSHA256(task)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cfg: Config{TasksDir: tasksDir}, log: slog.New(slog.DiscardHandler), store: st, key: key}
	now := time.Now().UTC()
	a := apitype.Attempt{ID: "a-1", Task: "rt-01", State: apitype.StateQueued, Created: now}
	if err := st.CreateAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.State, a.Pass, a.Reward, a.TaskSHA256, a.JournalHead = apitype.StateDone, true, 1, sha, strings.Repeat("a", 64)
	a.Limits = &apitype.Limits{TimeoutMS: 600000, MemoryBytes: 1 << 30}
	a.Started, a.Finished, a.WallMS = &now, &now, 12
	if err := st.UpdateAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	s.sign(ctx, "a-1", nil)

	b, err := st.Envelope(ctx, "a-1")
	if err != nil {
		t.Fatal(err)
	}
	env, err := dsse.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := dsse.Verify(env, key.Public().(ed25519.PublicKey)); err != nil {
		t.Fatalf("stored envelope: %v", err)
	}
	if env.PayloadType != apitype.StatementPayloadType {
		t.Errorf("got payload type %q, want %q", env.PayloadType, apitype.StatementPayloadType)
	}
	var got apitype.Statement
	if err := json.Unmarshal(env.Payload, &got); err != nil {
		t.Fatal(err)
	}
	stored, err := st.GetAttempt(ctx, "a-1")
	if err != nil {
		t.Fatal(err)
	}
	if stored.BenchdVersion != Version {
		t.Errorf("got benchd version %q in the record, want %q", stored.BenchdVersion, Version)
	}
	want := apitype.StatementOf(stored)
	want.TaskPolicy = &apitype.TaskPolicy{Allow: task.Policy.Allow, Ignore: task.Policy.Ignore}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("got statement\n%s\nwant\n%s", gb, wb)
	}
	if got.Verdict == nil || !got.Verdict.Pass || got.JournalHead != a.JournalHead || got.Limits == nil || got.Limits.TimeoutMS != 600000 {
		t.Errorf("got statement %s, want the verdict, head and limits signed", gb)
	}
}

// BenchmarkSign is what signing adds to the end of an attempt as
// execute signs it, the bundle's policy at hand (read the record back,
// sign, store the envelope), against the baseline of storing the
// attempt's end once, in the same run.
func BenchmarkSign(b *testing.B) {
	ctx := context.Background()
	state := b.TempDir()
	st, err := store.Open(ctx, store.Config{Dir: state})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	key, err := HostKey(state)
	if err != nil {
		b.Fatal(err)
	}
	task, err := tasks.Find("../tasks", "rt-01")
	if err != nil {
		b.Fatal(err)
	}
	sha, _ := bundleSHA256(task)
	s := &server{cfg: Config{TasksDir: "../tasks"}, log: slog.New(slog.DiscardHandler), store: st, key: key}
	a := apitype.Attempt{ID: "a-1", Task: "rt-01", Created: time.Now()}
	if err := st.CreateAttempt(ctx, a); err != nil {
		b.Fatal(err)
	}
	a.State, a.TaskSHA256, a.BenchdVersion = apitype.StateDone, sha, Version
	var base, signed time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := st.UpdateAttempt(ctx, a); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		s.sign(ctx, "a-1", &apitype.TaskPolicy{Allow: task.Policy.Allow, Ignore: task.Policy.Ignore})
		base, signed = base+t1.Sub(t0), signed+time.Since(t1)
	}
	b.ReportMetric(float64(signed.Microseconds())/float64(b.N), "sign-us/op")
	b.ReportMetric(float64(base.Microseconds())/float64(b.N), "update-us/op")
	b.ReportMetric(float64(signed)/float64(base), "sign/update")
}
