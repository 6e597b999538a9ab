package dsse

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"
)

func TestPAE(t *testing.T) {
	tests := []struct {
		name, typ, body, want string
	}{
		// The example of the DSSE protocol document.
		{"spec example", "http://example.com/HelloWorld", "hello world", "DSSEv1 29 http://example.com/HelloWorld 11 hello world"},
		{"empty", "", "", "DSSEv1 0  0 "},
		{"multi-byte runes counted in bytes", "t", "é", "DSSEv1 1 t 2 é"},
		{"spaces in the body", "a b", "c d e", "DSSEv1 3 a b 5 c d e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(PAE(tt.typ, []byte(tt.body))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func testKey(t *testing.T, seed byte) ed25519.PrivateKey {
	t.Helper()
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

func TestSignVerify(t *testing.T) {
	key := testKey(t, 1)
	pub := key.Public().(ed25519.PublicKey)
	env := Sign(key, "application/vnd.test+json", []byte(`{"pass":false}`))
	if got, want := env.Signatures[0].KeyID, KeyID(pub); got != want {
		t.Fatalf("got key id %s, want %s", got, want)
	}
	// The signature is over the PAE, not the payload alone.
	if ed25519.Verify(pub, env.Payload, env.Signatures[0].Sig) {
		t.Fatal("the signature verifies over the bare payload, want it over the PAE")
	}
	if err := Verify(env, pub); err != nil {
		t.Fatalf("genuine envelope: %v", err)
	}
	// Through JSON and back.
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(back, pub); err != nil {
		t.Fatalf("after a JSON round trip: %v", err)
	}
}

func TestTamper(t *testing.T) {
	key := testKey(t, 1)
	pub := key.Public().(ed25519.PublicKey)
	other := testKey(t, 2)
	tests := []struct {
		name   string
		change func(e *Envelope)
		key    ed25519.PublicKey
		want   error
	}{
		{"payload byte", func(e *Envelope) { e.Payload[10] ^= 1 }, pub, ErrBadSignature},
		{"payload type", func(e *Envelope) { e.PayloadType = "application/vnd.other+json" }, pub, ErrBadSignature},
		{"signature byte", func(e *Envelope) { e.Signatures[0].Sig[0] ^= 1 }, pub, ErrBadSignature},
		{"key id removed, signature changed", func(e *Envelope) { e.Signatures[0].KeyID = ""; e.Signatures[0].Sig[5] ^= 1 }, pub, ErrBadSignature},
		{"no signature", func(e *Envelope) { e.Signatures = nil }, pub, ErrNoSignature},
		{"another key", func(e *Envelope) {}, other.Public().(ed25519.PublicKey), ErrWrongKey},
		{"another key's signature under this key's id", func(e *Envelope) {
			*e = Sign(other, e.PayloadType, e.Payload)
			e.Signatures[0].KeyID = KeyID(pub)
		}, pub, ErrBadSignature},
		// Moving bytes between type and payload keeps their concatenation
		// but not the PAE.
		{"boundary moved", func(e *Envelope) {
			e.PayloadType += string(e.Payload[:1])
			e.Payload = e.Payload[1:]
		}, pub, ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := Sign(key, "application/vnd.test+json", []byte(`{"pass":false,"reasons":["timeout"]}`))
			tt.change(&env)
			err := Verify(env, tt.key)
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want an error matching %v", err, tt.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"payload":"eA=="}`, `{"payloadType":"x","payload":"not base64!"}`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q): got no error, want one", in)
		}
	}
}
