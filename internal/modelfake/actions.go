package modelfake

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Tool is a tool an agent offers, in a form common to the three APIs.
type Tool struct {
	Name string
	// Kind is "function" (JSON arguments), "custom" (a free-form text
	// input, the Responses API's custom tools) or "local_shell".
	Kind   string
	Schema map[string]any // the JSON schema of a function's arguments
}

// call is one tool call to ask for.
type call struct {
	Tool  Tool
	Args  map[string]any // function tools
	Input string         // custom tools
	Argv  []string       // local_shell
}

// arguments is a function call's arguments as JSON text.
func (c call) arguments() string {
	b, err := json.Marshal(c.Args)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// action is one answer: a tool call, or (call nil) the final text.
type action struct {
	call *call
	text string
}

func (a action) String() string {
	if a.call == nil {
		return "text"
	}
	return "tool:" + a.call.Tool.Name
}

// shellNames are shell tools, most specific first: Codex (shell,
// shell_command, exec_command), Claude Code (Bash), Qwen Code
// (run_shell_command) and common others.
var shellNames = []string{"shell", "shell_command", "exec_command", "Bash", "run_shell_command", "bash", "execute_command"}

// readNames are file-reading tools: Claude Code (Read), Qwen Code
// (read_file).
var readNames = []string{"Read", "read_file"}

// replaceNames are tools taking a file path, an old and a new string.
var replaceNames = []string{"Edit", "edit", "replace", "str_replace"}

// plan turns the script into the actions for this set of tools.
func (s *Script) plan(tools []Tool) ([]action, error) {
	var acts []action
	for i, st := range s.Steps {
		switch {
		case st.Shell != "":
			c, err := shellCall(tools, st.Shell, nil)
			if err != nil {
				return nil, fmt.Errorf("step %d: %w", i+1, err)
			}
			acts = append(acts, action{call: c})
		case st.Edit != nil:
			cs, err := s.editCalls(tools, *st.Edit)
			if err != nil {
				return nil, fmt.Errorf("step %d: %w", i+1, err)
			}
			for _, c := range cs {
				acts = append(acts, action{call: c})
			}
		case st.Final != "":
			acts = append(acts, action{text: st.Final})
		}
	}
	if len(acts) == 0 || acts[len(acts)-1].call != nil {
		acts = append(acts, action{text: s.final()})
	}
	return acts, nil
}

func findTool(tools []Tool, names ...string) (Tool, bool) {
	for _, n := range names {
		for _, t := range tools {
			if t.Name == n {
				return t, true
			}
		}
	}
	return Tool{}, false
}

func props(t Tool) map[string]any {
	p, _ := t.Schema["properties"].(map[string]any)
	return p
}

func propType(t Tool, name string) (string, bool) {
	p, ok := props(t)[name].(map[string]any)
	if !ok {
		return "", false
	}
	typ, _ := p["type"].(string)
	return typ, true
}

// fillRequired gives every required argument not set yet a neutral value.
func fillRequired(t Tool, args map[string]any, what string) {
	req, _ := t.Schema["required"].([]any)
	for _, r := range req {
		name, _ := r.(string)
		if _, ok := args[name]; ok || name == "" {
			continue
		}
		typ, _ := propType(t, name)
		switch typ {
		case "boolean":
			args[name] = false
		case "integer", "number":
			args[name] = 0
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		default:
			if name == "description" {
				args[name] = what
			} else {
				args[name] = ""
			}
		}
	}
}

// shellCall asks for command through the agent's shell tool. argv, when
// set, is the command as a vector, for tools that take one.
func shellCall(tools []Tool, command string, argv []string) (*call, error) {
	for _, t := range tools {
		if t.Kind == "local_shell" {
			if argv == nil {
				argv = []string{"bash", "-lc", command}
			}
			return &call{Tool: t, Argv: argv}, nil
		}
	}
	t, ok := findTool(tools, shellNames...)
	if !ok {
		return nil, fmt.Errorf("the agent offers no shell tool (tools: %s)", toolNames(tools))
	}
	args := map[string]any{}
	switch {
	case hasProp(t, "command"):
		if typ, _ := propType(t, "command"); typ == "array" {
			if argv == nil {
				argv = []string{"bash", "-lc", command}
			}
			args["command"] = argv
		} else {
			args["command"] = command
		}
	case hasProp(t, "cmd"):
		args["cmd"] = command
	default:
		return nil, fmt.Errorf("shell tool %s has neither a command nor a cmd argument", t.Name)
	}
	fillRequired(t, args, "Run a command")
	return &call{Tool: t, Args: args}, nil
}

func hasProp(t Tool, name string) bool {
	_, ok := props(t)[name]
	return ok
}

// editCalls asks for e through the agent's own editing tool if it has
// one the server knows, else through its shell.
func (s *Script) editCalls(tools []Tool, e Edit) ([]*call, error) {
	if e.Via != "shell" {
		cs, err := s.toolEditCalls(tools, e)
		if cs != nil || err != nil || e.Via == "tool" {
			if cs == nil && err == nil {
				err = fmt.Errorf("the agent offers no editing tool the server knows (tools: %s)", toolNames(tools))
			}
			return cs, err
		}
	}
	argv := []string{"/usr/bin/python3", "-c", pyReplace, s.abs(e.Path), e.Old, e.New}
	c, err := shellCall(tools, shellJoin(argv), argv)
	if err != nil {
		return nil, err
	}
	return []*call{c}, nil
}

// toolEditCalls asks for e through the agent's editing tool; nil when it
// has none the server knows.
func (s *Script) toolEditCalls(tools []Tool, e Edit) ([]*call, error) {
	if t, ok := findTool(tools, "apply_patch"); ok {
		patch := unifiedPatch(e)
		switch {
		case t.Kind == "custom":
			return []*call{{Tool: t, Input: patch}}, nil
		case hasProp(t, "input"):
			args := map[string]any{"input": patch}
			fillRequired(t, args, "Apply a patch")
			return []*call{{Tool: t, Args: args}}, nil
		}
	}
	for _, n := range replaceNames {
		t, ok := findTool(tools, n)
		if !ok || !hasProp(t, "file_path") || !hasProp(t, "old_string") || !hasProp(t, "new_string") {
			continue
		}
		file := s.abs(e.Path)
		args := map[string]any{"file_path": file, "old_string": e.Old, "new_string": e.New}
		fillRequired(t, args, "Edit "+e.Path)
		var calls []*call
		// Claude Code and Qwen Code refuse to edit a file their own read
		// tool has not read in the session: read it with that tool first.
		if r, ok := findTool(tools, readNames...); ok {
			for _, p := range []string{"file_path", "absolute_path", "path"} {
				if hasProp(r, p) {
					rargs := map[string]any{p: file}
					fillRequired(r, rargs, "Read "+e.Path)
					calls = append(calls, &call{Tool: r, Args: rargs})
					break
				}
			}
		}
		return append(calls, &call{Tool: t, Args: args}), nil
	}
	return nil, nil
}

// pyReplace replaces argv[2] by argv[3] once in the file argv[1].
const pyReplace = `import sys
p, old, new = sys.argv[1:4]
s = open(p).read()
if old not in s:
    sys.exit("old text not found in " + p)
open(p, "w").write(s.replace(old, new, 1))
`

// unifiedPatch is e in the apply_patch format: old and new are whole
// lines, so the hunk removes the old lines and adds the new ones.
func unifiedPatch(e Edit) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Update File: " + e.Path + "\n@@\n")
	for _, l := range strings.Split(strings.TrimSuffix(e.Old, "\n"), "\n") {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range strings.Split(strings.TrimSuffix(e.New, "\n"), "\n") {
		b.WriteString("+" + l + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// shellJoin quotes argv for a POSIX shell.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func toolNames(tools []Tool) string {
	n := make([]string, 0, len(tools))
	for _, t := range tools {
		n = append(n, t.Name)
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}
