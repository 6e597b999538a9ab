package graders

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
	"benchd.dev/tasks"
)

const pytestManifest = `
[task]
id = "kind-pytest"
name = "pytest kind"
[verifier]
timeout_sec = 3
[bench.policy]
allow = ["mod.py"]
ignore = ["__pycache__/"]
[bench.grader]
kind = "pytest"
public = ["tests/test_pub.py"]
hidden = ["test_hid.py"]
[bench.grader.codes]
special = ["test_special*"]
`

// pytestBundle writes a small pytest bundle whose hidden test file is
// hidden, and returns it with a finished workspace whose mod.py is mod.
func pytestBundle(t *testing.T, hidden, mod string) (*tasks.Task, string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"task.toml":                   pytestManifest,
		"instruction.md":              "x\n",
		"workspace/mod.py":            "def f():\n    return 0\n",
		"workspace/tests/test_pub.py": "from mod import f\n\ndef test_pub():\n    assert f() == 1\n",
		"tests/test_hid.py":           hidden,
		"solution/files/mod.py":       "def f():\n    return 1\n",
	}
	for rel, c := range files {
		writeFile(t, dir, rel, c)
	}
	task, err := tasks.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if err := tasks.CopyTree(task.WorkspaceDir(), ws); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ws, "mod.py", mod)
	return task, ws
}

func TestPytestKind(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	good := "def f():\n    return 1\n"
	okHidden := "from mod import f\n\ndef test_hid():\n    assert f() == 1\n"
	tests := []struct {
		name       string
		hidden     string
		mod        string
		editPublic string // when set, the agent rewrote the public test
		wantCodes  []string
		wantMsg    string
	}{
		{name: "passes", hidden: okHidden, mod: good},
		{name: "public fails", hidden: okHidden, mod: "def f():\n    return 2\n", wantCodes: []string{CodeTestsFailed}, wantMsg: "test_pub.py::test_pub"},
		{name: "hidden fails", hidden: "from mod import f\n\ndef test_hid():\n    assert f() == 2\n", mod: good,
			wantCodes: []string{CodeTestsFailed}, wantMsg: "1 failed"},
		{name: "mapped code", hidden: okHidden + "\ndef test_special_rule():\n    assert False\n", mod: good,
			wantCodes: []string{"special"}, wantMsg: "1 failed"},
		{name: "mapped and plain", hidden: "def test_special_rule():\n    assert False\n\ndef test_other():\n    assert False\n", mod: good,
			wantCodes: []string{"special", CodeTestsFailed}, wantMsg: "1 failed"},
		{name: "forged failure id", hidden: okHidden,
			mod:       "def f():\n    print('\\nFAILED test_pub.py::test_pub_SECRET_from_hidden')\n    print('\\nFAILED test_hid.py::test_SECRET')\n    return 2\n",
			wantCodes: []string{CodeTestsFailed}, wantMsg: "test_pub.py::test_pub"},
		{name: "collection error", hidden: okHidden, mod: "def f(:\n", wantCodes: []string{CodeTestsFailed}, wantMsg: "stopped"},
		{name: "edited public test is not what runs", hidden: okHidden, mod: "def f():\n    return 2\n",
			editPublic: "def test_pub():\n    pass\n", wantCodes: []string{CodeTestsFailed}, wantMsg: "test_pub"},
		{name: "timeout", hidden: "import time\n\ndef test_slow():\n    time.sleep(30)\n", mod: good,
			wantCodes: []string{CodeGraderTimeout}, wantMsg: "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task, ws := pytestBundle(t, tt.hidden, tt.mod)
			if tt.editPublic != "" {
				writeFile(t, ws, "tests/test_pub.py", tt.editPublic)
			}
			in := Input{Task: task, Workspace: ws, Changeset: journal.Changeset{}, ScratchRoot: t.TempDir()}
			v, err := gradePytest(context.Background(), in, ExecRunner{})
			if err != nil {
				t.Fatalf("gradePytest: %v", err)
			}
			if got := v.Codes(); !reflect.DeepEqual(got, orEmpty(tt.wantCodes)) {
				t.Fatalf("got codes %v (%v), want %v\n%s", got, v.Reasons, orEmpty(tt.wantCodes), v.Detail)
			}
			wantPass := len(tt.wantCodes) == 0
			if v.Pass != wantPass || (v.Reward == 1) != wantPass {
				t.Errorf("got pass %v reward %d, want pass %v", v.Pass, v.Reward, wantPass)
			}
			var msgs []string
			for _, r := range v.Reasons {
				msgs = append(msgs, r.Message)
			}
			all := strings.Join(msgs, " | ")
			if tt.wantMsg != "" && !strings.Contains(all, tt.wantMsg) {
				t.Errorf("messages %q: want one containing %q", all, tt.wantMsg)
			}
			// Hidden tests' names and forged ids stay in Detail.
			for _, hidden := range []string{"test_hid", "test_special", "test_other", "test_slow", "SECRET"} {
				if strings.Contains(all, hidden) {
					t.Errorf("messages %q name %q, which is hidden", all, hidden)
				}
			}
			if tt.name == "hidden fails" && !strings.Contains(v.Detail, "test_hid.py::test_hid") {
				t.Errorf("detail %q: want the hidden test's id", v.Detail)
			}
		})
	}
}

func TestPytestKindBadParams(t *testing.T) {
	task, ws := pytestBundle(t, "def test_x():\n    pass\n", "def f():\n    return 1\n")
	tests := []struct {
		name   string
		params map[string]any
	}{
		{"no tests", map[string]any{}},
		{"public not strings", map[string]any{"public": []any{1}}},
		{"codes not a table", map[string]any{"hidden": "test_hid.py", "codes": "x"}},
		{"bad code", map[string]any{"hidden": "test_hid.py", "codes": map[string]any{"Bad Code": []any{"x"}}}},
		{"missing hidden file", map[string]any{"hidden": "nope.py"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			odd := *task
			odd.Grader = tasks.GraderSpec{Kind: "pytest", Params: tt.params}
			_, err := gradePytest(context.Background(), Input{Task: &odd, Workspace: ws, ScratchRoot: t.TempDir()}, ExecRunner{})
			if err == nil || !strings.Contains(err.Error(), ErrInfra.Error()) {
				t.Errorf("got error %v, want an infra error", err)
			}
		})
	}
}
