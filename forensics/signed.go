package forensics

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/dsse"
	"benchd.dev/reason"
)

// checkSignature checks the envelope file p: with key, that key signed
// it; without, only that it is an envelope. It returns the statement
// the envelope carries.
func checkSignature(p string, key ed25519.PublicKey) (*apitype.Statement, string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("missing: the archive has no %s, so nothing in it is signed", SignedFile)
		}
		return nil, "", err
	}
	env, err := dsse.Parse(b)
	if err != nil {
		return nil, "", err
	}
	if env.PayloadType != apitype.StatementPayloadType {
		return nil, "", fmt.Errorf("payload type %q, want %q", env.PayloadType, apitype.StatementPayloadType)
	}
	if len(env.Signatures) == 0 {
		return nil, "", fmt.Errorf("missing: %w", dsse.ErrNoSignature)
	}
	detail := "not checked: no --key given, so who signed it is unknown"
	if key != nil {
		if err := dsse.Verify(env, key); err != nil {
			return nil, "", err
		}
		detail = "signed by the key given (keyid " + shortSHA(dsse.KeyID(key)) + ")"
	}
	var st apitype.Statement
	dec := json.NewDecoder(bytes.NewReader(env.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, "", fmt.Errorf("the signed payload is not a statement: %w", err)
	}
	switch {
	case st.Type == apitype.StatementType && st.Review != nil:
		return nil, "", fmt.Errorf("the signed statement is of type %q, which has no review, but carries one", st.Type)
	case st.Type == apitype.StatementTypeReviewed && st.Review == nil:
		return nil, "", fmt.Errorf("the signed statement is of type %q (reviewed), but carries no review", st.Type)
	case st.Type != apitype.StatementType && st.Type != apitype.StatementTypeReviewed:
		return nil, "", fmt.Errorf("the signed statement is of type %q, want %q or %q", st.Type, apitype.StatementType, apitype.StatementTypeReviewed)
	}
	return &st, detail, nil
}

// checkStatement compares each field of the signed statement with the
// one attempt.json gives, and names the first that differs.
func checkStatement(signed *apitype.Statement, a apitype.Attempt) error {
	want, err := fieldsOf(*signed)
	if err != nil {
		return err
	}
	got, err := fieldsOf(apitype.StatementOf(a))
	if err != nil {
		return err
	}
	// Every field either side gives: a field attempt.json adds that the
	// statement omits (an empty retry_of, a review where none is signed)
	// differs as much as one it changes.
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var bad []string
	for _, k := range names {
		if k == "task_policy" { // task.json's: checkPolicy
			continue
		}
		if !bytes.Equal(want[k], got[k]) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	k := bad[0]
	g, w := got[k], want[k]
	if w == nil {
		w = []byte("nothing")
	}
	if g == nil {
		g = []byte("nothing")
	}
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	gs, ws := clip(g, i), clip(w, i)
	if g == nil {
		gs = "none"
	}
	if w == nil {
		ws = "none"
	}
	return fmt.Errorf("signed field %s differs: attempt.json gives %s, the signature covers %s%s",
		k, gs, ws, more(bad[1:]))
}

// checkPolicy compares the signed edit policy with task.json's. When
// task.json has none, the signed one is put in t for the checks that
// re-derive from the journal. It returns a note for the reader, if any.
func checkPolicy(signed *apitype.Statement, t *apitype.TaskInfo) (string, string, error) {
	have := t.Allow != nil || t.Ignore != nil
	if signed.TaskPolicy == nil {
		if have {
			return "no signed policy", "the edit policy of task.json is not signed (benchd no longer had the bundle when it signed): check it against the bundle of hash task_sha256", nil
		}
		return "no policy signed or given", "", nil
	}
	sp := apitype.TaskPolicy{Allow: orEmpty(signed.TaskPolicy.Allow), Ignore: orEmpty(signed.TaskPolicy.Ignore)}
	if !have {
		t.Allow, t.Ignore = sp.Allow, sp.Ignore
		return "the signed policy is used: task.json has none", "", nil
	}
	tp := apitype.TaskPolicy{Allow: orEmpty(t.Allow), Ignore: orEmpty(t.Ignore)}
	g, _ := json.Marshal(tp)
	w, _ := json.Marshal(sp)
	if !bytes.Equal(g, w) {
		return "", "", fmt.Errorf("signed field task_policy differs: task.json gives %s, the signature covers %s", g, w)
	}
	return "task.json's allow and ignore globs are the signed ones", "", nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func fieldsOf(st apitype.Statement) (map[string][]byte, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for k, v := range m {
		out[k] = v
	}
	return out, nil
}

// clip shows b around offset at, where it first differs.
func clip(b []byte, at int) string {
	from, to, pre, post := max(at-30, 0), min(at+50, len(b)), "", ""
	if from > 0 {
		pre = "..."
	}
	if to < len(b) {
		post = "..."
	}
	return pre + string(b[from:to]) + post
}

func more(fields []string) string {
	if len(fields) == 0 {
		return ""
	}
	return " (also " + strings.Join(fields, ", ") + ")"
}

// rederive recomputes from the journal what the verdict claims about it:
// the denied operations (attempt.json's denied), and whether the verdict
// must carry wrong_files (a change the edit policy denies, or a denied
// operation). The changeset is the changeset check's. Without a verdict
// there is nothing to compare wrong_files with.
func rederive(recs []journal.Record, ends treeEnds, a apitype.Attempt, t apitype.TaskInfo) (string, error) {
	denied := journal.CountsOf(recs).Denied
	if denied != a.Denied {
		return "", fmt.Errorf("the journal has %d denied operation(s), attempt.json claims %d", denied, a.Denied)
	}
	if !a.HasVerdict() {
		return fmt.Sprintf("%d denied operation(s) as claimed; no verdict to compare wrong_files with", denied), nil
	}
	if t.Allow == nil && t.Ignore == nil {
		return fmt.Sprintf("%d denied operation(s) as claimed; task.json carries no edit policy, so wrong_files was not re-derived", denied), nil
	}
	pol := journal.Policy{Allow: t.Allow, Ignore: t.Ignore}
	if err := pol.Validate(); err != nil {
		return "", fmt.Errorf("task.json's edit policy: %w", err)
	}
	// The grader's rule (graders.Grade) on the same changeset.
	bad := pol.Violations(journal.DiffTrees(ends.initial, ends.final, pol.IsIgnored))
	// What the grader claimed: a review replaces the verdict, not the
	// grader's reasons.
	reasons := a.Reasons
	if a.Review != nil {
		reasons = a.Review.Graded.Reasons
	}
	has := slices.ContainsFunc(reasons, func(r apitype.Reason) bool { return r.Code == reason.WrongFiles })
	// A tree the graders may not copy is failed without the changed-files
	// rule (graders.Grade), so only denied operations then demand it.
	treeFailed := slices.ContainsFunc(reasons, func(r apitype.Reason) bool { return reason.TreeRule(r.Code) })
	want := denied > 0 || len(bad) > 0 && !treeFailed
	switch {
	case want && !has && denied > 0:
		return "", fmt.Errorf("the journal has %d denied operation(s), but the verdict has no wrong_files", denied)
	case want && !has:
		return "", fmt.Errorf("the journal changes %s, which the edit policy does not allow, but the verdict has no wrong_files", shortList(bad))
	case has && len(bad) == 0 && denied == 0:
		return "", errors.New("the verdict claims wrong_files, but the journal changes only allowed files and has no denied operation")
	}
	return fmt.Sprintf("%d denied operation(s), %d disallowed change(s): wrong_files %s as claimed", denied, len(bad), map[bool]string{true: "present", false: "absent"}[has]), nil
}

func shortList(s []string) string {
	if len(s) > 5 {
		return strings.Join(s[:5], ", ") + fmt.Sprintf(" and %d more", len(s)-5)
	}
	return strings.Join(s, ", ")
}

// checkReview checks the review of the archive at root: when one is
// signed, review.json must be there and equal it field by field, and
// the signed verdict must be the one the review decided, over a
// verdict the grader left to review; when none is signed, no
// review.json may claim one. It returns what the review says.
func checkReview(root string, signed *apitype.Statement) (string, error) {
	p := filepath.Join(root, ReviewFile)
	b, err := os.ReadFile(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if signed.Review == nil {
		if exists {
			return "", fmt.Errorf("the archive has %s, but the signed statement has no review: the review is not benchd's", ReviewFile)
		}
		return "none: the signed verdict is the grader's", nil
	}
	rv := signed.Review
	if !exists {
		return "", fmt.Errorf("missing %s: the signed statement carries a review (%s by uid %d)", ReviewFile, rv.Outcome, rv.UID)
	}
	var file apitype.Review
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return "", fmt.Errorf("%s is not a review: %w", ReviewFile, err)
	}
	want, _ := json.Marshal(rv)
	got, _ := json.Marshal(file)
	var wm, gm map[string]json.RawMessage
	json.Unmarshal(want, &wm)
	json.Unmarshal(got, &gm)
	var bad []string
	for k := range wm {
		if !bytes.Equal(wm[k], gm[k]) {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		k := bad[0]
		return "", fmt.Errorf("the review's %s differs: %s gives %s, the signature covers %s%s", k, ReviewFile, clip(gm[k], 0), clip(wm[k], 0), more(bad[1:]))
	}
	v := signed.Verdict
	switch {
	case rv.Graded.Outcome != apitype.OutcomeReview:
		return "", fmt.Errorf("the signed review decides a verdict the grader did not leave to review (its outcome %q)", rv.Graded.Outcome)
	case v == nil || v.Outcome != rv.Outcome || v.Pass != (rv.Outcome == apitype.OutcomePass):
		return "", fmt.Errorf("the signed verdict is not the one the signed review decided (%s)", rv.Outcome)
	}
	return fmt.Sprintf("%s by uid %d at %s, over the grader's review verdict; signed, and %s is the signed review: %s",
		rv.Outcome, rv.UID, rv.Time.UTC().Format(time.RFC3339), ReviewFile, oneLine(rv.Why, 120)), nil
}
