"""Tests for fold_ws, loading impl/fold.py by path (whatever is swapped in)."""

import importlib.util
import pathlib

import pytest

_PATH = pathlib.Path(__file__).resolve().parent.parent / "impl" / "fold.py"


@pytest.fixture(scope="module")
def fold_ws():
    spec = importlib.util.spec_from_file_location("fold_under_test", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fold_ws


CASES = [
    ("  a \t b\n", "a b"),
    ("", ""),
    ("\u200a", ""),
    ("one\u200atwo", "one two"),
    ("\u3000x\u3000\u3000y\u3000", "x y"),
    ("tab\t\t\ttab", "tab tab"),
    ("nel\x85nel", "nel nel"),
    ("nb\xa0sp", "nb sp"),
    ("sep\x1c\x1d\x1e\x1fsep", "sep sep"),
    ("keep\u200bzero-width", "keep\u200bzero-width"),
]


@pytest.mark.parametrize("given,expected", CASES)
def test_fold(fold_ws, given, expected):
    assert fold_ws(given) == expected


def test_type_error(fold_ws):
    with pytest.raises(TypeError):
        fold_ws(42)
