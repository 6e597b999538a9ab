package agents

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// ErrNotFound: no preset has that name. ErrInvalid: a preset file, or
// what a caller gave to run one, is wrong.
var (
	ErrNotFound = errors.New("no such agent preset")
	ErrInvalid  = errors.New("invalid agent preset")
)

// DefaultPrefix is where scripts/setup-agents installs the agent CLIs.
const DefaultPrefix = "/opt/benchd-agents"

// SystemDir holds the host's own presets.
const SystemDir = "/etc/benchd/agents"

//go:embed presets/*.toml
var builtin embed.FS

// Preset is one agent preset (see the package doc).
type Preset struct {
	Name        string            `toml:"name"`
	Description string            `toml:"description"`
	Executable  []string          `toml:"executable"`
	Model       string            `toml:"model"`
	Gateway     string            `toml:"gateway"`
	APIKeyEnv   string            `toml:"api_key_env"`
	Command     []string          `toml:"command"`
	Env         map[string]string `toml:"env"`
	Files       map[string]string `toml:"files"`
	// Binds are host paths the agent needs beyond the sandbox's
	// allow-listed root (its install tree): each is shown read-only at
	// the same path. {prefix} is replaced.
	Binds []string `toml:"binds"`
	// Source is where the preset was read from ("builtin:codex.toml" or
	// a file path).
	Source string `toml:"-"`
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)
	envRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// DefaultDirs are the preset directories, lowest priority first:
// SystemDir, then $XDG_CONFIG_HOME/benchd/agents (~/.config when unset).
func DefaultDirs() []string {
	dirs := []string{SystemDir}
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" {
		if h, err := os.UserHomeDir(); err == nil {
			cfg = filepath.Join(h, ".config")
		}
	}
	if cfg != "" {
		dirs = append(dirs, filepath.Join(cfg, "benchd", "agents"))
	}
	return dirs
}

// Parse decodes and checks one preset file's contents.
func Parse(data []byte, source string) (*Preset, error) {
	var p Preset
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, source, err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		return nil, fmt.Errorf("%w: %s: unknown key %s", ErrInvalid, source, un[0])
	}
	p.Source = source
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks a preset's fields.
func (p *Preset) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, p.Source, fmt.Sprintf(format, a...))
	}
	if !nameRE.MatchString(p.Name) {
		return bad("bad name %q (want [a-z0-9][a-z0-9_-]*)", p.Name)
	}
	if len(p.Command) == 0 || p.Command[0] == "" {
		return bad("empty command")
	}
	if p.Gateway != "" && !nameRE.MatchString(p.Gateway) {
		return bad("bad gateway name %q", p.Gateway)
	}
	if p.APIKeyEnv != "" && !envRE.MatchString(p.APIKeyEnv) {
		return bad("bad api_key_env %q", p.APIKeyEnv)
	}
	for k := range p.Env {
		if !envRE.MatchString(k) || k == "BENCH_PLAN" {
			return bad("bad environment variable name %q", k)
		}
		if k == p.APIKeyEnv {
			return bad("env sets %s, which is the API key: pass it by name instead", k)
		}
	}
	for f := range p.Files {
		c := path.Clean(f)
		if f == "" || path.IsAbs(f) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
			return bad("file %q must be a path inside $HOME", f)
		}
	}
	for _, b := range p.Binds {
		// {prefix}, only at the start, is an absolute, clean path.
		x := b
		if rest, ok := strings.CutPrefix(b, "{prefix}"); ok {
			x = "/prefix" + rest
		}
		if !strings.HasPrefix(x, "/") || path.Clean(x) != x || x == "/" || strings.Contains(x, "{") {
			return bad("bind %q must be an absolute, clean path other than / (it may start with {prefix})", b)
		}
	}
	for _, e := range p.Executable {
		if _, err := path.Match(e, ""); err != nil || !strings.HasPrefix(e, "/") && !strings.HasPrefix(e, "{prefix}") {
			return bad("executable %q must be an absolute path or glob", e)
		}
	}
	return nil
}

// Builtin returns the names of the built-in presets.
func Builtin() []string {
	ents, _ := fs.ReadDir(builtin, "presets")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	return names
}

// Find returns the preset called name: the last of dirs that has
// NAME.toml, else the built-in one. A name that is not a preset name
// (a command line, a path) is ErrNotFound without touching the disk.
func Find(name string, dirs []string) (*Preset, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	for _, d := range slices.Backward(dirs) {
		file := filepath.Join(d, name+".toml")
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("unable to read preset: %w", err)
		}
		p, err := Parse(b, file)
		if err != nil {
			return nil, err
		}
		if p.Name != name {
			return nil, fmt.Errorf("%w: %s: name %q does not match the file name", ErrInvalid, file, p.Name)
		}
		return p, nil
	}
	b, err := builtin.ReadFile("presets/" + name + ".toml")
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return Parse(b, "builtin:"+name+".toml")
}

// List returns every preset visible through dirs, by name.
func List(dirs []string) ([]*Preset, error) {
	names := map[string]bool{}
	for _, n := range Builtin() {
		names[n] = true
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), ".toml"); ok && nameRE.MatchString(n) {
				names[n] = true
			}
		}
	}
	var out []*Preset
	for n := range names {
		p, err := Find(n, dirs)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Input is what a run gives a preset.
type Input struct {
	// Model overrides the preset's default model.
	Model string
	// BaseURLs are the base URLs at which the agent reaches the
	// attempt's gateways from inside the sandbox, by gateway name
	// (daemon/runs derives them, see the package doc's {base_url}).
	BaseURLs map[string]string
	// EnvNames are the variables the caller passes (values stay out).
	EnvNames []string
	// Home is the agent's $HOME inside the sandbox.
	Home string
	// Prefix is where the CLIs are installed; "" means DefaultPrefix.
	Prefix string
}

// File is a file to write into the agent's $HOME.
type File struct {
	Path string // absolute, inside the sandbox
	Data []byte
}

// Command is a preset made concrete for one run.
type Command struct {
	// Argv is the command line; Argv[0] is the resolved executable, or
	// the bare command name when the preset names no executable.
	Argv []string
	// Env is the preset's environment, NAME=VALUE, sorted.
	Env []string
	// Files go into $HOME.
	Files []File
	// Model is the model the agent is told to use.
	Model string
	// Binds are the host paths to show read-only at the same path.
	Binds []string
}

// Executable resolves the preset's real executable: the first candidate
// that matches, symbolic links followed. "" when the preset names none.
func (p *Preset) ExecutablePath(prefix string) (string, error) {
	if len(p.Executable) == 0 {
		return "", nil
	}
	if prefix == "" {
		prefix = DefaultPrefix
	}
	for _, pat := range p.Executable {
		pat = strings.ReplaceAll(pat, "{prefix}", prefix)
		matches, _ := filepath.Glob(pat)
		sort.Strings(matches)
		for _, m := range matches {
			real, err := filepath.EvalSymlinks(m)
			if err != nil {
				continue
			}
			fi, err := os.Stat(real)
			if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				return real, nil
			}
		}
	}
	return "", fmt.Errorf("%w: preset %s: its executable is not installed (%s; run scripts/setup-agents)", ErrInvalid, p.Name, strings.Join(p.Executable, ", "))
}

// BindPaths returns the preset's binds with {prefix} replaced ("" means
// DefaultPrefix).
func (p *Preset) BindPaths(prefix string) []string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	var out []string
	for _, b := range p.Binds {
		out = append(out, strings.ReplaceAll(b, "{prefix}", prefix))
	}
	return out
}

// Resolve makes the preset concrete: the model, the gateway's base URL,
// the executable. It fails when the gateway the preset needs is not among
// in.BaseURLs or the API key variable is not among in.EnvNames.
func (p *Preset) Resolve(in Input) (Command, error) {
	model := in.Model
	if model == "" {
		model = p.Model
	}
	baseURL := ""
	if p.Gateway != "" {
		baseURL = in.BaseURLs[p.Gateway]
		if baseURL == "" {
			return Command{}, fmt.Errorf("%w: agent %s reaches its model through a gateway: pass --gateway %s=https://HOST (or %s=HOST:PORT)", ErrInvalid, p.Name, p.Gateway, p.Gateway)
		}
	}
	if p.APIKeyEnv != "" && !slices.Contains(in.EnvNames, p.APIKeyEnv) {
		return Command{}, fmt.Errorf("%w: agent %s reads its API key from %s: pass --env %s", ErrInvalid, p.Name, p.APIKeyEnv, p.APIKeyEnv)
	}
	prefix := in.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	r := strings.NewReplacer("{model}", model, "{base_url}", baseURL, "{home}", in.Home, "{prefix}", prefix)
	c := Command{Model: model}
	for _, a := range p.Command {
		c.Argv = append(c.Argv, r.Replace(a))
	}
	exe, err := p.ExecutablePath(prefix)
	if err != nil {
		return Command{}, err
	}
	if exe != "" {
		c.Argv[0] = exe
	}
	for k, v := range p.Env {
		c.Env = append(c.Env, k+"="+r.Replace(v))
	}
	sort.Strings(c.Env)
	for f, data := range p.Files {
		c.Files = append(c.Files, File{Path: path.Join(in.Home, f), Data: []byte(r.Replace(data))})
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	c.Binds = p.BindPaths(prefix)
	return c, nil
}
