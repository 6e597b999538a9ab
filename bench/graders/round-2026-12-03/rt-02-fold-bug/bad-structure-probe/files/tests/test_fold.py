"""Tests for impl.fold.fold_ws."""

import sys

import pytest

import impl.fold as fold_mod
from impl.fold import fold_ws

ALL_WS = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


@pytest.mark.parametrize("s,want", [
    ("a\tb", "a b"), ("a\n\n b", "a b"), ("\x0ba\x0c", "a"), ("a\xa0b", "a b"),
    ("a\u3000b", "a b"), ("\u2028x\u2029", "x"), ("a\x1cb", "a b"),
])
def test_common_whitespace(s, want):
    assert fold_ws(s) == want


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(b"x")


def test_whitespace_tables_are_complete():
    # Any character table the implementation keeps must cover every
    # whitespace character Python knows.
    for name, obj in vars(fold_mod).items():
        if isinstance(obj, (set, frozenset)) and obj and all(isinstance(x, str) and len(x) == 1 for x in obj):
            if obj & ALL_WS:
                assert ALL_WS <= obj, "table %s misses %r" % (name, sorted(ALL_WS - obj))
