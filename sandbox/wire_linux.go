package sandbox

// initArg0 is the argv[0] that tells Init it runs as a sandbox's init.
const initArg0 = "benchd-sandbox-init"

// The init's extra file descriptors.
const (
	gateFD   = 3 // read end: the parent writes the wireConfig, then closes
	reportFD = 4 // write end: the init writes reports, one JSON value each
)

// wireConfig is what the parent sends the init through the gate, after
// Join: everything resolved and checked on the host side.
type wireConfig struct {
	Args      []string
	Env       []string
	Dir       string
	UID, GID  int
	Hostname  string
	Home      string
	TmpfsMax  int64 // bytes, > 0
	NewNet    bool
	Workspace string // resolved host path, or ""
	Binds     []Bind // sources resolved
	Files     []File
	Masks     []wireMask
}

// wireMask is one masked host path and where its content lives.
type wireMask struct {
	Path string // for messages
	ID   identity
}

// report is what the init tells the parent: first either Agent (the
// agent runs, with this pid inside the sandbox) or Error; later Done
// with the agent's status.
type report struct {
	Agent  int    `json:",omitempty"`
	Error  string `json:",omitempty"`
	Done   bool   `json:",omitempty"`
	Exit   int    `json:",omitempty"`
	Signal int    `json:",omitempty"`
	// MaxRSS is the largest ru_maxrss, in bytes, of the processes the
	// init reaped (getrusage RUSAGE_CHILDREN), sent with Done.
	MaxRSS int64 `json:",omitempty"`
}
