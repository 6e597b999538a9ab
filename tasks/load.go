package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"benchd.dev/fsmon/journal"
)

// Difficulty tags of [bench] difficulty: the kinds of difficulty a task
// carries (seed 000's list). The draw uses them to fill gaps in a group.
const (
	TagReplyOnly      = "reply-only"      // graded only on the agent's reply
	TagInjectedFault  = "injected-fault"  // the world injects a fault
	TagConnector      = "connector"       // uses a connector
	TagProactive      = "proactive"       // the agent must act unasked
	TagMultiSession   = "multi-session"   // spans more than one session
	TagSimulatedUser  = "simulated-user"  // needs answers from the simulated user
	TagApproval       = "approval"        // needs approval
	TagSafetyBoundary = "safety-boundary" // tests a safety boundary
)

// DifficultyTags lists every known difficulty tag.
var DifficultyTags = []string{
	TagReplyOnly, TagInjectedFault, TagConnector, TagProactive,
	TagMultiSession, TagSimulatedUser, TagApproval, TagSafetyBoundary,
}

// Grader kinds a manifest may name. The graders package registers a
// function for each.
const (
	KindPytest   = "pytest"
	KindDualRun  = "dual-run"
	KindWorkload = "workload"
	KindExact    = "exact"
	KindRefusal  = "refusal"
)

// Kinds lists every known grader kind.
var Kinds = []string{KindPytest, KindDualRun, KindWorkload, KindExact, KindRefusal}

// CodePass is the Expect.Code of an attempt that must pass.
const CodePass = "pass"

// CodeReview is the Expect.Code of an attempt whose verdict must be left
// to a person: neither a pass nor a failure (pass = false in expect.toml,
// pass null in the verdict's JSON). It is also the reason code the
// graders give such a verdict.
const CodeReview = "needs_review"

// Default timeouts when the manifest gives none.
const (
	DefaultAgentTimeout    = 600 * time.Second
	DefaultVerifierTimeout = 120 * time.Second
)

// Bundle file names.
const (
	ManifestFile    = "task.toml"
	InstructionFile = "instruction.md"
	ExpectFile      = "expect.toml"
)

var (
	idRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	codeRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
)

// ValidID reports whether id is a safe task id: lowercase letters, digits
// and dashes, starting with a letter or digit, at most 64 bytes.
func ValidID(id string) bool { return idRE.MatchString(id) }

// CanonicalID is the id a task is known by when it is named: ids are
// lower case, and one named in upper case ("RT-01", as the docs write
// it) is the same task. A bundle's own id (task.toml) must be canonical
// already; CanonicalID is for what people type.
func CanonicalID(id string) string { return strings.ToLower(id) }

// manifest is task.toml as written.
type manifest struct {
	Task struct {
		ID          string `toml:"id"`
		Name        string `toml:"name"`
		Description string `toml:"description"`
	} `toml:"task"`
	Metadata struct {
		Category string   `toml:"category"`
		Tags     []string `toml:"tags"`
	} `toml:"metadata"`
	Agent struct {
		TimeoutSec *float64 `toml:"timeout_sec"`
	} `toml:"agent"`
	Verifier struct {
		TimeoutSec *float64 `toml:"timeout_sec"`
	} `toml:"verifier"`
	Environment struct {
		MemoryMB      int      `toml:"memory_mb"`
		CPUs          any      `toml:"cpus"`       // checked by cpus: a number
		StorageMB     any      `toml:"storage_mb"` // checked by storageMB: an integer
		AllowInternet bool     `toml:"allow_internet"`
		Binds         []string `toml:"binds"`
	} `toml:"environment"`
	Bench struct {
		World      string         `toml:"world"`
		Difficulty []string       `toml:"difficulty"`
		Policy     journal.Policy `toml:"policy"`
		Grader     map[string]any `toml:"grader"`
	} `toml:"bench"`
}

type expectFile struct {
	Pass   bool     `toml:"pass"`
	Code   string   `toml:"code"`
	Delete []string `toml:"delete"`
	Note   string   `toml:"note"`
	// Confined = true: see Expect.Confined.
	Confined bool `toml:"confined"`
}

// Load reads and validates the bundle in dir.
func Load(dir string) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("unable to resolve %s: %w", dir, err)
	}
	t, err := load(abs)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", abs, err)
	}
	return t, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func load(dir string) (*Task, error) {
	var m manifest
	md, err := toml.DecodeFile(filepath.Join(dir, ManifestFile), &m)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, invalidf("no %s", ManifestFile)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, ManifestFile, err)
	}
	var unknown []string
	for _, k := range md.Undecoded() {
		// The grader's parameters are free-form; the kind checks them.
		if len(k) > 2 && k[0] == "bench" && k[1] == "grader" {
			continue
		}
		unknown = append(unknown, k.String())
	}
	if len(unknown) > 0 {
		return nil, invalidf("%s: unknown keys %s", ManifestFile, strings.Join(unknown, ", "))
	}
	t := &Task{
		ID:              m.Task.ID,
		Dir:             dir,
		Name:            m.Task.Name,
		Description:     m.Task.Description,
		Category:        m.Metadata.Category,
		Tags:            m.Metadata.Tags,
		AgentTimeout:    DefaultAgentTimeout,
		VerifierTimeout: DefaultVerifierTimeout,
		MemoryMB:        m.Environment.MemoryMB,
		AllowInternet:   m.Environment.AllowInternet,
		Binds:           m.Environment.Binds,
		World:           m.Bench.World,
		Difficulty:      m.Bench.Difficulty,
		Policy:          m.Bench.Policy,
	}
	if !ValidID(t.ID) {
		return nil, invalidf("[task] id %q: want a match of %s", t.ID, idRE)
	}
	if strings.TrimSpace(t.Name) == "" {
		return nil, invalidf("[task] name is empty")
	}
	if m.Agent.TimeoutSec != nil {
		if *m.Agent.TimeoutSec <= 0 {
			return nil, invalidf("[agent] timeout_sec %v: must be positive", *m.Agent.TimeoutSec)
		}
		t.AgentTimeout = time.Duration(*m.Agent.TimeoutSec * float64(time.Second))
	}
	if m.Verifier.TimeoutSec != nil {
		if *m.Verifier.TimeoutSec <= 0 {
			return nil, invalidf("[verifier] timeout_sec %v: must be positive", *m.Verifier.TimeoutSec)
		}
		t.VerifierTimeout = time.Duration(*m.Verifier.TimeoutSec * float64(time.Second))
	}
	if t.MemoryMB < 0 {
		return nil, invalidf("[environment] memory_mb %d: must not be negative", t.MemoryMB)
	}
	if t.CPUs, err = cpus(m.Environment.CPUs); err != nil {
		return nil, err
	}
	if t.StorageMB, err = storageMB(m.Environment.StorageMB); err != nil {
		return nil, err
	}
	for _, b := range t.Binds {
		if !filepath.IsAbs(b) || filepath.Clean(b) != b || b == "/" {
			return nil, invalidf("[environment] binds %q: want an absolute, clean host path other than /", b)
		}
	}
	for _, d := range t.Difficulty {
		if !contains(DifficultyTags, d) {
			return nil, invalidf("[bench] difficulty %q: want one of %s", d, strings.Join(DifficultyTags, ", "))
		}
	}
	if len(t.Policy.Allow) == 0 {
		return nil, invalidf("[bench.policy] allow is empty: the agent could change nothing")
	}
	if err := t.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("%w: [bench.policy]: %w", ErrInvalid, err)
	}
	t.Grader, err = graderSpec(m.Bench.Grader)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		rel string
		dir bool
	}{
		{InstructionFile, false},
		{"workspace", true},
		{"tests", true},
		{"solution/files", true},
	} {
		fi, err := os.Stat(filepath.Join(dir, f.rel))
		switch {
		case err != nil:
			return nil, invalidf("missing %s", f.rel)
		case f.dir && !fi.IsDir():
			return nil, invalidf("%s is not a directory", f.rel)
		case !f.dir && !fi.Mode().IsRegular():
			return nil, invalidf("%s is not a regular file", f.rel)
		}
	}
	t.Attempts, err = loadAttempts(filepath.Join(dir, "attempts"))
	if err != nil {
		return nil, err
	}
	return t, nil
}

// The range of [environment] cpus: a quota below a hundredth of a CPU
// (1 ms per 100 ms period) is below what the kernel accepts, and no host
// has a thousand CPUs to give one attempt.
const (
	MinCPUs = 0.01
	MaxCPUs = 1024
)

// cpus checks the value of [environment] cpus: absent (0), or a number of
// CPUs, integer or not, from MinCPUs to MaxCPUs.
func cpus(v any) (float64, error) {
	var n float64
	switch x := v.(type) {
	case nil:
		return 0, nil
	case int64:
		n = float64(x)
	case float64:
		n = x
	default:
		return 0, invalidf("[environment] cpus %#v: want a number of CPUs (1.5 is one and a half)", v)
	}
	if !(n >= MinCPUs && n <= MaxCPUs) { // NaN fails both
		return 0, invalidf("[environment] cpus %v: want %v to %v CPUs", n, MinCPUs, MaxCPUs)
	}
	return n, nil
}

// The range and default of [environment] storage_mb, in MiB: below 16
// MiB an ext4 file system's own metadata takes a good part of the disk;
// 1 TiB is more than any task's workspace needs, and the sparse image
// still takes only what is written.
const (
	MinStorageMB     = 16
	MaxStorageMB     = 1 << 20
	DefaultStorageMB = 1024
)

// storageMB checks the value of [environment] storage_mb: absent
// (DefaultStorageMB), or an integer number of MiB from MinStorageMB to
// MaxStorageMB.
func storageMB(v any) (int64, error) {
	switch x := v.(type) {
	case nil:
		return DefaultStorageMB, nil
	case int64:
		if x < MinStorageMB || x > MaxStorageMB {
			return 0, invalidf("[environment] storage_mb %d: want %d to %d MiB", x, MinStorageMB, MaxStorageMB)
		}
		return x, nil
	default:
		return 0, invalidf("[environment] storage_mb %#v: want an integer number of MiB", v)
	}
}

func graderSpec(raw map[string]any) (GraderSpec, error) {
	var g GraderSpec
	if raw == nil {
		return g, invalidf("no [bench.grader]")
	}
	kind, ok := raw["kind"].(string)
	if !ok || kind == "" {
		return g, invalidf("[bench.grader] kind is missing or not a string")
	}
	if !contains(Kinds, kind) {
		return g, invalidf("[bench.grader] kind %q: want one of %s", kind, strings.Join(Kinds, ", "))
	}
	g.Kind = kind
	g.Params = map[string]any{}
	for k, v := range raw {
		if k == "kind" {
			continue
		}
		if k == "params" {
			sub, ok := v.(map[string]any)
			if !ok {
				return g, invalidf("[bench.grader] params is not a table")
			}
			for sk, sv := range sub {
				if _, dup := raw[sk]; dup {
					return g, invalidf("[bench.grader] parameter %q is given twice", sk)
				}
				g.Params[sk] = sv
			}
			continue
		}
		g.Params[k] = v
	}
	return g, nil
}

func loadAttempts(dir string) ([]Attempt, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unable to read attempts: %w", err)
	}
	var out []Attempt
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if !ValidID(name) {
			return nil, invalidf("attempt name %q: want a match of %s", name, idRE)
		}
		a, err := loadAttempt(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("attempt %s: %w", name, err)
		}
		a.Name = name
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func loadAttempt(dir string) (Attempt, error) {
	var ef expectFile
	md, err := toml.DecodeFile(filepath.Join(dir, ExpectFile), &ef)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Attempt{}, invalidf("no %s", ExpectFile)
		}
		return Attempt{}, fmt.Errorf("%w: %s: %v", ErrInvalid, ExpectFile, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Attempt{}, invalidf("%s: unknown key %s", ExpectFile, und[0])
	}
	if !md.IsDefined("pass") {
		return Attempt{}, invalidf("%s: pass is missing", ExpectFile)
	}
	if !md.IsDefined("code") || !codeRE.MatchString(ef.Code) {
		return Attempt{}, invalidf("%s: code %q: want a reason code matching %s", ExpectFile, ef.Code, codeRE)
	}
	if ef.Pass != (ef.Code == CodePass) {
		return Attempt{}, invalidf("%s: pass = %v with code %q: code is %q exactly when pass is true", ExpectFile, ef.Pass, ef.Code, CodePass)
	}
	for _, d := range ef.Delete {
		if err := checkRel(d); err != nil {
			return Attempt{}, fmt.Errorf("%s: delete: %w", ExpectFile, err)
		}
	}
	files := filepath.Join(dir, "files")
	if fi, err := os.Stat(files); err == nil && !fi.IsDir() {
		return Attempt{}, invalidf("files is not a directory")
	}
	return Attempt{Dir: files, Delete: ef.Delete, Expect: Expect{Pass: ef.Pass, Code: ef.Code, Confined: ef.Confined}, Note: ef.Note}, nil
}

// checkRel accepts a clean, relative, slash-separated path that stays
// inside its root.
func checkRel(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\x00") || strings.Contains(p, `\`) {
		return invalidf("path %q: want a relative slash-separated path", p)
	}
	if path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return invalidf("path %q: want a clean path inside the workspace", p)
	}
	return nil
}

// BundleError is a bundle of a task store that does not load: its
// directory and why.
type BundleError struct {
	Dir string
	Err error
}

func (e BundleError) Error() string { return e.Err.Error() }
func (e BundleError) Unwrap() error { return e.Err }

// LoadAll loads every bundle in root (each subdirectory holding a
// task.toml), sorted by id. A bundle that does not load, or two bundles
// with one id, is an error; LoadEach lists the others beside it.
func LoadAll(root string) ([]*Task, error) {
	out, broken, err := LoadEach(root)
	if err != nil {
		return nil, err
	}
	if len(broken) > 0 {
		return nil, broken[0]
	}
	return out, nil
}

// LoadEach loads every bundle in root (each subdirectory holding a
// task.toml), sorted by id, whatever its directory is named. A bundle that
// does not load is no reason to hide the others: it is returned in broken
// (by directory), its error naming its directory, as is the second of two
// bundles with one id. err is only for a root that cannot be read.
func LoadEach(root string) (ts []*Task, broken []BundleError, err error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to read task dir: %w", err)
	}
	seen := map[string]string{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
			continue
		}
		t, err := Load(dir)
		if err != nil {
			broken = append(broken, BundleError{Dir: dir, Err: err})
			continue
		}
		if other, dup := seen[t.ID]; dup {
			broken = append(broken, BundleError{Dir: dir, Err: fmt.Errorf("%w: bundle %s: id %q is used by %s too", ErrInvalid, dir, t.ID, other)})
			continue
		}
		seen[t.ID] = dir
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
	return ts, broken, nil
}

// Find loads the bundle with the given id from root. A bundle's directory
// may have any name: the id is the one its task.toml gives. A directory
// named after the id ("rt-01" or "rt-01-circular-counter") is looked at
// first, and the directory name itself is accepted as an id too; either
// in any case (CanonicalID). An id that is not a safe id wraps
// ErrInvalid; an id no bundle has wraps ErrNotFound.
func Find(root, id string) (*Task, error) {
	id = CanonicalID(id)
	if !ValidID(id) {
		return nil, fmt.Errorf("%w: task id %q: want a match of %s", ErrInvalid, id, idRE)
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("unable to read task dir: %w", err)
	}
	var others []string // bundles whose directory does not start with id
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, name)
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
			continue
		}
		if name != id && !strings.HasPrefix(name, id+"-") {
			others = append(others, dir)
			continue
		}
		t, err := Load(dir)
		if err != nil {
			return nil, err
		}
		if t.ID == id || name == id {
			return t, nil
		}
	}
	for _, dir := range others {
		if manifestID(dir) != id {
			continue
		}
		return Load(dir)
	}
	return nil, fmt.Errorf("%w: no bundle with id %q in %s", ErrNotFound, id, root)
}

// manifestID is the [task] id of the bundle in dir, "" when its manifest
// does not say (Load then says why).
func manifestID(dir string) string {
	var m struct {
		Task struct {
			ID string `toml:"id"`
		} `toml:"task"`
	}
	if _, err := toml.DecodeFile(filepath.Join(dir, ManifestFile), &m); err != nil {
		return ""
	}
	return m.Task.ID
}

// DefaultDir is where bundles are looked for when no directory is given:
// $BENCHD_TASKS if set; else <exe dir>/../share/benchd/tasks (an install);
// else <exe dir>/../tasks (the repository, binaries in bin/); else
// /usr/local/share/benchd/tasks.
func DefaultDir() string {
	if d := os.Getenv("BENCHD_TASKS"); d != "" {
		return d
	}
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		base := filepath.Dir(exe)
		for _, rel := range []string{"../share/benchd/tasks", "../tasks"} {
			d := filepath.Clean(filepath.Join(base, rel))
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				return d
			}
		}
	}
	return "/usr/local/share/benchd/tasks"
}

// WorkspaceDir is the bundle's starting workspace.
func (t *Task) WorkspaceDir() string { return filepath.Join(t.Dir, "workspace") }

// TestsDir holds the hidden tests, oracles and goldens.
func (t *Task) TestsDir() string { return filepath.Join(t.Dir, "tests") }

// SolutionDir is the reference solution's overlay (solution/files).
func (t *Task) SolutionDir() string { return filepath.Join(t.Dir, "solution", "files") }

// InstructionPath is the agent-facing plan.
func (t *Task) InstructionPath() string { return filepath.Join(t.Dir, InstructionFile) }

// BundleSHA256 identifies the bundle: the SHA-256 of its manifest, the
// canonical JSON list (path order) of every entry of its directory, with
// each file's content hash. Attempts record it (apitype.Attempt.
// TaskSHA256), and a regrade refuses a bundle whose hash differs.
func (t *Task) BundleSHA256() (string, error) {
	tree, err := journal.ScanTree(t.Dir)
	if err != nil {
		return "", err
	}
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	entries := make([]journal.Entry, 0, len(paths))
	for _, p := range paths {
		entries = append(entries, tree[p])
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return "", err
	}
	return journal.HashBytes(b), nil
}

// Reference returns the reference solution as an attempt named
// "reference" that must pass.
func (t *Task) Reference() Attempt {
	return Attempt{Name: "reference", Dir: t.SolutionDir(), Expect: Expect{Pass: true, Code: CodePass}, Note: "the reference solution"}
}

// Attempt returns the known attempt called name.
func (t *Task) Attempt(name string) (Attempt, error) {
	if name == "reference" {
		return t.Reference(), nil
	}
	for _, a := range t.Attempts {
		if a.Name == name {
			return a, nil
		}
	}
	return Attempt{}, fmt.Errorf("%w: task %s has no attempt %q", ErrNotFound, t.ID, name)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
