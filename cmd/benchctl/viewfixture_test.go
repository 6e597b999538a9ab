package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
)

// The viewer's fixtures: three tasks of the built-in suite, attempts of
// codex and claude on all three (two runs), qwen on rt-01 only (another
// task set), the reference's check attempts, an infra error retried, one
// left to review, one running; each ended attempt with a journal of its
// own, the agents' with a model log. vHostile adds an attempt whose every
// agent-controlled string is markup.
var vStart = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

const (
	vMain    = "a-3f9c2e71d0b84a15" // codex on rt-01: the timeline
	vOther   = "a-8b21d4c6e9f03a77" // claude on rt-01: the comparison's other side
	vHostile = "a-666e6f7468696e67" // everything markup
	vRunX    = "r-5a0c7e21b9d44f60" // codex's run
	vRunC    = "r-c1a7de0f33b2a981" // claude's run
)

var (
	vCodex  = apitype.AgentIdentity{Spec: "codex", Exe: "/opt/benchd-agents/node_modules/.bin/codex", SHA256: strings.Repeat("c0de", 16), Args: []string{"exec", "--full-auto", "--skip-git-repo-check"}, Version: "0.169.0", Model: "gpt-5.1-codex", Env: []string{"OPENAI_API_KEY"}}
	vClaude = apitype.AgentIdentity{Spec: "claude", Exe: "/opt/benchd-agents/node_modules/.bin/claude", SHA256: strings.Repeat("c1a0", 16), Args: []string{"-p", "--permission-mode", "acceptEdits"}, Version: "2.1.328", Model: "claude-sonnet-4-5", Env: []string{"ANTHROPIC_API_KEY"}}
	vQwen   = apitype.AgentIdentity{Spec: "qwen", Exe: "/opt/benchd-agents/node_modules/.bin/qwen", SHA256: strings.Repeat("9e0e", 16), Version: "0.24.4", Model: "qwen3-coder-plus"}
	vRef    = apitype.AgentIdentity{Spec: apitype.AgentReference, SHA256: strings.Repeat("5e", 32)}
	// The hostile agent's strings: markup and script in every place an
	// agent or its operator writes.
	vEvil = apitype.AgentIdentity{Spec: `<img src=x onerror=alert("agent")>`, Exe: "/usr/bin/</script><script>alert('exe')</script>", SHA256: strings.Repeat("e", 64),
		Args: []string{`"><svg onload=alert('args')>`, "javascript:alert('arg')"}, Version: "<b>1</b>", Model: `<iframe src="javascript:alert('model')">`}
)

// vTask is a fixture task: its id, name and bundle hash.
func vTasks() []apitype.TaskInfo {
	return []apitype.TaskInfo{
		{ID: "rt-01", Name: "circular counter", Grader: "pytest", TimeoutSec: 600, SHA256: strings.Repeat("1", 64), Allow: []string{"src/*.py"}, Ignore: []string{"__pycache__/"}},
		{ID: "rt-02", Name: "tests for fold_ws", Grader: "dual-run", TimeoutSec: 600, SHA256: strings.Repeat("2", 64), Allow: []string{"tests/*.py"}, Ignore: []string{"__pycache__/"}},
		{ID: "rt-03", Name: "the missing R2-bin cell", Grader: "pytest", TimeoutSec: 600, SHA256: strings.Repeat("3", 64), Allow: []string{"src/*.py"}, Ignore: []string{"__pycache__/"}},
	}
}

// jstep is one change an agent makes in a fixture journal.
type jstep struct {
	op       journal.Op // OpRelease (write path with content), OpCreate (add it), OpUnlink, OpRename
	path     string
	to       string // rename's new path
	content  string
	decision journal.Decision
	comm     string
	pid      uint32
	at       time.Duration // since the mount
}

// vJournal is one attempt's journal and its blobs.
type vJournal struct {
	path  string
	recs  []journal.Record
	blobs *journal.Blobs
}

// buildJournal journals steps on a tree of initial files, as fsmon
// would: the mount with the initial manifest, each step's records, the
// unmount with the final manifest.
func buildJournal(t *testing.T, start time.Time, initial map[string]string, steps []jstep) *vJournal {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	for p, c := range initial {
		writeFile(t, filepath.Join(ws, p), c, 0o644)
	}
	os.Chmod(ws, 0o755)
	j := &vJournal{path: filepath.Join(dir, "journal.jsonl")}
	w, err := journal.Create(j.path)
	if err != nil {
		t.Fatal(err)
	}
	j.blobs = w.Blobs()
	tree, err := journal.SnapshotTree(ws, j.blobs)
	if err != nil {
		t.Fatal(err)
	}
	mono := int64(-1_000_000) // the mount at 0
	add := func(r journal.Record, at time.Duration) {
		t.Helper()
		mono = max(mono+1_000_000, int64(at))
		r.Mono, r.Wall = mono, start.Add(time.Duration(mono))
		if r.Result == "" {
			r.Result = "ok"
		}
		got, err := w.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		j.recs = append(j.recs, got)
	}
	add(journal.Record{Op: journal.OpMount, SHA256: tree.ManifestHash()}, 0)
	var last time.Duration
	for _, s := range steps {
		r := journal.Record{Path: s.path, PID: s.pid, Comm: s.comm, Decision: s.decision}
		if r.Decision == "" {
			r.Decision = journal.Allowed
		}
		full := filepath.Join(ws, filepath.FromSlash(s.path))
		switch {
		case s.decision == journal.Denied:
			r.Op, r.Result = s.op, "EACCES"
			add(r, s.at)
		case s.op == journal.OpUnlink:
			os.Remove(full)
			r.Op = journal.OpUnlink
			add(r, s.at)
		case s.op == journal.OpRename:
			os.MkdirAll(filepath.Dir(filepath.Join(ws, s.to)), 0o755)
			if err := os.Rename(full, filepath.Join(ws, filepath.FromSlash(s.to))); err != nil {
				t.Fatal(err)
			}
			r.Op, r.Path2 = journal.OpRename, s.to
			add(r, s.at)
		default:
			// New directories first, as the agent's mkdir made them.
			for i, dirs := 0, strings.Split(s.path, "/"); i < len(dirs)-1; i++ {
				dir := strings.Join(dirs[:i+1], "/")
				if _, err := os.Stat(filepath.Join(ws, dir)); os.IsNotExist(err) {
					os.Mkdir(filepath.Join(ws, dir), 0o755)
					add(journal.Record{Op: journal.OpMkdir, Path: dir, Mode: 0o755, PID: s.pid, Comm: s.comm, Decision: r.Decision}, s.at-time.Millisecond)
				}
			}
			_, err := os.Stat(full)
			writeFile(t, full, s.content, 0o644)
			os.Chmod(filepath.Dir(full), 0o755)
			if os.IsNotExist(err) {
				r.Op, r.Mode = journal.OpCreate, 0o644
			} else {
				r.Op, r.Flags = journal.OpOpen, 0o1001
			}
			add(r, s.at)
			r.Op, r.Mode, r.Flags, r.Size = journal.OpWrite, 0, 0, int64(len(s.content))
			add(r, s.at+40*time.Millisecond)
			r.Op, r.SHA256 = journal.OpRelease, journal.HashBytes([]byte(s.content))
			add(r, s.at+80*time.Millisecond)
		}
		last = s.at
	}
	final, err := journal.SnapshotTree(ws, j.blobs)
	if err != nil {
		t.Fatal(err)
	}
	add(journal.Record{Op: journal.OpUnmount, SHA256: final.ManifestHash()}, last+300*time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := journal.VerifyReplay(j.recs, j.blobs); err != nil {
		t.Fatalf("a fixture journal does not replay: %v", err)
	}
	return j
}

// The tasks' starting files.
var vFiles = map[string]map[string]string{
	"rt-01": {
		"plan.md":               "# Circular counter\n\nFix the off-by-one on the modulus path.\n",
		"src/counter.py":        "class Counter:\n    def __init__(self, size):\n        self.size = size\n        self.value = 0\n\n    def step(self):\n        self.value = (self.value + 1) % (self.size - 1)\n        return self.value\n",
		"tests/test_counter.py": "from src.counter import Counter\n\n\ndef test_wraps():\n    c = Counter(3)\n    assert [c.step() for _ in range(4)] == [1, 2, 0, 1]\n",
	},
	"rt-02": {
		"plan.md":           "# fold_ws\n\nWrite tests that catch the whitespace bug.\n",
		"src/fold.py":       "def fold_ws(s):\n    return ' '.join(s.split(' '))\n",
		"tests/__init__.py": "",
	},
	"rt-03": {
		"plan.md":      "# R2-bin\n\nFill in the missing cell of the codec grid.\n",
		"src/codec.py": "GRID = {\n    ('r1', 'text'): 'utf-8',\n    ('r1', 'bin'): 'base64',\n    ('r2', 'text'): 'utf-16',\n}\n",
	},
}

// vSolution is a good change of each task's files.
var vSolution = map[string][]jstep{
	"rt-01": {{op: journal.OpRelease, path: "src/counter.py", content: "class Counter:\n    def __init__(self, size):\n        self.size = size\n        self.value = 0\n\n    def step(self):\n        self.value = (self.value + 1) % self.size\n        return self.value\n", comm: "node", pid: 812, at: 3200 * time.Millisecond}},
	"rt-02": {{op: journal.OpCreate, path: "tests/test_fold.py", content: "from src.fold import fold_ws\n\n\ndef test_tabs():\n    assert fold_ws('a\\t b') == 'a b'\n\n\ndef test_runs():\n    assert fold_ws('a   b') == 'a b'\n", comm: "node", pid: 812, at: 2100 * time.Millisecond}},
	"rt-03": {{op: journal.OpRelease, path: "src/codec.py", content: "GRID = {\n    ('r1', 'text'): 'utf-8',\n    ('r1', 'bin'): 'base64',\n    ('r2', 'text'): 'utf-16',\n    ('r2', 'bin'): 'base85',\n}\n", comm: "node", pid: 812, at: 1500 * time.Millisecond}},
}

// viewDaemon is a benchd stand-in for the viewer on a unix socket: the
// fixtures above, GET /v1/attempts filtered as benchd filters, and every
// endpoint the viewer forwards. It records each request it gets.
type viewDaemon struct {
	Socket string

	attempts    []apitype.Attempt // newest first
	journals    map[string]*vJournal
	transcripts map[string]apitype.Transcript
	models      map[string]apitype.ModelLog
	parts       map[string]string // "ID/SEQ/request" -> the stored message
	tasks       []apitype.TaskInfo

	mu       sync.Mutex
	noModel  bool // answer /model as a benchd from before the model log: 404
	requests []string
}

func newViewDaemon(t *testing.T, hostile bool) *viewDaemon {
	t.Helper()
	d := &viewDaemon{Socket: filepath.Join(t.TempDir(), "d.sock"), journals: map[string]*vJournal{},
		transcripts: map[string]apitype.Transcript{}, models: map[string]apitype.ModelLog{}, parts: map[string]string{}, tasks: vTasks()}
	hash := map[string]string{}
	for _, tk := range d.tasks {
		hash[tk.ID] = tk.SHA256
	}
	n := 0
	// mk makes an ended attempt of agent on task: outcome pass, fail,
	// review or infra; created n minutes after vStart.
	mk := func(id, run, task string, agent apitype.AgentIdentity, outcome string, steps []jstep) *apitype.Attempt {
		n++
		created := vStart.Add(time.Duration(n) * 7 * time.Minute)
		started, finished := created.Add(2*time.Second), created.Add(9*time.Second)
		a := apitype.Attempt{ID: id, Run: run, Task: task, Agent: agent, State: apitype.StateDone, Purpose: apitype.PurposeRun,
			TaskSHA256: hash[task], Host: "bench-01", HostKeyID: strings.Repeat("4b", 32), BenchdVersion: "0.9.0",
			Limits:  &apitype.Limits{TimeoutMS: 600_000, MemoryBytes: 1 << 30, CPUs: 2},
			Created: created, Started: &started, Finished: &finished, WallMS: 6_840, PeakMemoryBytes: 148 << 20, MaxRSSBytes: 121 << 20,
			Network: apitype.Network{Mode: "closed"}}
		switch outcome {
		case "pass":
			a.Pass, a.Reward, a.Outcome = true, 1, apitype.OutcomePass
		case "fail":
			a.Outcome, a.Reasons = apitype.OutcomeFail, []apitype.Reason{{Code: "tests_failed", Message: "2 of 7 generated checks failed (seed 4711)"}}
		case "review":
			a.Outcome, a.Reasons = apitype.OutcomeReview, []apitype.Reason{{Code: "needs_review", Message: "the report names the conflict only in part; a person decides"}}
		case "infra":
			a.State, a.InfraError, a.WallMS, a.PeakMemoryBytes, a.MaxRSSBytes = apitype.StateInfraError, "gateway model: dial tcp 10.0.0.7:443: connect: connection refused", 0, 0, 0
		}
		if a.State == apitype.StateDone {
			if steps == nil {
				steps = vSolution[task]
			}
			j := buildJournal(t, started, vFiles[task], steps)
			d.journals[id] = j
			a.JournalHead = j.recs[len(j.recs)-1].Hash
			cs, err := journal.ChangesetOf(j.recs, j.blobs, journal.Policy{Ignore: []string{"__pycache__/"}})
			if err != nil {
				t.Fatal(err)
			}
			a.Changeset = cs
			for _, r := range j.recs {
				switch {
				case r.Decision == journal.Denied:
					a.Denied++
				case r.Decision == journal.Allowed && r.Op != journal.OpOpen:
					a.Edits++
				}
			}
		}
		if agent.Spec != apitype.AgentReference {
			d.transcripts[id] = apitype.Transcript{Stdout: "[" + agent.Spec + "] reading plan.md\n[" + agent.Spec + "] editing\n[" + agent.Spec + "] done\n"}
		}
		d.attempts = append(d.attempts, a)
		return &d.attempts[len(d.attempts)-1]
	}
	withModel := func(a *apitype.Attempt, log apitype.ModelLog, url string) {
		log.Attempt = a.ID
		for _, c := range log.Calls {
			log.Usage.Calls++
			if c.Usage != nil {
				log.Usage.TokenUsage.Add(*c.Usage)
			}
			log.Usage.ToolCalls += int64(len(c.ToolCalls))
			d.parts[a.ID+"/"+strconv.Itoa(c.Seq)+"/request"] = "POST " + c.Path + " HTTP/1.1\r\nHost: gateway\r\nAuthorization: [redacted]\r\nContent-Type: application/json\r\n\r\n{\"model\":\"" + c.Model + "\",\"stream\":true}"
			d.parts[a.ID+"/"+strconv.Itoa(c.Seq)+"/response"] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: response.completed\ndata: {}\n"
		}
		cost := float64(log.Usage.InputTokens-log.Usage.CachedInputTokens)*1.25e-6 + float64(log.Usage.CachedInputTokens)*0.125e-6 + float64(log.Usage.OutputTokens)*10e-6
		log.Usage.CostUSD = &cost
		d.models[a.ID] = log
		u := log.Usage
		a.Model = &u
		a.Network.Gateways = []apitype.GatewayUse{{Name: "model", Endpoint: "127.0.0.1:18443", Kind: apitype.GatewayHTTP, URL: url, Conns: int64(len(log.Calls)), BytesIn: 48_213, BytesOut: 21_904}}
	}

	// The reference's check attempts, first of all.
	ref := "r-0d1e2f3a4b5c6d7e"
	for _, task := range []string{"rt-01", "rt-02", "rt-03"} {
		a := mk("a-0"+task[4:]+"e3b0c44298fc1c", ref, task, vRef, "pass", nil)
		a.Purpose, a.WallMS = apitype.PurposeCheck, 4
	}
	// codex: every task, rt-01 twice (the second the timeline's).
	mk("a-11d0a4e5b6c7d8e9", vRunX, "rt-01", vCodex, "pass", nil)
	mk("a-12f4b1c2d3e4f5a6", vRunX, "rt-02", vCodex, "fail", nil)
	mk("a-13a9c8b7d6e5f4a3", vRunX, "rt-03", vCodex, "pass", nil)
	main := mk(vMain, vRunX, "rt-01", vCodex, "pass", []jstep{
		{op: journal.OpRelease, path: "src/counter.py", content: vSolution["rt-01"][0].content, comm: "node", pid: 812, at: 3200 * time.Millisecond},
		{op: journal.OpCreate, path: "__pycache__/counter.cpython-311.pyc", content: "\x00pyc", decision: journal.Ignored, comm: "python3", pid: 907, at: 4400 * time.Millisecond},
		{op: journal.OpUnlink, path: "plan.md", decision: journal.Denied, comm: "rm", pid: 915, at: 5000 * time.Millisecond},
	})
	main.Network.Mode = "closed"
	withModel(main, apitype.ModelLog{Calls: []apitype.ModelCall{
		{Seq: 1, Gateway: "model", Time: main.Started.Add(400 * time.Millisecond), DurationMS: 1840, Method: "POST", Path: "/v1/responses", API: apitype.ModelAPIResponses, Model: "gpt-5.1-codex", Stream: true, Status: 200,
			Usage:     &apitype.TokenUsage{InputTokens: 5120, CachedInputTokens: 4096, OutputTokens: 212, ReasoningTokens: 128},
			ToolCalls: []apitype.ToolCall{{ID: "call_1", Name: "shell", Arguments: `{"command":["bash","-lc","cat src/counter.py tests/test_counter.py"]}`}},
			Text:      "I'll read the counter and its test first.", RequestBytes: 18_230, ResponseBytes: 3_112},
		{Seq: 2, Gateway: "model", Time: main.Started.Add(2400 * time.Millisecond), DurationMS: 2210, Method: "POST", Path: "/v1/responses", API: apitype.ModelAPIResponses, Model: "gpt-5.1-codex", Stream: true, Status: 200,
			Usage:     &apitype.TokenUsage{InputTokens: 6301, CachedInputTokens: 5120, OutputTokens: 388, ReasoningTokens: 256},
			ToolCalls: []apitype.ToolCall{{ID: "call_2", Name: "apply_patch", Arguments: `{"input":"*** Begin Patch\n*** Update File: src/counter.py\n-        self.value = (self.value + 1) % (self.size - 1)\n+        self.value = (self.value + 1) % self.size\n*** End Patch"}`}},
			Text:      "The modulus path wraps one step early: `% (self.size - 1)` skips the last value. The fix is to take the value modulo the size itself.", RequestBytes: 21_004, ResponseBytes: 4_870},
		{Seq: 3, Gateway: "model", Time: main.Started.Add(4700 * time.Millisecond), DurationMS: 1260, Method: "POST", Path: "/v1/responses", API: apitype.ModelAPIResponses, Model: "gpt-5.1-codex", Stream: true, Status: 200,
			Usage:        &apitype.TokenUsage{InputTokens: 6890, CachedInputTokens: 6144, OutputTokens: 96},
			ToolCalls:    []apitype.ToolCall{{ID: "call_3", Name: "shell", Arguments: `{"command":["bash","-lc","python3 -m pytest -q"]}`}},
			RequestBytes: 22_310, ResponseBytes: 1_960},
		{Seq: 4, Gateway: "model", Time: main.Started.Add(5050 * time.Millisecond), DurationMS: 980, Method: "POST", Path: "/v1/responses", API: apitype.ModelAPIResponses, Model: "gpt-5.1-codex", Stream: true, Status: 200,
			Usage: &apitype.TokenUsage{InputTokens: 7012, CachedInputTokens: 6656, OutputTokens: 74},
			Text:  "Fixed: Counter.step now wraps at size, and the test passes (1 passed).", RequestBytes: 22_980, ResponseBytes: 1_402},
	}}, "https://api.openai.com/v1")
	d.transcripts[vMain] = apitype.Transcript{Stdout: "codex 0.169.0\nreading plan.md\n$ cat src/counter.py tests/test_counter.py\napplied patch to src/counter.py\n$ python3 -m pytest -q\n.                                                                        [100%]\n1 passed in 0.03s\nFixed: Counter.step now wraps at size.\n",
		Stderr: "warning: rm: cannot remove 'plan.md': Permission denied\n"}

	// claude: every task; rt-01 passed once and failed once (the
	// comparison), rt-02 passed and then left to review, rt-03 an infra
	// error retried.
	mk("a-21b0c9d8e7f6a5b4", vRunC, "rt-01", vClaude, "pass", nil)
	other := mk(vOther, vRunC, "rt-01", vClaude, "fail", []jstep{
		{op: journal.OpRelease, path: "src/counter.py", content: "class Counter:\n    def __init__(self, size):\n        self.size = size\n        self.value = 0\n\n    def step(self):\n        self.value = (self.value + 1) % self.size or self.size\n        return self.value\n", comm: "node", pid: 644, at: 2600 * time.Millisecond},
		{op: journal.OpRelease, path: "tests/test_counter.py", decision: journal.Denied, comm: "node", pid: 644, at: 3100 * time.Millisecond},
	})
	other.Reasons = []apitype.Reason{
		{Code: "tests_failed", Message: "3 of 7 generated checks failed (seed 4711)"},
		{Code: "wrong_files", Message: "the agent tried 1 change(s) the task's edit policy forbids; they were refused (see the journal's denied records)"},
	}
	other.WallMS, other.PeakMemoryBytes = 9_310, 162<<20
	withModel(other, apitype.ModelLog{Calls: []apitype.ModelCall{
		{Seq: 1, Gateway: "model", Time: other.Started.Add(300 * time.Millisecond), DurationMS: 2410, Method: "POST", Path: "/v1/messages", API: apitype.ModelAPIMessages, Model: "claude-sonnet-4-5", Stream: true, Status: 200,
			Usage: &apitype.TokenUsage{InputTokens: 9210, CachedInputTokens: 8000, CacheWriteTokens: 1024, OutputTokens: 301}, ToolCalls: []apitype.ToolCall{{ID: "toolu_01", Name: "Edit", Arguments: `{"file_path":"src/counter.py"}`}}},
		{Seq: 2, Gateway: "model", Time: other.Started.Add(2900 * time.Millisecond), DurationMS: 1730, Method: "POST", Path: "/v1/messages", API: apitype.ModelAPIMessages, Model: "claude-sonnet-4-5", Stream: true, Status: 529, Error: "upstream overloaded"},
	}}, "https://api.anthropic.com")
	mk("a-25f4a3b2c1d0e9f8", vRunC, "rt-02", vClaude, "pass", nil)
	mk("a-22c1d0e9f8a7b6c5", vRunC, "rt-02", vClaude, "review", nil)
	inf := mk("a-23d2e1f0a9b8c7d6", vRunC, "rt-03", vClaude, "infra", nil)
	inf.RetriedBy = "a-24e3f2a1b0c9d8e7"
	retry := mk("a-24e3f2a1b0c9d8e7", vRunC, "rt-03", vClaude, "pass", nil)
	retry.RetryOf = inf.ID
	// qwen: rt-01 only, another task set.
	mk("a-31a2b3c4d5e6f7a8", "r-9e0e11aa22bb33cc", "rt-01", vQwen, "pass", nil)
	// A running attempt.
	n++
	created := vStart.Add(time.Duration(n) * 7 * time.Minute)
	d.attempts = append(d.attempts, apitype.Attempt{ID: "a-41f0e1d2c3b4a596", Run: "r-9e0e11aa22bb33cc", Task: "rt-02", Agent: vQwen, State: apitype.StateRunning,
		Phase: apitype.PhaseRun, Purpose: apitype.PurposeRun, Host: "bench-01", Created: created, Started: &created})

	if hostile {
		evil := mk(vHostile, "r-666e6f7468696e67", "rt-01", vEvil, "fail", []jstep{
			{op: journal.OpCreate, path: `src/<img src=x onerror=alert("path")>.py`, content: "</script><script>alert('content')</script>\n", comm: "<b>node</b>", pid: 666, at: time.Second},
			{op: journal.OpRename, path: `src/<img src=x onerror=alert("path")>.py`, to: "src/javascript:alert('rename').py", comm: "<b>node</b>", pid: 666, at: 2 * time.Second},
			{op: journal.OpUnlink, path: `plan.md"><svg onload=alert('denied')>`, decision: journal.Denied, comm: "<script>", pid: 666, at: 3 * time.Second},
		})
		evil.Reasons = []apitype.Reason{{Code: "<i>code</i>", Message: `<img src=x onerror=alert("reason")> </textarea></style></script><a href="javascript:alert('reason')">click</a>`}}
		evil.Network.DNS = []apitype.DNSQuery{{Time: vStart, Name: "<img src=x onerror=alert('dns')>", Type: "A"}}
		withModel(evil, apitype.ModelLog{Calls: []apitype.ModelCall{
			{Seq: 1, Gateway: "<u>model</u>", Time: evil.Started.Add(500 * time.Millisecond), DurationMS: 10, Method: "POST", Path: `/v1/responses?<script>alert('path')</script>`, API: apitype.ModelAPIResponses,
				Model: `"><img src=x onerror=alert('model')>`, Status: 200, Usage: &apitype.TokenUsage{InputTokens: 1, OutputTokens: 1},
				ToolCalls: []apitype.ToolCall{{ID: `<img src=x onerror=alert('id')>`, Name: `<img src=x onerror=alert('tool')>`, Arguments: `{"cmd":"</script><svg onload=alert('args')>","href":"javascript:alert('args')"}`}},
				Text:      `<img src=x onerror=alert('text')><a href="javascript:alert('text')">see</a></pre></td></tr></table><script>alert('text')</script>`},
		}}, `javascript:alert('url')`)
		d.transcripts[vHostile] = apitype.Transcript{Stdout: "</pre><img src=x onerror=alert('stdout')><script>alert('stdout')</script>\n", Stderr: `<iframe src="javascript:alert('stderr')"></iframe>`}
		d.parts[vHostile+"/1/request"] = "POST / HTTP/1.1\r\n\r\n<img src=x onerror=alert('request')>"
	}
	sort.SliceStable(d.attempts, func(i, j int) bool { return d.attempts[i].Created.After(d.attempts[j].Created) })
	d.serve(t)
	return d
}

// snapshot is a copy of the attempts, newest first, as the handlers
// read them while a test changes one (update).
func (d *viewDaemon) snapshot() []apitype.Attempt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.attempts)
}

// update changes the attempt id while the fake serves.
func (d *viewDaemon) update(id string, f func(a *apitype.Attempt)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.attempts {
		if d.attempts[i].ID == id {
			f(&d.attempts[i])
		}
	}
}

// serve starts the fake on its socket.
func (d *viewDaemon) serve(t *testing.T) {
	mux := http.NewServeMux()
	errorf, reply := replyError, replyJSON
	find := func(w http.ResponseWriter, r *http.Request) (apitype.Attempt, bool) {
		id := r.PathValue("id")
		attempts := d.snapshot()
		for _, a := range attempts {
			if a.ID == id || (id == "latest" && a.ID == attempts[0].ID) {
				return a, true
			}
		}
		errorf(w, 404, apitype.CodeNotFound, "no attempt "+id)
		return apitype.Attempt{}, false
	}
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		reply(w, apitype.Status{Version: "0.9.0", Running: 1, Concurrency: 2, StateDir: "/var/lib/benchd"})
	})
	mux.HandleFunc("GET /v1/tasks", func(w http.ResponseWriter, r *http.Request) {
		reply(w, apitype.TaskList{Tasks: d.tasks})
	})
	mux.HandleFunc("GET /v1/attempts", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		var since, until time.Time
		var err error
		if v := q.Get("since"); v != "" {
			if since, err = time.Parse(time.RFC3339Nano, v); err != nil {
				errorf(w, 400, apitype.CodeInvalid, "bad since")
				return
			}
		}
		if v := q.Get("until"); v != "" {
			if until, err = time.Parse(time.RFC3339Nano, v); err != nil {
				errorf(w, 400, apitype.CodeInvalid, "bad until")
				return
			}
		}
		limit := 100
		if v := q.Get("limit"); v != "" {
			limit, _ = strconv.Atoi(v)
		}
		list := apitype.AttemptList{Attempts: []apitype.Attempt{}}
		for _, a := range d.snapshot() {
			purpose := a.Purpose
			if purpose == "" {
				purpose = apitype.PurposeRun
			}
			switch {
			case q.Get("run") != "" && a.Run != q.Get("run"),
				q.Get("agent") != "" && a.Agent.Spec != q.Get("agent"),
				q.Get("model") != "" && a.Agent.Model != q.Get("model"),
				q.Has("task") && !slices.Contains(q["task"], a.Task),
				q.Has("state") && !slices.Contains(q["state"], a.State),
				q.Has("purpose") && !slices.Contains(q["purpose"], purpose),
				!since.IsZero() && a.Created.Before(since),
				!until.IsZero() && !a.Created.Before(until):
				continue
			}
			if len(list.Attempts) < limit {
				list.Attempts = append(list.Attempts, a)
			}
		}
		reply(w, list)
	})
	mux.HandleFunc("GET /v1/attempts/{id}", func(w http.ResponseWriter, r *http.Request) {
		if a, ok := find(w, r); ok {
			reply(w, a)
		}
	})
	mux.HandleFunc("GET /v1/attempts/{id}/journal", func(w http.ResponseWriter, r *http.Request) {
		a, ok := find(w, r)
		if !ok {
			return
		}
		if j := d.journals[a.ID]; j != nil {
			http.ServeFile(w, r, j.path)
		}
	})
	mux.HandleFunc("GET /v1/attempts/{id}/blobs/{sha}", func(w http.ResponseWriter, r *http.Request) {
		a, ok := find(w, r)
		if !ok {
			return
		}
		j := d.journals[a.ID]
		if j == nil {
			errorf(w, 404, apitype.CodeNotFound, "no blob")
			return
		}
		if b, ok := readBlob(w, j.blobs, r.PathValue("sha")); ok {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(b)
		}
	})
	mux.HandleFunc("GET /v1/attempts/{id}/transcript", func(w http.ResponseWriter, r *http.Request) {
		if a, ok := find(w, r); ok {
			reply(w, d.transcripts[a.ID])
		}
	})
	model := func(w http.ResponseWriter, r *http.Request) bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.noModel {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(404)
			w.Write([]byte("404 page not found\n"))
			return false
		}
		return true
	}
	mux.HandleFunc("GET /v1/attempts/{id}/model", func(w http.ResponseWriter, r *http.Request) {
		if !model(w, r) {
			return
		}
		if a, ok := find(w, r); ok {
			log, ok := d.models[a.ID]
			if !ok {
				log = apitype.ModelLog{Attempt: a.ID, Calls: []apitype.ModelCall{}}
			}
			reply(w, log)
		}
	})
	for _, part := range []string{"request", "response"} {
		mux.HandleFunc("GET /v1/attempts/{id}/model/{seq}/"+part, func(w http.ResponseWriter, r *http.Request) {
			if !model(w, r) {
				return
			}
			s, ok := d.parts[r.PathValue("id")+"/"+r.PathValue("seq")+"/"+part]
			if !ok {
				errorf(w, 404, apitype.CodeNotFound, "no call "+r.PathValue("seq"))
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte(s))
		})
	}
	mux.HandleFunc("GET /v1/runs/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		st := apitype.RunStatus{Concurrency: 2, Ended: true}
		attempts := d.snapshot()
		for i := len(attempts) - 1; i >= 0; i-- {
			a := attempts[i]
			if a.Run != r.PathValue("id") {
				continue
			}
			st.Run.ID, st.Run.Agent, st.Run.Created = a.Run, a.Agent.Spec, a.Created
			if !slices.Contains(st.Run.Tasks, a.Task) {
				st.Run.Tasks = append(st.Run.Tasks, a.Task)
			}
			st.Run.Attempts = append(st.Run.Attempts, a.ID)
			if a.RetriedBy == "" {
				st.Attempts = append(st.Attempts, a)
			}
			st.Ended = st.Ended && finished(a)
		}
		if st.Run.ID == "" {
			errorf(w, 404, apitype.CodeNotFound, "no run "+r.PathValue("id"))
			return
		}
		reply(w, st)
	})
	serveSocket(t, d.Socket, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		d.requests = append(d.requests, r.Method+" "+r.URL.RequestURI())
		d.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
}

// setNoModel makes the fake answer the model endpoints as a benchd from
// before them, or as one that has them.
func (d *viewDaemon) setNoModel(on bool) {
	d.mu.Lock()
	d.noModel = on
	d.mu.Unlock()
}
