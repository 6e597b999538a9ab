// Package agents holds the end-to-end tests that run the real agent CLIs
// (Codex CLI, Claude Code, Qwen Code, installed by scripts/setup-agents)
// against task RT-01, with a scripted model server (internal/modelfake)
// on the host's loopback reached through the attempt's gateway, and the
// network otherwise closed. Each CLI must pass with a script that makes
// the right fix (its own process writing the file, only the gateway
// used), fail with wrong_files when the script also edits a test file,
// and end in the timeout verdict, with nothing of it left running, when
// the model never answers. TestThroughDaemon does the same as a user
// would: the real benchd, `benchctl model-replay` and `benchctl run
// --agent NAME`.
package agents
