package graders

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Reason codes of kind "exact".
const (
	CodeImportError = "import_error" // the module does not import
	CodeCallError   = "call_error"   // the function is missing, raised, or did not return in time
	CodeWrongType   = "wrong_type"   // the function returned something other than an int
	CodeWrongValue  = "wrong_value"  // an int, but not the golden one
	CodeCallNetwork = "call_network" // the call tried to reach the network (where the runner records it)
)

func init() { register("exact", gradeExact) }

// exactCallScript (exact_call.py) imports a module from the working
// directory, calls one function with no arguments and prints the result
// line (workload_protocol.go). It runs in the agent's world.
//
//go:embed exact_call.py
var exactCallScript string

// exactGolden is the bundle's golden file.
type exactGolden struct {
	Value      int64            `toml:"value"`
	NearMisses map[string]int64 `toml:"near_misses"`
}

type exactResult struct {
	Nonce string `json:"nonce"`
	Stage string `json:"stage"`
	Error string `json:"error"`
	Type  string `json:"type"`
	Repr  string `json:"repr"`
	Value string `json:"value"`
}

// gradeExact is kind "exact": a function of the workspace, called with no
// arguments, must return exactly the golden integer.
//
// Parameters ([bench.grader]):
//
//	call = "meta.fixture:scaled_constant"   module:function, imported with
//	                                        the workspace as the import root
//	golden = "golden.toml"                  a file of the bundle's tests/:
//	                                        value = 137035999177, and an
//	                                        optional [near_misses] table of
//	                                        name = value, named in messages
//
// The function runs once in a fresh /usr/bin/python3 in the agent's
// world (a copy of the workspace with its plan at /workspace; the golden
// is never there), under the verifier's
// time limit, with the runner's network closed. Its result must be an
// int exactly (type(v) is int: a bool, an int subclass or a float equal
// to the golden is wrong_type). A wrong int is wrong_value; the message
// says whether it is a listed near miss or the golden off by a power of
// ten. A call that tried the network (RunResult.Network: the daemon's
// runner records every attempt of its closed namespace) is call_network,
// whatever it returned: the instruction forbids it.
func gradeExact(ctx context.Context, in Input, r Runner) (Verdict, error) {
	call, err := paramString(in, "call", "")
	if err != nil {
		return Verdict{}, err
	}
	mod, fn, ok := strings.Cut(call, ":")
	if !ok || mod == "" || fn == "" {
		return Verdict{}, infraf("task %s: kind exact: call %q: want module:function", in.Task.ID, call)
	}
	goldenRel, err := paramString(in, "golden", "")
	if err != nil {
		return Verdict{}, err
	}
	golden, err := loadExactGolden(filepath.Join(in.Task.TestsDir(), filepath.FromSlash(goldenRel)))
	if err != nil {
		return Verdict{}, infraf("task %s: %v", in.Task.ID, err)
	}

	sc, ws, err := newAgentWorld(in, "exact")
	if err != nil {
		return Verdict{}, err
	}
	defer sc.Close()
	nonce, err := newNonce()
	if err != nil {
		return Verdict{}, err
	}
	spec := agentSpec(ws, verifierTimeout(in), Python, "-c", exactCallScript, mod, fn)
	spec.Stdin = strings.NewReader(nonce + "\n")
	res, err := r.Run(ctx, spec)
	if err != nil {
		return Verdict{}, fmt.Errorf("%w: running python: %w", ErrInfra, err)
	}
	var er exactResult
	found, err := readResult(res.Stdout, nonce, &er)
	if err != nil {
		return Verdict{}, infraf("kind exact: %v", err)
	}
	reasons, why := judgeExact(call, golden, er, found, res)
	if len(res.Network) > 0 {
		// The runner's network is closed: the call failed to reach it, and
		// may have answered anyway; the instruction forbids the attempt.
		reasons = append(reasons, Reason{Code: CodeCallNetwork, Message: fmt.Sprintf("%s() tried to use the network when called (%d attempt(s))", call, len(res.Network))})
		why += "; network: " + shortList(res.Network, 5)
	}
	v := verdictOf("", reasons, fmt.Sprintf("%s() returned %s (%s); %s; stderr: %s", call, er.Repr, er.Type, why, tail(res.Stderr, 1000)))
	if len(v.Reasons) == 0 {
		v.Reward, v.Pass = 1, true
	}
	return v, nil
}

func loadExactGolden(path string) (exactGolden, error) {
	var g exactGolden
	md, err := toml.DecodeFile(path, &g)
	if errors.Is(err, fs.ErrNotExist) {
		return g, fmt.Errorf("golden %s does not exist", path)
	}
	if err != nil {
		return g, fmt.Errorf("golden %s: %w", path, err)
	}
	if !md.IsDefined("value") {
		return g, fmt.Errorf("golden %s has no value", path)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return g, fmt.Errorf("golden %s: unknown key %s", path, und[0])
	}
	return g, nil
}

// judgeExact turns the call's result into reasons; none means it passed.
// Messages never carry the golden, the near misses the golden file
// names, the call's output or its exception text (which the agent's code
// chooses): those go to the detail it returns, for the operator.
func judgeExact(call string, golden exactGolden, er exactResult, found bool, res RunResult) ([]Reason, string) {
	switch {
	case res.TimedOut:
		return []Reason{{Code: CodeCallError, Message: fmt.Sprintf("%s() did not return within the time limit (%s)", call, res.Wall.Round(time.Millisecond))}}, ""
	case !found:
		return []Reason{{Code: CodeCallError, Message: fmt.Sprintf("the call of %s() did not finish: exit %d", call, res.ExitCode)}}, ""
	case er.Stage == "import":
		return []Reason{{Code: CodeImportError, Message: fmt.Sprintf("importing %s failed%s", strings.Split(call, ":")[0], errorClass(er.Error))}}, er.Error
	case er.Stage == "call":
		return []Reason{{Code: CodeCallError, Message: fmt.Sprintf("calling %s() failed%s", call, errorClass(er.Error))}}, er.Error
	case er.Value == "":
		return []Reason{{Code: CodeWrongType, Message: fmt.Sprintf("%s() returned a %s: want an int", call, safeName(er.Type))}}, ""
	}
	got, ok := new(big.Int).SetString(er.Value, 10)
	if !ok {
		return []Reason{{Code: CodeWrongType, Message: fmt.Sprintf("%s() returned something that is not a decimal integer", call)}}, ""
	}
	want := big.NewInt(golden.Value)
	if got.Cmp(want) == 0 {
		return nil, ""
	}
	return []Reason{{Code: CodeWrongValue, Message: fmt.Sprintf("%s() returned an int that is not the golden value", call)}},
		fmt.Sprintf("returned %s, want %s: %s", got, want, describeMiss(got, want, golden.NearMisses))
}

var pyNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]{0,79}$`)

// safeName is a Python type name, or "value of another type" when it
// is not one (a type's name is the agent's code's to choose).
func safeName(s string) string {
	if pyNameRE.MatchString(s) {
		return s
	}
	return "value of another type"
}

// errorClass is ": ExcType" of a Python "ExcType: text" error line, or
// "" when it does not start with a name.
func errorClass(e string) string {
	cls, _, _ := strings.Cut(e, ":")
	if !pyNameRE.MatchString(strings.TrimSpace(cls)) {
		return ""
	}
	return ": " + strings.TrimSpace(cls)
}

// describeMiss says what a wrong value looks like: a named near miss,
// the golden off by a power of ten, or simply another number.
func describeMiss(got, want *big.Int, near map[string]int64) string {
	names := make([]string, 0, len(near))
	for name := range near {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if got.Cmp(big.NewInt(near[name])) == 0 {
			return "it is " + name
		}
	}
	ten := big.NewInt(10)
	p := big.NewInt(1)
	for k := 1; k <= 30; k++ {
		p.Mul(p, ten)
		if new(big.Int).Mul(want, p).Cmp(got) == 0 {
			return fmt.Sprintf("it is the golden times 10^%d: a scale error", k)
		}
		if roundDiv(want, p).Cmp(got) == 0 && got.Sign() != 0 {
			return fmt.Sprintf("it is the golden divided by 10^%d: a scale error", k)
		}
		if roundDiv(got, p).Cmp(want) == 0 {
			return fmt.Sprintf("it rounds to the golden at 10^%d times the scale: a scale error", k)
		}
	}
	return "another value (not a known edition, not a power-of-ten scale error)"
}

// roundDiv is a/b rounded to the nearest integer, halves away from zero.
func roundDiv(a, b *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(a, b, new(big.Int))
	twice := new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2))
	if twice.Cmp(new(big.Int).Abs(b)) >= 0 {
		if a.Sign()*b.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}
