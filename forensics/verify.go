package forensics

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/dsse"
)

// Check is one check of Verify: its name, whether it passed, and what
// it found.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Result is what Verify found (benchctl verify --json prints it).
type Result struct {
	File    string   `json:"file"`
	OK      bool     `json:"ok"`
	Attempt string   `json:"attempt,omitempty"`
	Task    string   `json:"task,omitempty"`
	Records int      `json:"records"`
	Blobs   int      `json:"blobs"`
	Checks  []Check  `json:"checks"`
	Notes   []string `json:"notes,omitempty"`
	// SignerChecked says whether --key was given and the signature is
	// that key's; without it, OK means every other check passed.
	SignerChecked bool `json:"signer_checked"`
	// KeyID is the id of the key given with --key.
	KeyID string `json:"keyid,omitempty"`
	// Regraded says the grade was run again (--regrade) and agreed.
	Regraded bool `json:"regraded"`
	// Review is the signed review of a reviewed attempt, once checked.
	Review *apitype.Review `json:"review,omitempty"`
}

func (r *Result) add(name string, err error, okDetail string) bool {
	if err != nil {
		r.Checks = append(r.Checks, Check{Name: name, Detail: err.Error()})
		return false
	}
	r.Checks = append(r.Checks, Check{Name: name, OK: true, Detail: okDetail})
	return true
}

// FirstProblem returns the first failed check as "name: detail".
func (r *Result) FirstProblem() string {
	for _, c := range r.Checks {
		if !c.OK {
			return c.Name + ": " + c.Detail
		}
	}
	return ""
}

// Options are Verify's.
type Options struct {
	// Key is the signer's public key; nil checks the envelope but not
	// who signed it (Result.SignerChecked is false).
	Key ed25519.PublicKey
	// Regrade, when set, grades the attempt again once its journal has
	// checked out (the check "regrade"): root is the unpacked archive,
	// recs and blobs its journal. It returns what it found, or why the
	// grade differs. benchctl verify --regrade runs benchd's grader.
	Regrade func(ctx context.Context, root string, a apitype.Attempt, recs []journal.Record, blobs *journal.Blobs) (string, error)
}

// Verify checks the export archive file (a tar or a gzip'd tar) without
// benchd: it unpacks it into a temporary directory, then checks the
// layout, attempt.json against task.json, the signature and every signed
// field, the review, the policy, the model calls, every blob against its
// name, the journal's hash chain and its head against attempt.json, that
// replaying the journal rebuilds the final tree, that the changeset of
// the replayed tree is attempt.json's, and what the verdict claims of
// the journal (rederive). The error is for an archive that cannot be
// read at all (I/O); a bad archive is a Result whose OK is false.
func Verify(ctx context.Context, file string, opt Options) (*Result, error) {
	key := opt.Key
	res := &Result{File: file, Checks: []Check{}}
	if key != nil {
		res.KeyID = dsse.KeyID(key)
	}
	dir, err := os.MkdirTemp("", "forensics-verify-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	root, n, err := unpack(file, dir)
	if !res.add("archive", err, fmt.Sprintf("%d entries unpacked", n)) {
		return res, nil
	}
	var missing []string
	for _, name := range Required {
		if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(name))); err != nil || !st.Mode().IsRegular() {
			missing = append(missing, name)
		}
	}
	var layoutErr error
	if len(missing) > 0 {
		layoutErr = fmt.Errorf("missing %s (want %s)", strings.Join(missing, ", "), apitype.ExportLayout)
	}
	res.add("layout", layoutErr, "journal, blobs, transcript, attempt.json and task.json present")

	var a apitype.Attempt
	aerr := readJSONFile(filepath.Join(root, AttemptFile), &a)
	res.add("attempt.json", aerr, "parses")
	res.Attempt = a.ID
	var task apitype.TaskInfo
	terr := readJSONFile(filepath.Join(root, TaskFile), &task)
	res.add("task.json", terr, "parses")
	res.Task = task.ID
	if aerr == nil && terr == nil {
		res.add("task", checkTask(a, task), fmt.Sprintf("%s, bundle %s", task.ID, shortSHA(task.SHA256)))
	}
	signed, detail, serr := checkSignature(filepath.Join(root, SignedFile), key)
	res.add("signature", serr, detail)
	res.SignerChecked = serr == nil && key != nil
	if serr == nil && key == nil {
		res.Notes = append(res.Notes, "the signer was not checked: without --key, anyone could have made the signature; give benchd's public key (benchctl key on its host)")
	}
	if serr == nil && aerr == nil {
		res.add("statement", checkStatement(signed, a), "every signed field (verdict and reasons, review, journal head, task bundle, agent, limits, timings, version) equals attempt.json's")
	}
	if serr == nil {
		detail, err := checkReview(root, signed)
		res.add("review", err, detail)
		if err == nil && signed.Review != nil {
			res.Review = signed.Review
		}
	}
	if serr == nil && terr == nil {
		detail, note, err := checkPolicy(signed, &task)
		res.add("policy", err, detail)
		if note != "" {
			res.Notes = append(res.Notes, note)
		}
	}

	if aerr == nil {
		if detail, err, ok := checkModel(root, a); ok {
			res.add("model", err, detail)
		}
	}

	jpath := filepath.Join(root, JournalFile)
	blobs := &journal.Blobs{Dir: journal.BlobsDir(jpath)}
	if _, err := os.Stat(blobs.Dir); err != nil {
		if _, err := os.Stat(filepath.Join(root, "blobs")); err == nil {
			blobs.Dir = filepath.Join(root, "blobs")
		}
	}
	nb, err := checkAllBlobs(blobs)
	res.Blobs = nb
	res.add("blobs", err, fmt.Sprintf("%d blobs, each matches its hash", nb))

	recs, err := journal.Read(jpath)
	res.Records = len(recs)
	if !res.add("journal", err, fmt.Sprintf("%d records, each in canonical form", len(recs))) {
		res.OK = false
		return res, nil
	}
	chainOK := res.add("chain", journal.Verify(recs, blobs), "hash chain intact, mount and unmount manifests and every blob a record names present")
	if chainOK {
		last := recs[len(recs)-1]
		var herr error
		switch {
		case aerr != nil:
			herr = errors.New("no attempt.json to compare the head with")
		case a.JournalHead == "":
			herr = errors.New("attempt.json has no journal_head")
		case a.JournalHead != last.Hash:
			herr = fmt.Errorf("the journal's last hash %s is not attempt.json's journal_head %s (the journal was rewritten)", last.Hash, a.JournalHead)
		}
		res.add("head", herr, fmt.Sprintf("last hash %s equals attempt.json's journal_head", shortSHA(last.Hash)))
		if res.add("replay", journal.VerifyReplay(recs, blobs), "replaying the records rebuilds the final tree") && aerr == nil {
			// The changeset and rederive checks compare the same two
			// trees: replayed once.
			ends, rerr := replayEnds(recs, blobs)
			note, detail, cerr, derr := "", "", rerr, rerr
			if rerr == nil {
				note, cerr = checkChangeset(ends, a, task)
				detail, derr = rederive(recs, ends, a, task)
			}
			res.add("changeset", cerr, plural(len(a.Changeset), "change")+", equal to attempt.json's changeset")
			if note != "" {
				res.Notes = append(res.Notes, note)
			}
			res.add("rederive", derr, detail)
			if opt.Regrade != nil {
				detail, err := opt.Regrade(ctx, root, a, recs, blobs)
				res.add("regrade", err, detail)
				res.Regraded = err == nil
			}
		}
	}
	if opt.Regrade == nil {
		res.Notes = append(res.Notes, "the grade itself was not re-run: verify checks the record, not the grader's judgement (verify --regrade --tasks DIR runs it)")
	} else if !res.Regraded && !slices.ContainsFunc(res.Checks, func(c Check) bool { return c.Name == "regrade" }) {
		res.Notes = append(res.Notes, "the grade was not re-run: the journal did not check out")
	}
	res.OK = true
	for _, c := range res.Checks {
		res.OK = res.OK && c.OK
	}
	return res, nil
}

// unpack extracts the tar (or gzip'd tar) file into dir and returns the
// archive's root: dir, or its one top-level directory when everything is
// below one. Only regular files and directories are accepted, each path
// once, none leading outside dir.
func unpack(file, dir string) (string, int, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", 0, fmt.Errorf("not a gzip'd tar: %w", err)
		}
		r = zr
	}
	tr := tar.NewReader(r)
	seen := map[string]bool{}
	tops := map[string]bool{}
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", n, fmt.Errorf("not a tar archive (entry %d): %w", n+1, err)
		}
		n++
		name := h.Name
		clean := path.Clean(name)
		if name == "" || path.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "\\") {
			return "", n, fmt.Errorf("entry %q leads outside the archive", h.Name)
		}
		if clean == "." {
			continue
		}
		if seen[clean] {
			return "", n, fmt.Errorf("entry %q appears twice", clean)
		}
		seen[clean] = true
		tops[strings.SplitN(clean, "/", 2)[0]] = true
		dst := filepath.Join(dir, filepath.FromSlash(clean))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return "", n, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return "", n, err
			}
			out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return "", n, fmt.Errorf("entry %q: %w", clean, err)
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", n, fmt.Errorf("entry %q: %w", clean, err)
			}
		default:
			return "", n, fmt.Errorf("entry %q is of tar type %q, not a file or directory", clean, h.Typeflag)
		}
	}
	if n == 0 {
		return "", 0, errors.New("the archive is empty")
	}
	root := dir
	if !seen[JournalFile] && len(tops) == 1 {
		for top := range tops {
			root = filepath.Join(dir, top)
		}
	}
	return root, n, nil
}

func readJSONFile(p string, v any) error {
	b, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("missing")
		}
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("does not parse: %w", err)
	}
	return nil
}

// checkTask checks that attempt.json and task.json name the same task.
func checkTask(a apitype.Attempt, t apitype.TaskInfo) error {
	switch {
	case t.ID == "":
		return errors.New("task.json names no task")
	case a.Task != t.ID:
		return fmt.Errorf("attempt.json is of task %q, task.json describes %q", a.Task, t.ID)
	case a.TaskSHA256 != "" && t.SHA256 != "" && a.TaskSHA256 != t.SHA256:
		return fmt.Errorf("attempt.json was graded by bundle %s, task.json describes bundle %s", a.TaskSHA256, t.SHA256)
	}
	return nil
}

// checkAllBlobs checks every file of the blob directory: its place is
// S[:2]/S for a digest S, and its content hashes to S.
func checkAllBlobs(blobs *journal.Blobs) (int, error) {
	n := 0
	err := filepath.WalkDir(blobs.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(blobs.Dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.Contains(rel, "/") || len(rel) != 2) {
				return fmt.Errorf("%s: not a blob directory (want two hex digits)", rel)
			}
			return nil
		}
		sha := path.Base(rel)
		if !journal.ValidSHA(sha) || rel != sha[:2]+"/"+sha {
			return fmt.Errorf("%s: not a blob (want XX/SHA256 with XX its first two digits)", rel)
		}
		if err := blobs.Verify(sha); err != nil {
			return err
		}
		n++
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("no blob directory %s", filepath.Base(blobs.Dir))
	}
	return n, err
}

// treeEnds are a journal's initial tree and the final one (the tree
// before its unmount record).
type treeEnds struct{ initial, final journal.Tree }

// replayEnds replays recs to its two ends.
func replayEnds(recs []journal.Record, blobs *journal.Blobs) (treeEnds, error) {
	initial, err := journal.ReplayTree(recs, blobs, 0)
	if err != nil {
		return treeEnds{}, err
	}
	final, err := journal.ReplayTree(recs, blobs, recs[len(recs)-1].Seq-1)
	if err != nil {
		return treeEnds{}, err
	}
	return treeEnds{initial, final}, nil
}

// checkChangeset compares the changeset of the replayed final tree with
// attempt.json's. With the task's edit policy (task.json's allow and
// ignore globs) they must be equal; without it, every recorded change
// must be in the replay, and changes the recorded changeset lacks are
// only noted, as the policy may have ignored them.
func checkChangeset(ends treeEnds, a apitype.Attempt, t apitype.TaskInfo) (string, error) {
	havePolicy := t.Allow != nil || t.Ignore != nil
	pol := journal.Policy{Allow: t.Allow, Ignore: t.Ignore}
	var ignored func(string) bool
	if havePolicy {
		if err := pol.Validate(); err != nil {
			return "", fmt.Errorf("task.json's edit policy: %w", err)
		}
		ignored = pol.IsIgnored
	}
	got := changeKeys(journal.DiffTrees(ends.initial, ends.final, ignored))
	want := changeKeys(a.Changeset)
	gotSet := map[string]bool{}
	for _, k := range got {
		gotSet[k] = true
	}
	wantSet := map[string]bool{}
	for _, k := range want {
		wantSet[k] = true
		if !gotSet[k] {
			return "", fmt.Errorf("attempt.json lists %q, which the replayed tree does not show", k)
		}
	}
	var extra []string
	for _, k := range got {
		if !wantSet[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return "", nil
	}
	if havePolicy {
		return "", fmt.Errorf("the replayed tree shows %q, which attempt.json's changeset lacks", extra[0])
	}
	return fmt.Sprintf("task.json carries no edit policy: %d change(s) of the replay are not in attempt.json's changeset, presumably ignored by the policy: %s",
		len(extra), strings.Join(extra, "; ")), nil
}

// changeKeys renders each change as one comparable string, sorted.
func changeKeys(cs journal.Changeset) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		k := c.Kind + " " + c.Path
		if c.From != "" {
			k = c.Kind + " " + c.From + " -> " + c.Path
		}
		out[i] = k + " (" + c.Type + " " + shortSHA(c.SHA256) + ")"
	}
	sort.Strings(out)
	return out
}
