package draw

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/tasks"
)

// ErrInvalid is the class of every error about a malformed library,
// manifest or list.
var ErrInvalid = errors.New("invalid")

func invalidf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// Task is one task of a library: what the draw needs to know about it.
// It is also one entry of a manifest, in TOML ([[task]] tables) or JSON
// lines (one object a line), with the keys named in the tags.
type Task struct {
	ID         string   `toml:"id" json:"id"`
	World      string   `toml:"world" json:"world"`
	Difficulty []string `toml:"difficulty,omitempty" json:"difficulty,omitempty"` // tasks.DifficultyTags

	// NeedsAccounts and NeedsInternet together exclude a task before the
	// draw: it needs real accounts on real services and the public
	// internet, so it cannot start from the same state for every product.
	NeedsAccounts bool `toml:"needs_accounts,omitempty" json:"needs_accounts,omitempty"`
	NeedsInternet bool `toml:"needs_internet,omitempty" json:"needs_internet,omitempty"`
	// RobotCheck removes a drawn task after the draw: a page checks for
	// automated browsers, which the exam's browser cannot pass, so every
	// product would fail it for the exam's reason.
	RobotCheck bool `toml:"robot_check,omitempty" json:"robot_check,omitempty"`

	// Changeset is the set of changes the task's reference solution makes,
	// each "KIND PATH" or "renamed FROM -> PATH" (journal.Changeset's text
	// form). Empty exactly for reply-only tasks.
	Changeset []string `toml:"changeset,omitempty" json:"changeset,omitempty"`
	// Needs says what a reply-only task needs from the agent beyond the
	// reply, such as "memory-across-sessions".
	Needs []string `toml:"needs,omitempty" json:"needs,omitempty"`
	// Faults names the faults a reply-only task injects.
	Faults []string `toml:"faults,omitempty" json:"faults,omitempty"`

	// Source is where the task was read from (a manifest file, or a
	// bundle directory); it is not part of the library's hash.
	Source string `toml:"-" json:"-"`
}

// ReplyOnly reports whether the task makes no changes: it is graded on
// the agent's reply alone.
func (t Task) ReplyOnly() bool { return len(t.Changeset) == 0 }

var (
	wordRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	changeRE = regexp.MustCompile(`^(added|modified|deleted) (.+)$`)
	renameRE = regexp.MustCompile(`^renamed (.+) -> (.+)$`)
)

// checkPath checks a workspace path of a change: relative, clean, one line.
func checkPath(p string) error {
	if p == "" || strings.ContainsAny(p, "\n\r\t") || path.IsAbs(p) || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return invalidf("path %q: want a clean relative path on one line", p)
	}
	return nil
}

// ParseChange checks one changeset line and returns it in canonical form
// (surrounding spaces trimmed).
func ParseChange(line string) (string, error) {
	line = strings.TrimSpace(line)
	if m := renameRE.FindStringSubmatch(line); m != nil {
		for _, p := range m[1:] {
			if err := checkPath(p); err != nil {
				return "", err
			}
		}
		return line, nil
	}
	m := changeRE.FindStringSubmatch(line)
	if m == nil {
		return "", invalidf("change %q: want \"added|modified|deleted PATH\" or \"renamed FROM -> PATH\"", line)
	}
	if err := checkPath(m[2]); err != nil {
		return "", err
	}
	return line, nil
}

// ChangeLines turns a changeset from the daemon into canonical changeset
// lines, sorted. Reads never appear in a changeset: it holds only what
// differs between the initial and the final tree.
func ChangeLines(cs []apitype.Change) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.Kind == journal.Renamed {
			out = append(out, c.Kind+" "+c.From+" -> "+c.Path)
		} else {
			out = append(out, c.Kind+" "+c.Path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sortedSet sorts a list of words and rejects duplicates and malformed
// words.
func sortedSet(what, id string, in []string, check func(string) error) ([]string, error) {
	out := slices.Clone(in)
	for _, s := range out {
		if err := check(s); err != nil {
			return nil, fmt.Errorf("task %s: %s: %w", id, what, err)
		}
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, invalidf("task %s: %s lists %q twice", id, what, out[i])
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func checkWord(s string) error {
	if !wordRE.MatchString(s) {
		return invalidf("%q: want lowercase letters, digits, '.', '_' and '-'", s)
	}
	return nil
}

func checkTag(s string) error {
	if !slices.Contains(tasks.DifficultyTags, s) {
		return invalidf("difficulty %q: want one of %s", s, strings.Join(tasks.DifficultyTags, ", "))
	}
	return nil
}

// normalize checks t and returns it with every list sorted.
func normalize(t Task) (Task, error) {
	if !tasks.ValidID(t.ID) {
		return t, invalidf("task id %q: want lowercase letters, digits and dashes", t.ID)
	}
	if err := checkWord(t.World); err != nil {
		return t, fmt.Errorf("task %s: world: %w", t.ID, err)
	}
	var err error
	if t.Difficulty, err = sortedSet("difficulty", t.ID, t.Difficulty, checkTag); err != nil {
		return t, err
	}
	if t.Needs, err = sortedSet("needs", t.ID, t.Needs, checkWord); err != nil {
		return t, err
	}
	if t.Faults, err = sortedSet("faults", t.ID, t.Faults, checkWord); err != nil {
		return t, err
	}
	for i, c := range t.Changeset {
		if t.Changeset[i], err = ParseChange(c); err != nil {
			return t, fmt.Errorf("task %s: changeset: %w", t.ID, err)
		}
	}
	if t.Changeset, err = sortedSet("changeset", t.ID, t.Changeset, func(string) error { return nil }); err != nil {
		return t, err
	}
	tagged := slices.Contains(t.Difficulty, tasks.TagReplyOnly)
	switch {
	case tagged && !t.ReplyOnly():
		return t, invalidf("task %s: tagged %s but its reference makes %d change(s)", t.ID, tasks.TagReplyOnly, len(t.Changeset))
	case !tagged && t.ReplyOnly():
		return t, invalidf("task %s: makes no changes but is not tagged %s (a task that makes changes needs its changeset)", t.ID, tasks.TagReplyOnly)
	case !t.ReplyOnly() && (len(t.Needs) > 0 || len(t.Faults) > 0):
		return t, invalidf("task %s: needs and faults are for reply-only tasks; this one makes changes", t.ID)
	case len(t.Faults) > 0 && !slices.Contains(t.Difficulty, tasks.TagInjectedFault):
		return t, invalidf("task %s: injects faults but is not tagged %s", t.ID, tasks.TagInjectedFault)
	}
	return t, nil
}

// manifestTOML is a TOML manifest: an array of [[task]] tables.
type manifestTOML struct {
	Task []Task `toml:"task"`
}

// ParseManifest reads a manifest. JSON lines when the first non-blank
// character is '{', TOML otherwise. Unknown keys are an error, so a typo
// cannot pass silently. The tasks are returned as written, not checked.
func ParseManifest(r io.Reader, source string) ([]Task, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("unable to read manifest %s: %w", source, err)
	}
	var out []Task
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			var t Task
			if err := dec.Decode(&t); err != nil {
				return nil, invalidf("manifest %s line %d: %v", source, n, err)
			}
			t.Source = fmt.Sprintf("%s:%d", source, n)
			out = append(out, t)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("unable to read manifest %s: %w", source, err)
		}
		return out, nil
	}
	var m manifestTOML
	md, err := toml.Decode(string(b), &m)
	if err != nil {
		return nil, invalidf("manifest %s: %v", source, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, invalidf("manifest %s: unknown key %s", source, und[0])
	}
	for i := range m.Task {
		m.Task[i].Source = source
	}
	return m.Task, nil
}

// WriteManifest writes tasks as a TOML manifest, in the order given.
func WriteManifest(w io.Writer, ts []Task, comment string) error {
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimSpace(comment), "\n") {
		if l != "" {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	for _, t := range ts {
		b.WriteString("\n[[task]]\n")
		if err := toml.NewEncoder(&b).Encode(t); err != nil {
			return fmt.Errorf("unable to encode task %s: %w", t.ID, err)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// manifestFiles returns the manifest files named by p: p itself, or the
// files in directory p ending in .toml, .jsonl or .json, sorted by name.
func manifestFiles(p string) ([]string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("unable to read library: %w", err)
	}
	if !fi.IsDir() {
		return []string{p}, nil
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("unable to read library: %w", err)
	}
	var out []string
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case ".toml", ".jsonl", ".json":
			if e.Type().IsRegular() {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
	}
	if len(out) == 0 {
		return nil, invalidf("library %s: no manifest (*.toml, *.jsonl, *.json) in the directory", p)
	}
	return out, nil
}

// Library is a set of tasks, sorted by id, every one checked.
type Library struct {
	Tasks []Task
}

// LoadConfig says where a library's tasks come from.
type LoadConfig struct {
	// Manifests are manifest files, or directories of them.
	Manifests []string
	// TasksDir, when set, is a directory of task bundles (tasks.LoadAll)
	// that join the library with their [bench] world and difficulty. A
	// bundle's changeset must come from a manifest entry with its id (as
	// benchctl library index writes one); that entry may repeat the world
	// and difficulty, which must then match the bundle's.
	TasksDir string
}

// Load reads a library.
func Load(cfg LoadConfig) (*Library, error) {
	var entries []Task
	for _, m := range cfg.Manifests {
		files, err := manifestFiles(m)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return nil, fmt.Errorf("unable to read manifest: %w", err)
			}
			ts, err := ParseManifest(fh, f)
			fh.Close()
			if err != nil {
				return nil, err
			}
			entries = append(entries, ts...)
		}
	}
	var bundles []*tasks.Task
	if cfg.TasksDir != "" {
		var err error
		if bundles, err = tasks.LoadAll(cfg.TasksDir); err != nil {
			return nil, fmt.Errorf("unable to load task bundles: %w", err)
		}
	}
	return New(entries, bundles)
}

// FromBundle is a bundle's entry: id, world and difficulty, no changeset.
func FromBundle(b *tasks.Task) Task {
	return Task{ID: b.ID, World: b.World, Difficulty: slices.Clone(b.Difficulty), Source: b.Dir}
}

// New makes a library of manifest entries and bundles. An id may appear
// once among the entries; an entry with a bundle's id completes the
// bundle (see LoadConfig.TasksDir).
func New(entries []Task, bundles []*tasks.Task) (*Library, error) {
	byID := map[string]int{}
	for i, e := range entries {
		if j, dup := byID[e.ID]; dup {
			return nil, invalidf("task %s is in %s and in %s", e.ID, entries[j].Source, e.Source)
		}
		byID[e.ID] = i
	}
	used := make([]bool, len(entries))
	var all []Task
	for _, b := range bundles {
		t := FromBundle(b)
		if i, ok := byID[b.ID]; ok {
			e := entries[i]
			used[i] = true
			if e.World != "" && e.World != t.World {
				return nil, invalidf("task %s: %s gives world %q, its bundle %q", t.ID, e.Source, e.World, t.World)
			}
			if e.Difficulty != nil && !sameSet(e.Difficulty, t.Difficulty) {
				return nil, invalidf("task %s: %s gives difficulty %v, its bundle %v", t.ID, e.Source, e.Difficulty, t.Difficulty)
			}
			e.World, e.Difficulty = t.World, t.Difficulty
			e.Source = t.Source
			t = e
		} else if !slices.Contains(t.Difficulty, tasks.TagReplyOnly) {
			return nil, invalidf("bundle %s has no recorded changeset (benchctl library index records it)", t.ID)
		}
		all = append(all, t)
	}
	for i, e := range entries {
		if !used[i] {
			all = append(all, e)
		}
	}
	for i := range all {
		t, err := normalize(all[i])
		if err != nil {
			if all[i].Source != "" {
				return nil, fmt.Errorf("%s: %w", all[i].Source, err)
			}
			return nil, err
		}
		all[i] = t
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return &Library{Tasks: all}, nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// CanonicalVersion is the first line of the canonical encoding.
const CanonicalVersion = "benchd-library 1"

// Canonical is the library's canonical encoding, which its hash is taken
// of. Every line ends in "\n"; no value holds a newline. It is the line
// CanonicalVersion, then for each task in bytewise order of id:
//
//	task ID
//	world WORLD
//	difficulty TAG          one line per tag, tags sorted bytewise
//	needs_accounts          only when set
//	needs_internet          only when set
//	robot_check             only when set
//	needs NEED              one line per need, sorted
//	fault FAULT             one line per fault, sorted
//	change CHANGE           one line per change ("KIND PATH"), sorted
//	end
func (l *Library) Canonical() []byte {
	var b bytes.Buffer
	b.WriteString(CanonicalVersion + "\n")
	for _, t := range l.Tasks {
		fmt.Fprintf(&b, "task %s\nworld %s\n", t.ID, t.World)
		for _, d := range t.Difficulty {
			fmt.Fprintf(&b, "difficulty %s\n", d)
		}
		if t.NeedsAccounts {
			b.WriteString("needs_accounts\n")
		}
		if t.NeedsInternet {
			b.WriteString("needs_internet\n")
		}
		if t.RobotCheck {
			b.WriteString("robot_check\n")
		}
		for _, n := range t.Needs {
			fmt.Fprintf(&b, "needs %s\n", n)
		}
		for _, f := range t.Faults {
			fmt.Fprintf(&b, "fault %s\n", f)
		}
		for _, c := range t.Changeset {
			fmt.Fprintf(&b, "change %s\n", c)
		}
		b.WriteString("end\n")
	}
	return b.Bytes()
}

// Hash is "sha256:" and the hex SHA-256 of Canonical.
func (l *Library) Hash() string {
	sum := sha256.Sum256(l.Canonical())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Worlds returns the distinct worlds of tasks, sorted.
func Worlds(ts []Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.World)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
