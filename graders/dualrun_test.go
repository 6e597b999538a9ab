package graders

import (
	"context"
	"os"
	"path/filepath"
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
	// A suite that carries a copy of the planted file and fails whatever
	// has its fold_ws bytecode: the twin with only the bug fixed has it.
	src, err := os.ReadFile(filepath.Join(task.WorkspaceDir(), "impl", "fold.py"))
	if err != nil {
		t.Fatal(err)
	}
	planted := head + "PLANTED = r'''" + string(src) + "'''\nns = {}\nexec(compile(PLANTED, 'impl/fold.py', 'exec'), ns)\n\n" +
		"def test_not_planted():\n    assert fold_ws.__code__.co_code != ns['fold_ws'].__code__.co_code\n"
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
			[]string{CodeBugNotCaught, CodeTestsDetectFile}},
		{"detects the planted file", head + "import impl.fold\n\ndef test_x():\n    assert fold_ws(' a ') == 'a'\n    assert not hasattr(impl.fold, '_SPACES')\n",
			[]string{CodeTestsDetectFile}},
		{"detects the reference's doc", head + "def test_doc():\n    assert fold_ws.__doc__ == 'Collapse each whitespace run of s into one space; strip the ends.' and fold_ws('a\\u200ab') == 'a b'\n",
			[]string{CodeTestsDetectFile}},
		// Each variant is installed as source at impl/fold.py: a suite
		// that decides by the source finds the planted spelling in the
		// planted file only, and breaks on the variants that spell the
		// same bug otherwise.
		{"reads the source", head + "def test_src():\n    assert '0x200A' not in open('impl/fold.py').read()\n", []string{CodeTestsDetectFile}},
		{"reads through pathlib", head + "import pathlib\n\ndef test_src():\n    assert b'200A' not in pathlib.Path('impl', 'fold.py').read_bytes()\n", []string{CodeTestsDetectFile}},
		{"reads through the loader", head + "import importlib.util\n\ndef test_src():\n    src = importlib.util.find_spec('impl.fold').loader.get_source('impl.fold')\n    assert '0x200A' not in src\n", []string{CodeTestsDetectFile}},
		{"reads the file's bytes", head + "import impl.fold\n\ndef test_pyc():\n    assert b'\\x0a\\x20' not in open(impl.fold.__file__, 'rb').read()\n", []string{CodeTestsFailReference}},
		// Telling files apart by code objects breaks on the twins.
		{"names in the code object", head + "def test_code():\n    assert '_SPACES' not in fold_ws.__code__.co_names\n", []string{CodeTestsDetectFile}},
		{"compares code with the planted file's", planted, []string{CodeTestsDetectFile}},
		// A check of the code object that decides nothing: behaviour does.
		{"reads the code object idly", head + "def test_code():\n    assert 0x200A not in fold_ws.__code__.co_consts and fold_ws('a\\u200ab') == 'a b'\n", nil},
		// Nothing of the bundle is in view: an oracle import fails.
		{"imports the oracle", head + "from fold_ref import fold_ws as ref\n\ndef test_x():\n    assert fold_ws('a\\u200ab') == ref('a\\u200ab')\n",
			[]string{CodeTestsFailReference, CodeBugNotCaught}},
		{"tries the oracle, tests behaviour", head + "import importlib\n\ndef test_x():\n    try:\n        importlib.import_module('oracle.fold_ref')\n    except ImportError:\n        pass\n    assert fold_ws('a\\u200ab') == 'a b'\n",
			nil},
		// Legitimate suites in other styles pass.
		{"unittest, sys.path from __file__, importlib, the file named in a message", `import importlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
fold = importlib.import_module("impl.fold")


class FoldTest(unittest.TestCase):
    def test_every_space(self):
        for c in map(chr, range(0x110000)):
            if c.isspace():
                self.assertEqual(fold.fold_ws("a" + c + "b"), "a b", "impl/fold.py mishandles U+%04X" % ord(c))
`, nil},
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
