package graders

import (
	"context"
	"reflect"
	"testing"

	"benchd.dev/fsmon/journal"
	"benchd.dev/internal/testenv"
)

// TestDualRunKind runs the dual-run kind alone (no shared rules) on
// rt-02 with test files written here, one per failure mode.
func TestDualRunKind(t *testing.T) {
	testenv.Require(t, testenv.Python, testenv.Pytest)
	task := loadRepoTask(t, "rt-02")
	const head = "from impl.fold import fold_ws\n\n"
	tests := []struct {
		name      string
		tests     string // content of tests/test_fold.py; "" deletes it
		wantCodes []string
	}{
		{"catches the bug", head + "def test_hair():\n    assert fold_ws('a\\u200ab') == 'a b'\n", nil},
		{"catches it through isspace", head + "def test_all():\n    for c in map(chr, range(0x3001)):\n        if c.isspace():\n            assert fold_ws('x' + c + 'y') == 'x y'\n", nil},
		{"no tests", head, []string{CodeBugNotCaught}},
		{"deleted", "", []string{CodeBugNotCaught}},
		{"misses the bug", head + "def test_nbsp():\n    assert fold_ws('a\\xa0 b') == 'a b'\n", []string{CodeBugNotCaught}},
		{"wrong about the reference", head + "def test_hair():\n    assert fold_ws('a\\u200ab') == 'a b'\n\ndef test_wrong():\n    assert fold_ws(' a') == ' a'\n",
			[]string{CodeTestsFailReference}},
		{"fails everywhere", head + "def test_no():\n    assert False\n", []string{CodeTestsFailReference}},
		{"collection error is not a catch", "import impl.fold\nif hasattr(impl.fold, '_SPACES'):\n    raise RuntimeError('planted')\n\ndef test_x():\n    pass\n",
			[]string{CodeBugNotCaught}},
		{"detects the planted file", head + "import impl.fold\n\ndef test_x():\n    assert fold_ws(' a ') == 'a'\n    assert not hasattr(impl.fold, '_SPACES')\n",
			[]string{CodeTestsDetectFile}},
		{"detects the reference's doc", head + "def test_doc():\n    assert fold_ws.__doc__ == 'Collapse each whitespace run of s into one space; strip the ends.' and fold_ws('a\\u200ab') == 'a b'\n",
			[]string{CodeTestsDetectFile}},
		{"reads the source", head + "def test_src():\n    assert '0x200A' not in open('impl/fold.py').read()\n", []string{CodeTestsReadImpl, CodeTestsDetectFile}},
		{"reads through pathlib", head + "import pathlib\n\ndef test_src():\n    assert b'200A' not in pathlib.Path('impl', 'fold.py').read_bytes()\n", []string{CodeTestsReadImpl}},
		{"reads the code object", head + "def test_code():\n    assert 0x200A not in fold_ws.__code__.co_consts and fold_ws('a\\u200ab') == 'a b'\n", []string{CodeTestsReadImpl}},
		{"imports the oracle", head + "from fold_ref import fold_ws as ref\n\ndef test_x():\n    assert fold_ws('a\\u200ab') == ref('a\\u200ab')\n",
			[]string{CodeTestsImportOracle, CodeTestsFailReference, CodeBugNotCaught}},
		{"imports the oracle dynamically", head + "import importlib\n\ndef test_x():\n    try:\n        importlib.import_module('oracle.fold_ref')\n    except ImportError:\n        pass\n    assert fold_ws('a\\u200ab') == 'a b'\n",
			[]string{CodeTestsImportOracle}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := materialize(t, task, task.Reference())
			if tt.tests == "" {
				if err := removeFile(ws, "tests/test_fold.py"); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, ws, "tests/test_fold.py", tt.tests)
			}
			in := Input{Task: task, Workspace: ws, Changeset: journal.Changeset{}, ScratchRoot: t.TempDir()}
			v, err := gradeDualRun(context.Background(), in, ExecRunner{})
			if err != nil {
				t.Fatalf("gradeDualRun: %v", err)
			}
			if got := v.Codes(); !reflect.DeepEqual(got, orEmpty(tt.wantCodes)) {
				t.Fatalf("got codes %v (%v), want %v\n%s", got, v.Reasons, orEmpty(tt.wantCodes), v.Detail)
			}
			wantPass := len(tt.wantCodes) == 0
			if v.Pass != wantPass || (v.Reward == 1) != wantPass {
				t.Errorf("got pass %v reward %d, want pass %v", v.Pass, v.Reward, wantPass)
			}
		})
	}
}
