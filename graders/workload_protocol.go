package graders

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The result protocol of the scripts the exact and refusal
// kinds run with the agent's code loaded in the same interpreter.
//
// The agent's code can print anything, so a script reports on one line of
// stdout that starts with resultPrefix and carries a nonce: a random value
// the grader writes to a file the script reads and removes before it
// imports the agent's code. A line without the nonce is ignored. This
// stops a map or fixture that prints a forged result line; it does not
// stop code that goes looking through the interpreter's memory for the
// nonce, which is out of scope (the hidden tests and goldens are never in
// the scratch directory the code runs in).
const resultPrefix = "BENCH-RESULT "

// newNonce returns a fresh nonce, for a script that reads it on stdin.
func newNonce() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", infraf("making a nonce: %v", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// writeNonce writes a fresh nonce to a file in dir and returns both.
func writeNonce(dir string) (nonce, path string, err error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", infraf("making a nonce: %v", err)
	}
	nonce = hex.EncodeToString(b[:])
	f, err := os.CreateTemp(dir, ".benchd-nonce-")
	if err != nil {
		return "", "", infraf("writing the nonce: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteString(nonce + "\n"); err != nil {
		return "", "", infraf("writing the nonce: %v", err)
	}
	// The script may run as another uid: it must be able to read and
	// remove the file (the directory is the scratch, mode 0755).
	if err := f.Chmod(0o666); err != nil {
		return "", "", infraf("writing the nonce: %v", err)
	}
	return nonce, filepath.Clean(f.Name()), nil
}

// readResult finds the last result line of stdout that carries nonce and
// decodes its JSON into v. It reports whether there was one.
func readResult(stdout []byte, nonce string, v any) (bool, error) {
	lines := bytes.Split(stdout, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if !bytes.HasPrefix(l, []byte(resultPrefix)) {
			continue
		}
		var probe struct {
			Nonce string `json:"nonce"`
		}
		body := l[len(resultPrefix):]
		if json.Unmarshal(body, &probe) != nil || probe.Nonce != nonce {
			continue
		}
		if err := json.Unmarshal(body, v); err != nil {
			return false, fmt.Errorf("decoding the result line: %w", err)
		}
		return true, nil
	}
	return false, nil
}

// numberParam reads a numeric parameter (TOML integer or float); def
// when absent.
func numberParam(in Input, key string, def float64) (float64, error) {
	v, ok := in.Task.Grader.Params[key]
	if !ok {
		return def, nil
	}
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case int:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, infraf("task %s: grader parameter %s: got %T, want a number", in.Task.ID, key, v)
}
