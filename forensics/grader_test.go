package forensics

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/graders"
	"benchd.dev/internal/testenv"
	"benchd.dev/tasks"
)

// journalBuilder changes a workspace and journals each change as the
// view would, so that the journal replays to the tree left behind.
type journalBuilder struct {
	t    *testing.T
	ws   string
	w    *journal.Writer
	recs []journal.Record
	mono int64
}

func (b *journalBuilder) add(r journal.Record) {
	b.t.Helper()
	b.mono += 1_000_000
	r.Mono, r.Wall = b.mono, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(b.mono))
	if r.Result == "" {
		r.Result = "ok"
	}
	if r.Op != journal.OpMount && r.Op != journal.OpUnmount {
		r.PID, r.Comm = 4242, "agent"
		if r.Decision == "" {
			r.Decision = journal.Allowed
		}
	}
	got, err := b.w.Append(r)
	if err != nil {
		b.t.Fatal(err)
	}
	b.recs = append(b.recs, got)
}

// writeFile writes content at p, its directories made, with mode.
func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func (b *journalBuilder) abs(rel string) string { return filepath.Join(b.ws, filepath.FromSlash(rel)) }

func (b *journalBuilder) mkdir(rel string) {
	b.t.Helper()
	if err := os.Mkdir(b.abs(rel), 0o755); err != nil {
		b.t.Fatal(err)
	}
	os.Chmod(b.abs(rel), 0o755)
	b.add(journal.Record{Op: journal.OpMkdir, Path: rel, Mode: 0o755})
}

func (b *journalBuilder) write(rel, content string) {
	b.t.Helper()
	_, err := os.Lstat(b.abs(rel))
	if err := os.WriteFile(b.abs(rel), []byte(content), 0o644); err != nil {
		b.t.Fatal(err)
	}
	os.Chmod(b.abs(rel), 0o644)
	if os.IsNotExist(err) {
		b.add(journal.Record{Op: journal.OpCreate, Path: rel, Mode: 0o644})
	} else {
		b.add(journal.Record{Op: journal.OpOpen, Path: rel, Flags: uint32(os.O_WRONLY | os.O_TRUNC)})
	}
	b.add(journal.Record{Op: journal.OpRelease, Path: rel, Size: int64(len(content)), SHA256: journal.HashBytes([]byte(content))})
}

func (b *journalBuilder) rename(from, to string) {
	b.t.Helper()
	if err := os.Rename(b.abs(from), b.abs(to)); err != nil {
		b.t.Fatal(err)
	}
	b.add(journal.Record{Op: journal.OpRename, Path: from, Path2: to})
}

func (b *journalBuilder) symlink(rel, target string) {
	b.t.Helper()
	if err := os.Symlink(target, b.abs(rel)); err != nil {
		b.t.Fatal(err)
	}
	b.add(journal.Record{Op: journal.OpSymlink, Path: rel, Target: target})
}

// refused journals an operation the edit policy refused: nothing changes.
func (b *journalBuilder) refused(op journal.Op, rel string) {
	b.add(journal.Record{Op: op, Path: rel, Result: "EACCES", Decision: journal.Denied})
}

// TestVerifyAgreesWithGrader grades one journal with the grader
// (graders.Grade, given the journal's changeset and denied count as the
// daemon gives them) and re-derives the verdict's wrong_files from it as
// Verify does (its rederive check), under three allow globs, for an honest attempt that adds
// a directory and hostile ones; the two must agree, and both must say
// what the rule says.
//
// The journals record every change as allowed: the view refuses a
// mkdir no allow glob matches, but a changeset holding such a
// directory (benchd grade on a bare tree, a view of another policy)
// must be judged alike on both sides.
func TestVerifyAgreesWithGrader(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	// RT-05's kind (exact) is the quickest to run; its verdict on the
	// tree is beside the point, the shared rules are every task's.
	task, err := tasks.Find("../tasks", "rt-05")
	if err != nil {
		t.Fatal(err)
	}
	type wantByGlob map[string]bool // allow glob: wrong_files expected
	cases := []struct {
		name string
		do   func(b *journalBuilder)
		want wantByGlob
	}{
		{"honest", func(b *journalBuilder) {}, wantByGlob{"*.py": false, "**/*.py": false, "src/**/*.py": false}},
		{"adds a directory", func(b *journalBuilder) {
			b.mkdir("src/util")
			b.write("src/util/helper.py", "STEP = 1\n")
		}, wantByGlob{"*.py": false, "**/*.py": false, "src/**/*.py": false}},
		{"adds an empty directory", func(b *journalBuilder) {
			b.mkdir("src/empty")
		}, wantByGlob{"*.py": true, "**/*.py": true, "src/**/*.py": true}},
		{"a directory named like a file", func(b *journalBuilder) {
			b.mkdir("src/evil.py")
			b.write("src/evil.py/notes.txt", "not python\n")
		}, wantByGlob{"*.py": true, "**/*.py": true, "src/**/*.py": true}},
		{"a rename out of an allowed path", func(b *journalBuilder) {
			b.rename("src/__init__.py", "top.py")
		}, wantByGlob{"*.py": false, "**/*.py": false, "src/**/*.py": true}},
		{"a rename to a denied name", func(b *journalBuilder) {
			b.rename("src/__init__.py", "src/init.txt")
		}, wantByGlob{"*.py": true, "**/*.py": true, "src/**/*.py": true}},
		{"a symlink", func(b *journalBuilder) {
			// The tree rules fail it (unsafe_link) before the changed
			// files are judged.
			b.symlink("src/link.py", "counter.py")
		}, wantByGlob{"*.py": false, "**/*.py": false, "src/**/*.py": false}},
		{"a refused mkdir", func(b *journalBuilder) {
			b.refused(journal.OpMkdir, "pkg")
		}, wantByGlob{"*.py": true, "**/*.py": true, "src/**/*.py": true}},
	}
	for _, glob := range []string{"*.py", "**/*.py", "src/**/*.py"} {
		for _, tc := range cases {
			t.Run(glob+"/"+tc.name, func(t *testing.T) {
				pol := journal.Policy{Allow: []string{glob}, Ignore: task.Policy.Ignore}
				dir := t.TempDir()
				ws := filepath.Join(dir, "ws")
				if err := tasks.CopyTree(task.WorkspaceDir(), ws); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(ws, "src", "__init__.py"), "", 0o644)
				writeFile(t, filepath.Join(ws, "src", "counter.py"), "STEP = 0\n", 0o644)
				os.Chmod(filepath.Join(ws, "src"), 0o755)
				jpath := filepath.Join(dir, "journal.jsonl")
				w, err := journal.Create(jpath)
				if err != nil {
					t.Fatal(err)
				}
				b := &journalBuilder{t: t, ws: ws, w: w}
				initial, err := journal.SnapshotTree(ws, w.Blobs())
				if err != nil {
					t.Fatal(err)
				}
				b.add(journal.Record{Op: journal.OpMount, SHA256: initial.ManifestHash()})
				b.write("src/counter.py", "STEP = 1\n")
				tc.do(b)
				final, err := journal.SnapshotTree(ws, w.Blobs())
				if err != nil {
					t.Fatal(err)
				}
				b.add(journal.Record{Op: journal.OpUnmount, SHA256: final.ManifestHash()})
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				blobs := w.Blobs()
				if err := journal.VerifyReplay(b.recs, blobs); err != nil {
					t.Fatalf("the journal does not replay: %v", err)
				}

				// The grader, as the daemon calls it.
				cs, err := journal.ChangesetOf(b.recs, blobs, pol)
				if err != nil {
					t.Fatal(err)
				}
				gt := *task
				gt.Policy = pol
				zero := 0
				v, err := graders.Grade(context.Background(), graders.Input{Task: &gt, Workspace: ws, Changeset: cs,
					Denied: journal.CountsOf(b.recs).Denied, AgentExit: &zero, ScratchRoot: t.TempDir()}, graders.ExecRunner{})
				if err != nil {
					t.Fatalf("Grade: %v", err)
				}
				if got := v.Has(graders.CodeWrongFiles); got != tc.want[glob] {
					t.Errorf("the grader: got wrong_files %v, want %v (codes %v)", got, tc.want[glob], v.Codes())
				}

				// verify, on the attempt that verdict made.
				a := apitype.Attempt{State: apitype.StateDone, Pass: v.Pass, Reward: v.Reward, Denied: journal.CountsOf(b.recs).Denied}
				for _, r := range v.Reasons {
					a.Reasons = append(a.Reasons, apitype.Reason{Code: r.Code, Message: r.Message})
				}
				ends, err := replayEnds(b.recs, blobs)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := rederive(b.recs, ends, a, apitype.TaskInfo{ID: task.ID, Allow: pol.Allow, Ignore: pol.Ignore}); err != nil {
					t.Errorf("verify disagrees with the grader's verdict %v: %v", v.Codes(), err)
				}
				if slices.Contains(v.Codes(), graders.CodeUnsafeLink) != (tc.name == "a symlink") {
					t.Errorf("got codes %v: unsafe_link only for the symlink", v.Codes())
				}
			})
		}
	}
}
