// Package modelfake is a scripted model server: it replays a scripted
// session to an agent CLI over the OpenAI Responses API, OpenAI Chat
// Completions and Anthropic Messages, so that an agent's set-up can be run
// end to end without a real model and without spending tokens.
//
// # Scripts
//
// A script is a JSON file:
//
//	{
//	  "workdir": "/workspace",
//	  "steps": [
//	    {"shell": "cat src/counter.py"},
//	    {"edit": {"path": "src/counter.py", "old": "        if nxt > cap:", "new": "        if nxt == cap:"}},
//	    {"final": "Fixed the wrap-around test."}
//	  ]
//	}
//
// Each step is exactly one of:
//
//   - shell: a command line, asked for through the agent's shell tool.
//   - edit: replace the text old by new (once) in path, relative to
//     workdir. Old and new are whole lines (indentation included), so
//     that a patch can carry them. It is asked for through the agent's own editing tool when
//     the agent offers one the server knows (an apply_patch tool, a
//     file_path/old_string/new_string tool such as Edit or edit, with a
//     call of the agent's read tool (Read, read_file) first, as Claude
//     Code and Qwen Code refuse to edit a file they have not read), else through the shell tool with a small
//     /usr/bin/python3 program. "via": "shell" always takes the shell
//     route, "via": "tool" insists on the editing tool. (Claude Code's
//     and Qwen Code's editing tools write a temporary file beside the
//     target and rename it over it; under an edit policy that allows
//     only the target, the temporary file is refused.)
//   - final: the closing assistant message; it ends the session.
//
// With "hang": true the server answers no request at all: it holds each
// one until the client gives up or the server closes (the agent's
// timeout). Workdir defaults to /workspace.
//
// # Turns
//
// The server keeps no state per session: the turn is the number of tool
// results in the request's history. The script's steps are first turned
// into actions for the tools this request offers (an edit may become two
// actions), and the action at that index is answered; past the last one,
// the final message. A request that offers no tool at all (a title or
// summary request some CLIs make on the side) is answered with the final
// message as plain text, and does not advance anything.
//
// # Wire
//
// The API is chosen by the path's suffix: /responses (Responses API),
// /chat/completions, /messages (Anthropic; /messages/count_tokens gets a
// token estimate). GET .../models lists the model of the request. Streaming
// (SSE) is used when the request asks for it, else a single JSON body.
// Each answer holds one tool call at most.
//
// # Log
//
// Every request is written to Config.Log as one JSON line (Entry): time,
// method, path, API, model, the tool names offered, whether it streamed,
// the turn and what was answered. Requests also keeps them in memory.
package modelfake
