package main

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// exitUnchecked is verify's status when every check passed but no key
// was given, so that who signed the archive was not checked.
const exitUnchecked = 3

func (c *CLI) cmdKey(ctx context.Context, args []string) int {
	f := c.newFlags("key")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	k, err := c.api().HostKey(ctx)
	if err != nil {
		return c.fail("key", exitError, err)
	}
	if f.json {
		c.printJSON(k)
		return exitOK
	}
	fmt.Fprintln(c.Stdout, k.PublicKey)
	return exitOK
}

// parseKey reads a public key given to verify --key: 64 hex digits, or
// a file holding them (as benchctl key prints them) or a PEM public key.
func parseKey(arg string) (ed25519.PublicKey, error) {
	if k, err := hexKey(arg); err == nil {
		return k, nil
	}
	b, err := os.ReadFile(arg)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("--key %q: neither a file nor an Ed25519 public key in hex (%d digits, as benchctl key prints it)", arg, 2*ed25519.PublicKeySize)
	}
	if err != nil {
		return nil, fmt.Errorf("--key: %w", err)
	}
	if blk, _ := pem.Decode(b); blk != nil {
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("--key %s: %w", arg, err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("--key %s: a %T, want an Ed25519 public key", arg, k)
		}
		return pub, nil
	}
	k, err := hexKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("--key %s: %v", arg, err)
	}
	return k, nil
}

func hexKey(s string) (ed25519.PublicKey, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("not an Ed25519 public key (want %d hex digits, as benchctl key prints it, or a PEM public key)", 2*ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}
