package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"benchd.dev/client/apitype"
)

// runResult is what run --json prints.
type runResult struct {
	Run   string   `json:"run"`
	Task  string   `json:"task"`
	Tasks []string `json:"tasks,omitempty"`
	Agent string   `json:"agent"`
	// Pass says whether every attempt passed; null with --detach, when
	// none has ended yet.
	Pass     *bool             `json:"pass"`
	Attempts []apitype.Attempt `json:"attempts"`
	// Model sums the attempts' model usage; omitted when none had any.
	Model *apitype.ModelUsage `json:"model,omitempty"`
}

// runFlags are the flags of run, before they become a RunRequest.
type runFlags struct {
	agent, timeout, model string
	tasks, list           string // a run of several tasks: --tasks ID,ID... or --list LIST
	attempts              int
	task, env, gateways   stringList // --task given twice or more is a run of those tasks
}

func (c *CLI) cmdRun(ctx context.Context, args []string) int {
	f := c.newFlags("run")
	var rf runFlags
	f.Var(&rf.task, "task", "task `ID` (benchctl tasks list); repeated, a run of those tasks as --tasks makes")
	f.StringVar(&rf.tasks, "tasks", "", "run several tasks as one run: `ID,ID,...`, each task's attempts in turn")
	f.StringVar(&rf.list, "list", "", "run the tasks of `LIST` as one run: a list benchctl draw wrote, or task ids one a line")
	f.StringVar(&rf.agent, "agent", "", "agent: a preset (codex, claude, qwen: docs/agents.md; scripts/setup-agents installs their CLIs), builtin:reference, builtin:null, builtin:attempt:NAME, or a command line")
	f.IntVar(&rf.attempts, "attempts", 1, fmt.Sprintf("number of attempts, 1 to %d", apitype.MaxAttempts))
	f.StringVar(&rf.timeout, "timeout", "", "wall-clock limit per attempt, a Go duration (default the task's)")
	f.Var(&rf.env, "env", "pass environment variable `NAME` to the agent, value taken from benchctl's environment (repeatable)")
	f.Var(&rf.gateways, "gateway", "expose a model endpoint to the agent (repeatable): `NAME=https://HOST[:PORT][/PATH]` (or http://), proxied and recorded call by call, as the presets want (NAME model); or NAME=HOST:PORT, a plain TCP relay")
	f.StringVar(&rf.model, "model", "", "model name, recorded in the agent's identity")
	detach := f.Bool("detach", false, "start the attempts and return without waiting")
	every := f.Duration("every", defaultEvery, "with --tasks or --list, off a terminal: print the run's progress every `D` (and as each attempt ends)")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	req, err := rf.request(c.LookupEnv)
	if err != nil {
		return c.usageError("run", "%v", err)
	}
	if *every <= 0 {
		return c.usageError("run", "--every %v: want a positive duration", *every)
	}
	if rf.list != "" {
		if req.Tasks, err = readTaskList(rf.list); err != nil {
			return c.usageError("run", "--list %s: %v", rf.list, err)
		}
	}
	run, err := c.api().CreateRun(ctx, req)
	if err != nil {
		return c.fail("run", exitError, err)
	}
	if *detach {
		return c.printDetached(ctx, f.json, run)
	}
	if len(req.Tasks) > 0 {
		return c.followRun(ctx, "run", f.json, *every, run, true)
	}
	if !f.json {
		fmt.Fprintf(c.Stdout, "run %s: %d attempt(s) of %s by %s\n", run.ID, len(run.Attempts), run.Task, visible(run.Agent, false))
	}
	attempts, err := c.watch(ctx, run, c.Terminal && !f.json)
	if err != nil {
		return c.fail("run", exitError, err)
	}
	return c.printRun(f.json, run, attempts)
}

// request checks the flags and makes the request. Variables named by
// --env are read with lookup; their values are sent, never printed.
func (rf *runFlags) request(lookup func(string) (string, bool)) (apitype.RunRequest, error) {
	req := apitype.RunRequest{Agent: rf.agent, Attempts: rf.attempts, Model: rf.model}
	given := 0
	for _, s := range []string{rf.task.String(), rf.tasks, rf.list} {
		if s != "" {
			given++
		}
	}
	switch {
	case len(rf.task) == 1:
		req.Task = rf.task[0]
	case len(rf.task) > 1:
		ids, err := splitTasks(rf.task.String())
		if err != nil {
			return req, fmt.Errorf("--task, given %d times: %v", len(rf.task), err)
		}
		req.Tasks = ids
	case rf.tasks != "":
		ids, err := splitTasks(rf.tasks)
		if err != nil {
			return req, err
		}
		req.Tasks = ids
	}
	switch {
	case given == 0:
		return req, errors.New("missing --task ID (or --tasks ID,ID... or --list LIST)")
	case given > 1:
		return req, errors.New("give one of --task, --tasks and --list")
	case rf.agent == "":
		return req, errors.New("missing --agent")
	case rf.attempts < 1 || rf.attempts > apitype.MaxAttempts:
		return req, fmt.Errorf("--attempts %d: want 1 to %d", rf.attempts, apitype.MaxAttempts)
	}
	if rf.timeout != "" {
		d, err := time.ParseDuration(rf.timeout)
		if err != nil {
			return req, fmt.Errorf("--timeout %q: want a duration such as 90s or 10m", rf.timeout)
		}
		if d < apitype.MinTimeout || d > apitype.MaxTimeout {
			return req, fmt.Errorf("--timeout %v: want %v to %v", d, apitype.MinTimeout, apitype.MaxTimeout)
		}
		req.Timeout = d.String()
	}
	seen := map[string]bool{}
	for _, name := range rf.env {
		if strings.Contains(name, "=") {
			return req, fmt.Errorf("--env %s: give only the NAME; the value is read from benchctl's environment", strings.SplitN(name, "=", 2)[0])
		}
		if !validEnvName(name) {
			return req, fmt.Errorf("--env %q: not a variable name", name)
		}
		if seen[name] {
			return req, fmt.Errorf("--env %s given twice", name)
		}
		seen[name] = true
		v, ok := lookup(name)
		if !ok {
			return req, fmt.Errorf("--env %s: not set in benchctl's environment", name)
		}
		req.Env = append(req.Env, apitype.EnvVar{Name: name, Value: v})
	}
	for _, g := range rf.gateways {
		if err := checkGateway(g); err != nil {
			return req, err
		}
		req.Gateways = append(req.Gateways, g)
	}
	return req, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// checkGateway checks the forms NAME=HOST:PORT and
// NAME=http(s)://HOST[:PORT][/PATH] (benchd checks the rest).
func checkGateway(g string) error {
	name, addr, ok := strings.Cut(g, "=")
	if !ok || name == "" {
		return fmt.Errorf("--gateway %q: want NAME=https://HOST[:PORT][/PATH] or NAME=HOST:PORT", g)
	}
	if l := strings.ToLower(addr); strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
		u, err := url.Parse(addr)
		if err != nil || u.Host == "" {
			return fmt.Errorf("--gateway %q: want NAME=https://HOST[:PORT][/PATH]", g)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("--gateway %q: want NAME=https://HOST[:PORT][/PATH] or NAME=HOST:PORT", g)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("--gateway %q: port %q is not 1 to 65535", g, port)
	}
	return nil
}

// printDetached reports the attempts started and returns at once.
func (c *CLI) printDetached(ctx context.Context, asJSON bool, run apitype.Run) int {
	as := make([]apitype.Attempt, len(run.Attempts))
	for i, id := range run.Attempts {
		a, err := c.api().Attempt(ctx, id)
		if err != nil {
			a = apitype.Attempt{ID: id, Run: run.ID, Task: run.Task, State: apitype.StateQueued}
		}
		as[i] = normalize(a)
	}
	if asJSON {
		c.printJSON(runResult{Run: run.ID, Task: run.Task, Tasks: run.Tasks, Agent: run.Agent, Attempts: as})
		return exitOK
	}
	what := run.Task
	if len(run.Tasks) > 1 {
		what = fmt.Sprintf("%d tasks", len(run.Tasks))
	}
	fmt.Fprintf(c.Stdout, "run %s: %d attempt(s) of %s started; follow with: benchctl wait %s\n", run.ID, len(as), what, run.ID)
	for _, a := range as {
		fmt.Fprintln(c.Stdout, a.ID)
	}
	return exitOK
}

// printRun prints the verdicts and returns the exit status: the worst
// verdictExit of the attempts.
func (c *CLI) printRun(asJSON bool, run apitype.Run, as []apitype.Attempt) int {
	code, pass := runExit(as)
	if asJSON {
		c.printJSON(runResult{Run: run.ID, Task: run.Task, Agent: run.Agent, Pass: &pass, Attempts: normalizeAll(as), Model: sumModel(as)})
		return code
	}
	verdictTable(c.Stdout, as)
	n := 0
	for _, a := range as {
		if a.State == apitype.StateDone && a.Pass {
			n++
		}
	}
	fmt.Fprintf(c.Stdout, "\n%d of %d attempts passed (run %s)\n", n, len(as), run.ID)
	if u := sumModel(as); u != nil {
		fmt.Fprintf(c.Stdout, "model: %s\n", usageLine(u))
	}
	for _, a := range as {
		if a.State == apitype.StateInfraError {
			fmt.Fprintf(c.Stdout, "  %s: infra error: %s\n", a.ID, oneLine(a.InfraError, 200))
		}
		if a.Unresolved() {
			fmt.Fprintf(c.Stdout, "  %s: left to review, neither passed nor failed: benchctl review %s --pass|--fail --why TEXT\n", a.ID, a.ID)
		}
		for _, r := range a.Reasons {
			fmt.Fprintf(c.Stdout, "  %s: %s: %s\n", a.ID, r.Code, oneLine(r.Message, 200))
		}
	}
	return code
}

// runExit is the exit status of a run's attempts, the worst of their
// verdictExit (an infra error, 2, over a fail, 1, over a pass, 0), and
// whether every one passed.
func runExit(as []apitype.Attempt) (code int, pass bool) {
	pass = len(as) > 0
	for _, a := range as {
		ac := verdictExit(a)
		if ac != exitOK {
			pass = false
		}
		code = max(code, ac)
	}
	return code, pass
}

// watch follows every attempt of run to its end, drawing a live line per
// attempt when live is set. If ctx ends first, the attempts that have not
// finished are canceled.
func (c *CLI) watch(ctx context.Context, run apitype.Run, live bool) ([]apitype.Attempt, error) {
	return c.watchEnded(ctx, run, live, nil)
}

// watchEnded is watch that tells ended (when not nil) of each slot's
// attempt as it ends, one call at a time, in the order they end: a
// retried infra error is told of by its retry.
func (c *CLI) watchEnded(ctx context.Context, run apitype.Run, live bool, ended func(apitype.Attempt)) ([]apitype.Attempt, error) {
	var endedMu sync.Mutex
	n := len(run.Attempts)
	p := &progress{ids: slices.Clone(run.Attempts), events: make([]apitype.Event, n), at: make([]time.Time, n), final: make([]*apitype.Attempt, n)}
	results := make([]apitype.Attempt, n)
	errs := make([]error, n)
	// cur is the attempt each slot follows: an infra error that benchd
	// retries is followed by its retry, to the end of the chain.
	cur := slices.Clone(run.Attempts)
	var wg sync.WaitGroup
	for i, id := range run.Attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				a, err := c.follow(ctx, id, func(ev apitype.Event) { p.update(i, ev) })
				if err == nil && a.RetriedBy != "" {
					id = a.RetriedBy
					cur[i] = id
					p.retried(i, id)
					continue
				}
				results[i], errs[i] = a, err
				if err == nil {
					p.finish(i, a)
					if ended != nil {
						endedMu.Lock()
						ended(a)
						endedMu.Unlock()
					}
				}
				return
			}
		}()
	}
	stopDraw := func() {}
	if live {
		stopDraw = p.draw(c.Stdout)
	}
	wg.Wait()
	stopDraw()
	if ctx.Err() != nil {
		var canceled []string
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i, id := range cur {
			if errs[i] != nil {
				if _, err := c.api().Cancel(cctx, id); err == nil {
					canceled = append(canceled, id)
				}
			}
		}
		if len(canceled) == 0 {
			return nil, errors.New("interrupted")
		}
		return nil, fmt.Errorf("interrupted: canceled %s", strings.Join(canceled, ", "))
	}
	var lost []string
	for i, err := range errs {
		if err != nil {
			lost = append(lost, fmt.Sprintf("%s: %v", cur[i], err))
		}
	}
	if len(lost) > 0 {
		return nil, fmt.Errorf("lost track of attempts: %s", strings.Join(lost, "; "))
	}
	return results, nil
}

// pollEvery is how often an attempt is asked for when its event stream
// broke while benchd still answers.
var pollEvery = time.Second

// follow reads an attempt's events up to the last, which carries the
// final attempt. If the stream breaks, it asks for the attempt until it
// has finished.
func (c *CLI) follow(ctx context.Context, id string, update func(apitype.Event)) (apitype.Attempt, error) {
	es, err := c.api().Events(ctx, id)
	if err == nil {
		for {
			ev, nerr := es.Next()
			if nerr != nil {
				if !errors.Is(nerr, io.EOF) {
					err = nerr
				}
				break
			}
			update(ev)
			if ev.Done && ev.Final != nil {
				es.Close()
				return *ev.Final, nil
			}
		}
		es.Close()
	}
	for {
		if ctx.Err() != nil {
			return apitype.Attempt{}, ctx.Err()
		}
		a, aerr := c.api().Attempt(ctx, id)
		if aerr != nil {
			if err != nil {
				return a, fmt.Errorf("%v, then %w", err, aerr)
			}
			return a, aerr
		}
		if finished(a) {
			return a, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollEvery):
		}
	}
}

// progress is the live state of a run's attempts.
type progress struct {
	mu     sync.Mutex
	ids    []string // the attempt each slot follows
	events []apitype.Event
	at     []time.Time // when each last event came
	final  []*apitype.Attempt
}

func (p *progress) update(i int, ev apitype.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events[i] = ev
	p.at[i] = time.Now()
}

// retried makes slot i follow id, the retry of its infra error.
func (p *progress) retried(i int, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids[i], p.events[i] = id, apitype.Event{Attempt: id, State: apitype.StateQueued}
}

func (p *progress) finish(i int, a apitype.Attempt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.final[i] = &a
}

// lines renders one line per attempt.
func (p *progress) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.ids))
	for i, id := range p.ids {
		ev := p.events[i]
		if ev.State == apitype.StateRunning {
			// The clock runs between events.
			ev.ElapsedMS += time.Since(p.at[i]).Milliseconds()
		}
		out[i] = liveLine(id, ev, p.final[i])
	}
	return out
}

// liveLine is an attempt's line while it runs: phase, elapsed, memory,
// edits, denied operations; once finished, its verdict.
func liveLine(id string, ev apitype.Event, final *apitype.Attempt) string {
	if final != nil {
		return fmt.Sprintf("%-14s %-11s %8s  peak %10s  edits %4d  denied %3d  %s", id, verdict(*final),
			wallTime(*final), formatBytes(final.PeakMemoryBytes), final.Edits, final.Denied, reasonCodes(*final))
	}
	what := ev.State
	if what == "" {
		what = "waiting"
	}
	if ev.State == apitype.StateRunning && ev.Phase != "" {
		what = ev.Phase
	}
	return fmt.Sprintf("%-14s %-11s %8s  mem  %10s  edits %4d  denied %3d", id, what,
		formatMS(ev.ElapsedMS), formatBytes(ev.MemoryBytes), ev.Edits, ev.Denied)
}

// drawEvery is how often the live lines are redrawn.
const drawEvery = 200 * time.Millisecond

// draw redraws the live lines in place until the returned stop is called,
// which draws them a last time.
func (p *progress) draw(w io.Writer) (stop func()) {
	drawn := 0
	redraw := func() {
		var b bytes.Buffer
		if drawn > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", drawn)
		}
		lines := p.lines()
		for _, l := range lines {
			fmt.Fprintf(&b, "\r\x1b[2K%s\n", l)
		}
		drawn = len(lines)
		w.Write(b.Bytes())
	}
	redraw()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(drawEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				redraw()
				return
			case <-t.C:
				redraw() // elapsed times move even without events
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		fmt.Fprintln(w)
	}
}
