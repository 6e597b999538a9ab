package graders

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha3"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The map workload: what the judge asks of the map probe (the server of
// a task's tests/, see tasks/rt-04-tiny-map/tests/map_server.py for the
// request protocol), and its model of the answers.

// Sizes of the workload: about 2,000 keys live at any time, values of
// 2-10 KiB, so the live data is about 12 MiB and a map that keeps its
// values in memory breaks a memory margin of 8 MiB.
const (
	mapUniverse = 2600 // distinct keys the workload writes
	mapAbsent   = 200  // keys it never writes
	mapInitial  = 2300 // keys loaded in the first phase
)

// Request codes of the map probe.
const (
	reqOpen   = 'O'
	reqPut    = 'P'
	reqDelete = 'D'
	reqGet    = 'G'
	reqFlush  = 'F'
	reqDrop   = 'X'
	reqClose  = 'C'
	reqQuit   = 'Q'
)

// mapOp is one request and what the model expects of it.
type mapOp struct {
	code    byte
	key     int32  // index into keys (put, delete, get)
	version int32  // put: the value's version (0 = the empty value); get: the model's, -1 = none
	phase   uint8  // index into mapPhases
	chal    uint64 // get: two halves of the challenge are chal and ^chal, see challenge
}

var mapPhases = []string{"open", "load", "mixed operations", "reads after drop_cache",
	"mixed operations after drop_cache", "close", "reads after reopen", "operations after reopen",
	"reads after drop_cache, close and reopen"}

// mapWorkload is one grading's workload: keys, the operations in order,
// and counts for the operator.
type mapWorkload struct {
	seed                uint64
	seedBytes           []byte
	keys                [][]byte // mapUniverse written keys, then mapAbsent absent ones
	ops                 []mapOp
	puts, deletes, gets int
	liveKeys            int
	liveBytes           int64
}

// newMapWorkload generates the workload of seed.
func newMapWorkload(seed uint64) *mapWorkload {
	var key [32]byte
	binary.BigEndian.PutUint64(key[:], seed)
	copy(key[8:], "benchd map workload")
	rng := rand.New(rand.NewChaCha8(key))
	w := &mapWorkload{seed: seed, seedBytes: key[:8]}
	seen := map[string]bool{}
	const hexdigits = "0123456789abcdef"
	for len(w.keys) < mapUniverse+mapAbsent {
		n := 6 + rng.IntN(18)
		k := make([]byte, 1+n)
		k[0] = 'k'
		for i := 1; i <= n; i++ {
			k[i] = hexdigits[rng.IntN(16)]
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			w.keys = append(w.keys, k)
		}
	}
	g := mapGen{w: w, rng: rng, model: make([]int32, len(w.keys))}
	for i := range g.model {
		g.model[i] = -1
	}
	g.run()
	for i, v := range g.model {
		if v >= 0 {
			w.liveKeys++
			w.liveBytes += int64(len(w.value(int32(i), v)))
		}
	}
	return w
}

// mapGen generates the operations against its model: the version of
// each key, -1 when absent or deleted.
type mapGen struct {
	w       *mapWorkload
	rng     *rand.Rand
	model   []int32
	live    []int32 // keys with a value, in a pool with O(1) removal
	livePos map[int32]int
	dead    []int32
	deadPos map[int32]int
	version int32
	phase   uint8
}

func (g *mapGen) add(code byte, key, version int32) {
	op := mapOp{code: code, key: key, version: version, phase: g.phase}
	switch code {
	case reqPut:
		g.w.puts++
	case reqDelete:
		g.w.deletes++
	case reqGet:
		g.w.gets++
		op.chal = g.rng.Uint64()
	}
	g.w.ops = append(g.w.ops, op)
}

func poolAdd(pool *[]int32, pos map[int32]int, k int32) {
	if _, ok := pos[k]; !ok {
		pos[k] = len(*pool)
		*pool = append(*pool, k)
	}
}

func poolRemove(pool *[]int32, pos map[int32]int, k int32) {
	i, ok := pos[k]
	if !ok {
		return
	}
	delete(pos, k)
	last := (*pool)[len(*pool)-1]
	*pool = (*pool)[:len(*pool)-1]
	if i < len(*pool) {
		(*pool)[i] = last
		pos[last] = i
	}
}

func (g *mapGen) put(k int32, empty bool) {
	v := int32(0)
	if !empty {
		g.version++
		v = g.version
	}
	g.add(reqPut, k, v)
	g.model[k] = v
	poolAdd(&g.live, g.livePos, k)
	poolRemove(&g.dead, g.deadPos, k)
}

func (g *mapGen) del(k int32) {
	g.add(reqDelete, k, 0)
	g.model[k] = -1
	poolRemove(&g.live, g.livePos, k)
	poolAdd(&g.dead, g.deadPos, k)
}

func (g *mapGen) get(k int32) { g.add(reqGet, k, g.model[k]) }

func (g *mapGen) absent() int32 { return int32(mapUniverse + g.rng.IntN(mapAbsent)) }

// sample is a key to read: mostly live, some deleted, some never written.
func (g *mapGen) sample() int32 {
	x := g.rng.Float64()
	switch {
	case x < 0.7 && len(g.live) > 0:
		return g.live[g.rng.IntN(len(g.live))]
	case x < 0.85 && len(g.dead) > 0:
		return g.dead[g.rng.IntN(len(g.dead))]
	}
	return g.absent()
}

func (g *mapGen) mixed(n int) {
	for range n {
		x := g.rng.Float64()
		switch {
		case x < 0.40 && len(g.live) > 0:
			g.put(g.live[g.rng.IntN(len(g.live))], false)
		case x < 0.60 && len(g.live) > 0:
			g.del(g.live[g.rng.IntN(len(g.live))])
		case x < 0.75:
			g.put(int32(g.rng.IntN(mapUniverse)), false)
		default:
			g.get(g.sample())
		}
	}
}

func (g *mapGen) run() {
	g.livePos, g.deadPos = map[int32]int{}, map[int32]int{}
	g.add(reqOpen, 0, 0)
	g.phase = 1
	for k := range int32(mapInitial) {
		g.put(k, false)
	}
	g.put(mapInitial, true) // the empty value is a value, not a delete
	g.del(mapInitial + 1)   // deleting a key that never existed
	g.phase = 2
	g.mixed(1200)
	// A key deleted while an older value sits on disk, and one put
	// again after a delete.
	g.del(0)
	g.del(1)
	g.put(1, false)
	g.get(0)
	g.get(1)
	g.phase = 3
	g.add(reqDrop, 0, 0)
	for range 600 {
		g.get(g.sample())
	}
	g.get(0)
	g.get(1)
	g.get(mapInitial)
	g.phase = 4
	g.mixed(600)
	g.add(reqFlush, 0, 0)
	g.mixed(200)
	g.phase = 5
	g.add(reqClose, 0, 0)
	g.phase = 6
	g.add(reqOpen, 0, 0)
	for k := range int32(len(g.w.keys)) {
		g.get(k)
	}
	g.phase = 7
	g.mixed(300)
	g.add(reqDrop, 0, 0)
	for range 300 {
		g.get(g.sample())
	}
	g.mixed(100)
	g.add(reqDrop, 0, 0)
	g.add(reqClose, 0, 0)
	g.phase = 8
	g.add(reqOpen, 0, 0)
	for k := range int32(len(g.w.keys)) {
		g.get(k)
	}
	g.add(reqClose, 0, 0)
}

// segments splits the operations at each open: every open after the
// first starts a fresh process, so a map that kept its state in the
// process (a module-level dict, a class attribute) has lost it.
func (w *mapWorkload) segments() [][2]int {
	var out [][2]int
	start := 0
	for i, op := range w.ops {
		if op.code == reqOpen && i > start {
			out = append(out, [2]int{start, i})
			start = i
		}
	}
	return append(out, [2]int{start, len(w.ops)})
}

// value is key k's value at version v: empty at version 0, else 2-10 KiB
// of SHAKE-256 output, which does not compress and is new per seed.
func (w *mapWorkload) value(k, v int32) []byte {
	if v == 0 {
		return []byte{}
	}
	in := make([]byte, 0, 64)
	in = append(in, w.seedBytes...)
	in = append(in, w.keys[k]...)
	in = append(in, '/')
	in = strconv.AppendInt(in, int64(v), 10)
	h := sha256.Sum256(in)
	n := 2048 + int(binary.BigEndian.Uint32(h[:4])%8192)
	return sha3.SumSHAKE256(in, n)
}

// challenge is a get's 16-byte challenge.
func challenge(op mapOp) []byte {
	var c [16]byte
	binary.BigEndian.PutUint64(c[:8], op.chal)
	binary.BigEndian.PutUint64(c[8:], ^op.chal)
	return c[:]
}

// writeTo writes the requests ops to dst, ending with a quit, and stops at
// the first write error (the probe stopped reading).
func (w *mapWorkload) writeTo(dst io.Writer, ops []mapOp) error {
	b := bufio.NewWriterSize(dst, 64<<10)
	var hdr [6]byte
	for _, op := range ops {
		b.WriteByte(op.code)
		switch op.code {
		case reqPut, reqDelete, reqGet:
			k := w.keys[op.key]
			binary.BigEndian.PutUint16(hdr[:2], uint16(len(k)))
			b.Write(hdr[:2])
			b.Write(k)
		}
		switch op.code {
		case reqPut:
			v := w.value(op.key, op.version)
			binary.BigEndian.PutUint32(hdr[:4], uint32(len(v)))
			b.Write(hdr[:4])
			b.Write(v)
		case reqGet:
			b.Write(challenge(op))
		}
		// The writer keeps its first error: a probe that stopped
		// reading ends the stream here, not after every value is made.
		if _, err := b.Write(nil); err != nil {
			return err
		}
	}
	b.WriteByte(reqQuit)
	return b.Flush()
}

// mapProbe runs the server, with the agent's map or (baseline) none.
type mapProbe struct {
	in        Input
	r         Runner
	server    string
	budget    int64
	forbidden []string
	hide      []string
	wl        *mapWorkload
}

// mapRun is one run of the probe and how its answers compare.
type mapRun struct {
	res         RunResult
	wl          *mapWorkload
	answered    int    // answers read before the first wrong one or the end
	total       int    // well-formed answers, right or wrong
	wrong       string // the first wrong answer, public words; "" if none
	wrongDetail string // the same, for the operator
}

// run runs the probe, in a fresh scratch holding the agent's world (a
// copy of the workspace with its plan; for the baseline an empty one)
// and an empty map root: one process per segment of the workload
// (segments), on the same root, within timeout in all. The result sums
// their wall times and takes the largest of their memory readings.
func (p *mapProbe) run(ctx context.Context, baseline bool, timeout time.Duration) (mapRun, error) {
	name := "map"
	if baseline {
		name = "map-baseline"
	}
	sc, err := newScratch(p.in, name)
	if err != nil {
		return mapRun{}, err
	}
	defer sc.Close()
	ws := filepath.Join(sc.Dir, "ws")
	if baseline {
		err = os.Mkdir(ws, 0o755)
	} else {
		_, err = sc.copyWorkspace(p.in, "ws")
	}
	if err == nil {
		err = putPlan(p.in, ws)
	}
	if err != nil {
		return mapRun{}, err
	}
	server, err := os.ReadFile(filepath.Join(p.in.Task.TestsDir(), filepath.FromSlash(p.server)))
	if err != nil {
		return mapRun{}, infraf("task %s: server %s: %v", p.in.Task.ID, p.server, err)
	}
	root := filepath.Join(sc.Dir, "data")
	if err := os.Mkdir(root, 0o777); err != nil {
		return mapRun{}, infraf("making the map root: %v", err)
	}
	// The server's arguments are the first line of its input, not argv,
	// which the code under test can read.
	argLine := []string{root, strconv.FormatInt(p.budget, 10)}
	if baseline {
		argLine = append(argLine, "--baseline")
	}
	if len(p.forbidden) > 0 {
		argLine = append(argLine, "--forbid="+strings.Join(withCompanions(p.forbidden), ","))
	}
	head := strings.Join(argLine, " ") + "\n"
	args := []string{Python, "-c", string(server)}
	out := mapRun{wl: p.wl}
	var stderr []byte
	for _, seg := range p.wl.segments() {
		left := timeout - out.res.Wall
		if left <= 0 {
			out.res.TimedOut = true
			break
		}
		ops := p.wl.ops[seg[0]:seg[1]]
		pr, pw := io.Pipe()
		go func() {
			if _, err := io.WriteString(pw, head); err != nil {
				pw.CloseWithError(err)
				return
			}
			pw.CloseWithError(p.wl.writeTo(pw, ops))
		}()
		spec := agentSpec(ws, left, args...)
		spec.MemoryLimit, spec.Stdin, spec.Hide, spec.Binds = workloadAddrLimit, pr, p.hide, []string{root}
		res, err := p.r.Run(ctx, spec)
		pr.CloseWithError(io.ErrClosedPipe) // the writer stops if the probe left input unread
		if err != nil {
			return mapRun{}, fmt.Errorf("%w: running the map probe: %w", ErrInfra, err)
		}
		out.merge(res)
		stderr = append(stderr, res.Stderr...)
		out.compareFrom(seg[0], seg[1], res.Stdout)
		if res.TimedOut || res.OOM {
			break
		}
	}
	out.res.Stderr = tail(stderr, 64<<10)
	return out, nil
}

// merge adds one process's result to the run's: wall times add up, the
// memory readings keep their largest, the first failure stays.
func (m *mapRun) merge(res RunResult) {
	r := &m.res
	r.Wall += res.Wall
	r.TimedOut = r.TimedOut || res.TimedOut
	r.OOM = r.OOM || res.OOM
	if r.ExitCode == 0 && r.Signal == 0 {
		r.ExitCode, r.Signal = res.ExitCode, res.Signal
	}
	r.MaxRSS = max(r.MaxRSS, res.MaxRSS)
	r.PeakMemory = max(r.PeakMemory, res.PeakMemory)
	r.PeakAnonShmem = max(r.PeakAnonShmem, res.PeakAnonShmem)
	r.PeakCharged = max(r.PeakCharged, res.PeakCharged)
}

// compare reads the answers in out to every operation and checks each
// against the model; answered counts those before the first wrong one.
func (m *mapRun) compare(out []byte) { m.compareFrom(0, len(m.wl.ops), out) }

// compareFrom is compare for the operations start to end, answered in
// out by one process.
func (m *mapRun) compareFrom(start, end int, out []byte) {
	w := m.wl
	for i := start; i < end; i++ {
		op := w.ops[i]
		if len(out) == 0 {
			return
		}
		got, rest, ok := nextAnswer(out)
		if !ok {
			return // a torn last answer: the probe stopped there
		}
		out = rest
		m.total++
		if m.wrong != "" {
			continue
		}
		want := []byte{'k'}
		if op.code == reqGet {
			if op.version < 0 {
				want = []byte{'n'}
			} else {
				h := sha256.New()
				h.Write(challenge(op))
				h.Write(w.value(op.key, op.version))
				want = append([]byte{'v'}, h.Sum(nil)...)
			}
		}
		if !bytes.Equal(got, want) {
			m.wrong = fmt.Sprintf("%s: %s answered %s, want %s", mapPhases[op.phase], describeOp(op, w), describeAnswer(got), describeAnswer(want))
			m.wrongDetail = fmt.Sprintf("operation %d of %d, key %q: %s", i, len(w.ops), w.keys[op.key], m.wrong)
			continue
		}
		m.answered++
	}
}

// nextAnswer splits the first answer off out.
func nextAnswer(out []byte) (answer, rest []byte, ok bool) {
	n := 1
	switch out[0] {
	case 'v':
		n = 33
	case 'e':
		if len(out) < 2 {
			return nil, nil, false
		}
		n = 2 + int(out[1])
	}
	if len(out) < n {
		return nil, nil, false
	}
	return out[:n], out[n:], true
}

func describeOp(op mapOp, w *mapWorkload) string {
	switch op.code {
	case reqOpen:
		return "TinyMap()"
	case reqPut:
		return "put"
	case reqDelete:
		return "delete"
	case reqFlush:
		return "flush"
	case reqDrop:
		return "drop_cache"
	case reqClose:
		return "close"
	}
	switch {
	case op.version >= 0:
		return "get of a live key"
	case int(op.key) >= mapUniverse:
		return "get of a key never written"
	}
	return "get of a deleted key"
}

func describeAnswer(a []byte) string {
	switch a[0] {
	case 'k':
		return "ok"
	case 'n':
		return "None"
	case 't':
		return "something that is not bytes"
	case 'v':
		return "a value"
	case 'e':
		return "an exception (" + string(a[2:]) + ")"
	}
	return fmt.Sprintf("%q", a[:1])
}
