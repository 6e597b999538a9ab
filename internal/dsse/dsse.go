// Package dsse signs and verifies payloads in the Dead Simple Signing
// Envelope format (DSSE v1, github.com/secure-systems-lab/dsse, the
// envelope in-toto and Sigstore use) with Ed25519 keys.
//
// A signature covers the pre-authentication encoding (PAE) of the
// payload type and the payload, never the payload alone, so that a
// signature over one type of statement cannot be passed off as another:
//
//	PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
//
// where LEN is the length in bytes as ASCII decimal without leading
// zeros and SP one space. The envelope carries the payload and each
// signature in standard base64; a key id names the key that made a
// signature (KeyID: the SHA-256 of the raw 32-byte Ed25519 public key,
// in hex). Key ids are hints for finding a key, not trusted: Verify
// checks the signature with the key it is given.
//
// The package is pure Go and imports nothing of this module, so that
// benchctl can check an envelope on any machine.
package dsse

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Envelope is a DSSE envelope in its JSON form. Payload and Sig are
// base64 (standard, padded) in JSON, as []byte marshals.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     []byte      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one signature of an envelope.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   []byte `json:"sig"`
}

// Errors of Verify.
var (
	// ErrNoSignature: the envelope carries no signature.
	ErrNoSignature = errors.New("the envelope carries no signature")
	// ErrWrongKey: no signature of the envelope is by the key given.
	ErrWrongKey = errors.New("not signed by the key given")
	// ErrBadSignature: a signature by the key's id does not verify.
	ErrBadSignature = errors.New("signature does not verify")
)

// PAE is the pre-authentication encoding of payloadType and payload.
func PAE(payloadType string, payload []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(payload)))
	b.WriteByte(' ')
	b.Write(payload)
	return b.Bytes()
}

// KeyID names an Ed25519 public key: the hex SHA-256 of its 32 bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:])
}

// Sign returns the envelope of payload, signed by key.
func Sign(key ed25519.PrivateKey, payloadType string, payload []byte) Envelope {
	pub := key.Public().(ed25519.PublicKey)
	return Envelope{
		PayloadType: payloadType,
		Payload:     bytes.Clone(payload),
		Signatures:  []Signature{{KeyID: KeyID(pub), Sig: ed25519.Sign(key, PAE(payloadType, payload))}},
	}
}

// Verify checks that one signature of env is pub's over the envelope's
// payload type and payload. A signature whose key id is another key's is
// skipped; one with pub's key id, or with no key id, must verify. It
// returns an error matching ErrNoSignature, ErrWrongKey or
// ErrBadSignature.
func Verify(env Envelope, pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("public key of %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if len(env.Signatures) == 0 {
		return ErrNoSignature
	}
	id := KeyID(pub)
	msg := PAE(env.PayloadType, env.Payload)
	tried := 0
	var others []string
	for _, s := range env.Signatures {
		if s.KeyID != "" && s.KeyID != id {
			others = append(others, s.KeyID)
			continue
		}
		tried++
		if ed25519.Verify(pub, msg, s.Sig) {
			return nil
		}
	}
	if tried == 0 {
		return fmt.Errorf("%w (its keyid %s; the envelope is signed by keyid %s)", ErrWrongKey, short(id), short(others[0]))
	}
	return fmt.Errorf("%w with the key given (keyid %s): the payload or the signature was changed, or another key made it", ErrBadSignature, short(id))
}

// Parse decodes an envelope and checks that it has its fields.
func Parse(b []byte) (Envelope, error) {
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&env); err != nil {
		return Envelope{}, fmt.Errorf("not a DSSE envelope: %w", err)
	}
	if env.PayloadType == "" {
		return Envelope{}, errors.New("not a DSSE envelope: no payloadType")
	}
	if env.Signatures == nil {
		env.Signatures = []Signature{}
	}
	return env, nil
}

func short(id string) string {
	if len(id) > 16 {
		return id[:16]
	}
	return id
}
