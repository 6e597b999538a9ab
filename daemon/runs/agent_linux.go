package runs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"benchd.dev/agents"
	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/sandbox"
	"benchd.dev/tasks"
)

// Sentinel errors. ErrInvalid: a spec or an agent the caller gave cannot
// run (an unknown built-in, a command that does not exist, a bad
// gateway). ErrConflict: the attempt's work directory exists already.
var (
	ErrInvalid  = errors.New("invalid attempt")
	ErrConflict = errors.New("attempt already exists")
)

// PlanPath is where the plan is inside the sandbox; {plan} in an agent's
// command line and $BENCH_PLAN are replaced by it.
const PlanPath = "/workspace/plan.md"

// planFile is the plan's name in the workspace.
const planFile = "plan.md"

// agentPath is the PATH inside the sandbox unless the caller passes one:
// the sandbox's own default.
const agentPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// agent is a resolved --agent: a built-in overlay or a command line.
type agent struct {
	id      apitype.AgentIdentity
	builtin bool
	overlay string         // built-ins: the overlay directory ("" for null)
	deletes []string       // built-ins: paths the overlay removes
	argv    []string       // commands: argv[0] is the resolved executable
	env     []string       // presets: their environment, NAME=VALUE
	files   []sandbox.File // presets: files written into $HOME
	binds   []sandbox.Bind // presets: what they need beyond the sandbox's root
}

// ResolveAgent checks an agent spec against a task and returns its
// identity, without running anything. An unknown built-in, a known
// attempt the task does not have, an empty or malformed command line, or
// a command that does not exist is an error wrapping ErrInvalid.
func (e *Engine) ResolveAgent(spec string, task *tasks.Task) (apitype.AgentIdentity, error) {
	a, err := resolveAgent(spec, task, nil, nil)
	return a.id, err
}

// resolveAgent resolves spec. env is the agent's environment (its PATH,
// if any, is used to find the command). A spec that names an agent
// preset (package agents) is resolved with in: the model, gateways and
// variable names of the run; nil only checks that it is installed.
func resolveAgent(spec string, task *tasks.Task, env []string, in *agents.Input) (agent, error) {
	if task == nil {
		return agent{}, fmt.Errorf("%w: no task", ErrInvalid)
	}
	id := apitype.AgentIdentity{Spec: spec}
	if strings.HasPrefix(spec, "builtin:") {
		a := agent{builtin: true}
		switch {
		case spec == apitype.AgentNull:
		case spec == apitype.AgentReference:
			ref := task.Reference()
			a.overlay, a.deletes = ref.Dir, ref.Delete
		case strings.HasPrefix(spec, apitype.AgentAttemptPrefix):
			name := strings.TrimPrefix(spec, apitype.AgentAttemptPrefix)
			if name == "reference" {
				return agent{}, fmt.Errorf("%w: unknown built-in agent %q (the reference is %s)", ErrInvalid, spec, apitype.AgentReference)
			}
			at, err := task.Attempt(name)
			if err != nil {
				return agent{}, fmt.Errorf("%w: %w", ErrInvalid, err)
			}
			a.overlay, a.deletes = at.Dir, at.Delete
		default:
			return agent{}, fmt.Errorf("%w: unknown built-in agent %q", ErrInvalid, spec)
		}
		sum, err := overlayHash(a.overlay, a.deletes)
		if err != nil {
			return agent{}, err
		}
		id.SHA256 = sum
		a.id = id
		return a, nil
	}

	if p, err := agents.Find(spec, agents.DefaultDirs()); err == nil {
		return presetAgent(p, in)
	} else if !errors.Is(err, agents.ErrNotFound) {
		return agent{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}

	argv, err := splitCommand(spec)
	if err != nil {
		return agent{}, fmt.Errorf("%w: agent %q: %w", ErrInvalid, spec, err)
	}
	if len(argv) == 0 {
		return agent{}, fmt.Errorf("%w: empty agent command", ErrInvalid)
	}
	path := agentPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	exe, err := lookPath(argv[0], path)
	if err != nil {
		if !strings.Contains(argv[0], "/") {
			// A bare name may be a misspelt preset as well as a command.
			return agent{}, fmt.Errorf("%w: agent command %q: %w; nor is it an agent preset: %s", ErrInvalid, argv[0], err, knownAgents(task))
		}
		return agent{}, fmt.Errorf("%w: agent command %q: %w", ErrInvalid, argv[0], err)
	}
	if err := shownExe(exe); err != nil {
		return agent{}, fmt.Errorf("%w: agent command %q: %w", ErrInvalid, argv[0], err)
	}
	sum, err := journal.HashFile(exe)
	if err != nil {
		return agent{}, fmt.Errorf("%w: agent command %q: %w", ErrInvalid, argv[0], err)
	}
	id.Exe, id.SHA256, id.Args = exe, sum, argv[1:]
	return agent{id: id, argv: append([]string{exe}, argv[1:]...)}, nil
}

// shownExe checks that a command agent's executable, found on the host,
// is there inside the sandbox too: the sandbox's root is an allow-list
// of the host's trees (sandbox.Shows), and a command line has no binds,
// so a program elsewhere (/tmp, /home, /root, /opt, /usr/local) would
// pass here and then fail to start in every attempt. A link is followed:
// its target must be shown as well.
func shownExe(exe string) error {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return err
	}
	for _, p := range []string{exe, real} {
		if !sandbox.Shows(p, nil) {
			what := exe
			if p != exe {
				what = exe + " (a link to " + real + ")"
			}
			return fmt.Errorf("%s is outside what the sandbox shows of the host, %s, so the agent could not start: "+
				"install it under /usr (e.g. /usr/bin), or write an agent preset whose binds name its tree (docs/agents.md; presets go in %s)",
				what, sandbox.ShownTrees(), strings.Join(agents.DefaultDirs(), " or "))
		}
	}
	return nil
}

// knownAgents names what --agent takes besides a command line: the
// presets (built in and from the preset directories) and the built-in
// agents, with task's known attempts.
func knownAgents(task *tasks.Task) string {
	var presets []string
	if list, err := agents.List(agents.DefaultDirs()); err == nil {
		for _, p := range list {
			presets = append(presets, p.Name)
		}
	} else {
		presets = agents.Builtin()
	}
	builtins := []string{apitype.AgentReference, apitype.AgentNull}
	for _, at := range task.Attempts {
		if at.Name != "reference" {
			builtins = append(builtins, apitype.AgentAttemptPrefix+at.Name)
		}
	}
	return fmt.Sprintf("the presets are %s (more in %s); the built-in agents are %s",
		strings.Join(presets, ", "), strings.Join(agents.DefaultDirs(), " or "), strings.Join(builtins, ", "))
}

// presetAgent resolves an agent preset. Its identity is the preset's
// name, the SHA-256 of its real executable (agents.Preset.Executable),
// the whole command line it builds and the model. With in nil only the
// executable is checked (for ResolveAgent, before a run has its gateways).
func presetAgent(p *agents.Preset, in *agents.Input) (agent, error) {
	var argv []string
	var c agents.Command
	if in == nil {
		exe, err := p.ExecutablePath("")
		if err != nil {
			return agent{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		argv, c.Model = append([]string{exe}, p.Command[1:]...), p.Model
		if exe == "" {
			argv[0] = p.Command[0]
		}
	} else {
		var err error
		if c, err = p.Resolve(*in); err != nil {
			return agent{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		argv = c.Argv
	}
	exe, err := lookPath(argv[0], agentPath)
	if err != nil {
		return agent{}, fmt.Errorf("%w: agent %s: %w", ErrInvalid, p.Name, err)
	}
	sum, err := journal.HashFile(exe)
	if err != nil {
		return agent{}, fmt.Errorf("%w: agent %s: %w", ErrInvalid, p.Name, err)
	}
	a := agent{id: apitype.AgentIdentity{Spec: p.Name, Exe: exe, SHA256: sum, Args: argv[1:], Model: c.Model},
		argv: append([]string{exe}, argv[1:]...), env: c.Env}
	if in == nil {
		c.Binds = p.BindPaths("")
	}
	for _, b := range c.Binds {
		a.binds = append(a.binds, sandbox.Bind{Source: b, Target: b})
	}
	for _, f := range c.Files {
		a.files = append(a.files, sandbox.File{Path: f.Path, Data: f.Data, Mode: 0o444})
	}
	return a, nil
}

// lookPath finds name as execve would inside the sandbox, on the host's
// paths (the sandbox shows the host's /usr and what the agent's binds
// name at the same paths): an absolute path as is, a bare name in path. A relative path
// with a slash is refused: it would be relative to /workspace, which the
// agent controls.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			return "", errors.New("a path must be absolute (a relative one would name a workspace file)")
		}
		if err := executable(name); err != nil {
			return "", err
		}
		return filepath.Clean(name), nil
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // inside the sandbox it would be relative to /workspace
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", errors.New("not found in PATH " + path)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}

// overlayHash identifies a built-in: the SHA-256 of the overlay tree's
// manifest (journal.Tree.Manifest: every path with its type, mode and
// content hash), followed by one line "delete PATH" per deleted path.
// builtin:null is the hash of an empty manifest.
func overlayHash(dir string, deletes []string) (string, error) {
	tree := journal.Tree{}
	if dir != "" {
		if _, err := os.Stat(dir); err == nil {
			t, err := journal.ScanTree(dir)
			if err != nil {
				return "", fmt.Errorf("unable to hash overlay %s: %w", dir, err)
			}
			tree = t
		}
	}
	h := sha256.New()
	h.Write(tree.Manifest())
	for _, d := range deletes {
		fmt.Fprintf(h, "delete %s\n", d)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// splitCommand splits a command line like a POSIX shell, without any
// expansion: words are separated by blanks; single quotes keep
// everything literally; double quotes keep everything but \" \\ \$ \`
// and a backslash-newline; a backslash outside quotes quotes the next
// character.
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\':
			inWord = true
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New("unterminated double quote")
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
