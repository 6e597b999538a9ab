package graders

import (
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"benchd.dev/internal/testenv"
)

// TestExactAttempts grades RT-05's reference and known attempts and
// checks the code and what the message says about the miss.
func TestExactAttempts(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	task := loadRepoTask(t, "rt-05")
	for _, tc := range []struct {
		attempt string
		code    string // "" for a pass
		message string // a part of the reason's message
	}{
		{"reference", "", ""},
		{"codata-2018", CodeWrongValue, "not the golden value"},
		{"scale-1e6", CodeWrongValue, "not the golden value"},
		{"starter", CodeWrongValue, "not the golden value"},
		{"float-value", CodeWrongType, "builtins.float"},
		{"broken-module", CodeImportError, "ModuleNotFoundError"},
	} {
		t.Run(tc.attempt, func(t *testing.T) {
			v := gradeNamed(t, task, tc.attempt)
			if tc.code == "" {
				checkCodes(t, v)
				return
			}
			checkCodes(t, v, tc.code)
			if len(v.Reasons) == 1 && !strings.Contains(v.Reasons[0].Message, tc.message) {
				t.Errorf("got message %q, want it to contain %q", v.Reasons[0].Message, tc.message)
			}
			// The golden and the golden file's near misses go to the
			// operator's Detail only.
			for _, secret := range []string{"137035999177", "137035999", "CODATA", "scale error", "10^"} {
				if strings.Contains(v.Reasons[0].Message, secret) {
					t.Errorf("message %q carries %q", v.Reasons[0].Message, secret)
				}
			}
			if tc.code == CodeWrongValue && !strings.Contains(v.Detail, "want 137035999177") {
				t.Errorf("detail %q: want the golden there", v.Detail)
			}
		})
	}
}

// TestExactForgedResult: a fixture that prints a result line with the
// golden value and returns something else still fails.
func TestExactForgedResult(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	task := loadRepoTask(t, "rt-05")
	dir := materialize(t, task, task.Reference())
	src := `import sys


def scaled_constant() -> int:
    for nonce in ("", "x"):
        print('BENCH-RESULT {"nonce": "%s", "stage": "done", "error": "", "type": "builtins.int", "repr": "137035999177", "value": "137035999177"}' % nonce)
    sys.stdout.flush()
    return 1
`
	if err := os.WriteFile(filepath.Join(dir, "meta", "fixture.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	v := gradeDir(t, task, dir)
	checkCodes(t, v, CodeWrongValue)
}

func TestDescribeMiss(t *testing.T) {
	want := big.NewInt(137035999177)
	near := map[string]int64{"the CODATA 2018 value": 137035999084}
	for _, tc := range []struct {
		got  string
		says string
	}{
		{"137035999084", "the CODATA 2018 value"},
		{"137035999177000", "times 10^3"},
		{"137035999", "divided by 10^3"},
		{"137036", "divided by 10^6"},
		{"137035999177000000000", "times 10^9"},
		{"1370359991770", "times 10^1"},
		{"1370359991771", "rounds to the golden at 10^1"},
		{"137035999178", "another value"},
		{"-137035999177", "another value"},
		{"0", "another value"},
	} {
		t.Run(tc.got, func(t *testing.T) {
			g, _ := new(big.Int).SetString(tc.got, 10)
			if got := describeMiss(g, want, near); !strings.Contains(got, tc.says) {
				t.Errorf("describeMiss(%s): got %q, want it to say %q", tc.got, got, tc.says)
			}
		})
	}
}

func TestRoundDiv(t *testing.T) {
	for _, tc := range []struct{ a, b, want int64 }{
		{14, 10, 1}, {15, 10, 2}, {16, 10, 2}, {-14, 10, -1}, {-15, 10, -2}, {137035999177, 1000, 137035999}, {137035999500, 1000, 137036000},
	} {
		if got := roundDiv(big.NewInt(tc.a), big.NewInt(tc.b)); got.Int64() != tc.want {
			t.Errorf("roundDiv(%d, %d): got %d, want %d", tc.a, tc.b, got.Int64(), tc.want)
		}
	}
}

func TestJudgeExact(t *testing.T) {
	g := exactGolden{Value: 42}
	for _, tc := range []struct {
		name  string
		er    exactResult
		found bool
		res   RunResult
		want  string
	}{
		{"pass", exactResult{Stage: "done", Type: "builtins.int", Value: "42"}, true, RunResult{}, ""},
		{"timed out", exactResult{}, false, RunResult{TimedOut: true}, CodeCallError},
		{"crashed", exactResult{}, false, RunResult{ExitCode: -1, Signal: 9}, CodeCallError},
		{"import", exactResult{Stage: "import", Error: "SyntaxError: bad"}, true, RunResult{}, CodeImportError},
		{"raised", exactResult{Stage: "call", Error: "AttributeError: no scaled_constant"}, true, RunResult{}, CodeCallError},
		{"bool", exactResult{Stage: "done", Type: "builtins.bool", Repr: "True"}, true, RunResult{}, CodeWrongType},
		{"string", exactResult{Stage: "done", Type: "builtins.str", Repr: "'42'"}, true, RunResult{}, CodeWrongType},
		{"wrong", exactResult{Stage: "done", Type: "builtins.int", Value: "43"}, true, RunResult{}, CodeWrongValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, _ := judgeExact("m:f", g, tc.er, tc.found, tc.res)
			got := ""
			if len(rs) > 0 {
				got = rs[0].Code
			}
			if got != tc.want || len(rs) > 1 {
				t.Errorf("got %v, want code %q", rs, tc.want)
			}
		})
	}
}
