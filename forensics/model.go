package forensics

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"benchd.dev/client/apitype"
)

// checkModel checks an archive's model calls against attempt.json's
// usage, which the statement check compares with the signed one:
// model.jsonl hashes to its calls_sha256, each call's stored messages
// to the hashes the call gives, and the calls sum to its counts and
// tokens (the cost is the price table's, which the archive does not
// hold: it is checked as signed, not recomputed). ok is false when the
// attempt has neither usage nor calls: there is nothing to check.
func checkModel(root string, a apitype.Attempt) (detail string, err error, ok bool) {
	raw, rerr := os.ReadFile(filepath.Join(root, ModelFile))
	if errors.Is(rerr, fs.ErrNotExist) {
		if a.Model == nil {
			return "", nil, false
		}
		return "", fmt.Errorf("attempt.json has a model usage of %d calls, the archive has no model.jsonl", a.Model.Calls), true
	}
	if rerr != nil {
		return "", rerr, true
	}
	if a.Model == nil {
		return "", errors.New("the archive has model.jsonl, attempt.json no model usage"), true
	}
	sum := sha256.Sum256(raw)
	if h := hex.EncodeToString(sum[:]); h != a.Model.CallsSHA256 {
		return "", fmt.Errorf("model.jsonl hashes to %s, attempt.json's calls_sha256 is %s (the calls were changed)", shortSHA(h), shortSHA(a.Model.CallsSHA256)), true
	}
	var calls []apitype.ModelCall
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var c apitype.ModelCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return "", fmt.Errorf("model.jsonl line %d: %v", len(calls)+1, err), true
		}
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("model.jsonl: %v", err), true
	}
	if apitype.ModelCallsSHA256(calls) != a.Model.CallsSHA256 {
		return "", errors.New("model.jsonl is not the canonical encoding of its calls"), true
	}
	var bytesStored int64
	for _, c := range calls {
		for _, m := range []struct{ kind, sha string }{{"request", c.RequestSHA256}, {"response", c.ResponseSHA256}} {
			name := ModelMessageFile(c.Seq, m.kind == "response")
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
			if err != nil {
				return "", fmt.Errorf("call %d: %v", c.Seq, err), true
			}
			s := sha256.Sum256(b)
			if h := hex.EncodeToString(s[:]); h != m.sha {
				return "", fmt.Errorf("%s hashes to %s, its call says %s (the message was changed)", name, shortSHA(h), shortSHA(m.sha)), true
			}
			bytesStored += int64(len(b))
		}
	}
	got := apitype.ModelUsageOf(calls)
	want := *a.Model
	want.CostUSD, want.Unpriced, want.CallsSHA256 = nil, 0, ""
	if got != want {
		return "", fmt.Errorf("the calls sum to %s, attempt.json says %s", usageJSON(got), usageJSON(want)), true
	}
	return fmt.Sprintf("%s, each stored message matches its hash (%d bytes), the calls sum to the signed usage", plural(len(calls), "call"), bytesStored), nil, true
}

// usageJSON is u as compact JSON, for a message.
func usageJSON(u apitype.ModelUsage) string {
	b, _ := json.Marshal(u)
	return string(b)
}
