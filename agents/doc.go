// Package agents holds agent presets: how benchd runs a real agent CLI
// headless inside the sandbox. `--agent codex`, `--agent claude` and
// `--agent qwen` are built in; a user adds or overrides presets with TOML
// files named NAME.toml in the preset directories (DefaultDirs:
// /etc/benchd/agents, then $XDG_CONFIG_HOME/benchd/agents, later ones
// winning over earlier ones and over the built-ins).
//
// # Preset files
//
//	name = "codex"                 # must match the file name
//	description = "..."
//	executable = ["{prefix}/node_modules/@openai/codex-linux-*/vendor/*/bin/codex"]
//	model = "gpt-5-codex"          # default model (--model overrides)
//	gateway = "model"              # the gateway the model API is reached through
//	api_key_env = "OPENAI_API_KEY" # passed by name: --env OPENAI_API_KEY
//	command = ["codex", "exec", "-m", "{model}", "..."]
//	binds = ["{prefix}"]           # host paths shown read-only, same path
//	[env]                          # fixed environment, added to --env's
//	NAME = "value"
//	[files]                        # files written into the agent's $HOME
//	".config/x/settings.json" = "..."
//
// Executable lists candidates, globs allowed, for the program that really
// runs: the first that matches names a regular executable file, after
// symbolic links are followed. It replaces command[0], so the agent's
// identity hashes the native binary or the node script that acts, never a
// wrapper (Codex's npm bin, codex.js, only starts a native binary: the
// preset runs that binary). Empty: command[0] is looked up in PATH.
//
// Binds name what the agent needs beyond the sandbox's allow-listed root
// (/usr, the /bin, /lib* and /sbin links, a minimal /etc; /usr/local and
// /opt are not there): the CLIs' install tree. Each is shown read-only
// at its host path, and recorded with the attempt's run.
//
// In command, env and files these are replaced: {model}; {base_url}, the
// model endpoint through the gateway as the agent reaches it inside the
// sandbox (Input.BaseURLs, which daemon/runs derives): for an HTTP
// gateway NAME=https://HOST[:PORT][/PATH] (or http://), which proxies and
// records each call (package modelgw), http://HOST[:PORT], plain HTTP on
// port 80 unless the URL names a port, the upstream's path added by the
// gateway; for a raw gateway NAME=HOST:PORT, http://HOST:PORT, https://
// when PORT is 443 (TLS passes through). An IP literal HOST has no name
// the namespace could map: the base URL has the loopback address the
// namespace serves the gateway at, 127.0.1.N, N the rank of its host
// among the run's distinct gateway hosts (netns.ListenAddrs), so that
// `--gateway model=http://127.0.0.1:8080` reaches a model server on the
// host's loopback; {home}, the agent's $HOME in
// the sandbox; {prefix}, where setup-agents installs the CLIs
// (DefaultPrefix). {plan} is left for the runner, which replaces it by the
// plan's path.
//
// Files are bound read-only over their paths by the sandbox, and a
// directory it makes to hold one belongs to root: a CLI that must write
// beside its configuration file (Qwen Code in ~/.qwen) is better set up
// through its environment.
//
// # Secrets
//
// A preset never holds a key. api_key_env names the variable the agent
// reads its key from; the caller must pass that variable by name
// (benchctl run --env OPENAI_API_KEY sends the value from its own
// environment) and only the name is recorded. Preset env values and files
// are recorded in full in the preset, so they must not hold secrets.
//
// # Quiet agents
//
// Each built-in preset turns off telemetry, error reports, update checks
// and other background traffic (Codex: -c check_for_update_on_startup,
// analytics, feedback, otel; Claude Code: CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC
// and the DISABLE_* variables; Qwen Code: its settings file and
// environment). Whatever an agent still tries is refused by the closed
// network namespace and shows in the attempt's network record.
package agents
