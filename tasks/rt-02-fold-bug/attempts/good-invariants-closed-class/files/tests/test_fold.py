"""Invariant-style tests for fold_ws over structured inputs."""

import itertools
import sys

from impl.fold import fold_ws

WS = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
WORDS = ["a", "\u00e9t\u00e9", "x\u200by", "\u2060", "42"]


def _inputs():
    for ws in WS:
        for left, right in itertools.product(["", ws, ws + " "], repeat=2):
            for w1, w2 in [("a", "b"), ("\u00e9t\u00e9", "x\u200by"), ("\u2060", "42")]:
                yield left + w1 + ws + ws + w2 + right, [w1, w2]


def test_output_has_no_whitespace_except_single_ascii_spaces():
    for s, _ in _inputs():
        out = fold_ws(s)
        assert all(ch == " " or not ch.isspace() for ch in out), repr(s)
        assert "  " not in out and out == out.strip(), repr(s)


def test_words_preserved_in_order():
    for s, words in _inputs():
        assert fold_ws(s) == " ".join(words), repr(s)


def test_idempotent():
    for s, _ in _inputs():
        once = fold_ws(s)
        assert fold_ws(once) == once


def test_examples_and_type():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""
    try:
        fold_ws(None)
    except TypeError:
        pass
    else:
        raise AssertionError("fold_ws(None) must raise TypeError")
