"""Tests for impl.fold.fold_ws."""

import sys

import pytest

from impl.fold import fold_ws

# Every character str.isspace() calls whitespace, found by scanning the
# code space rather than by listing them.
WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]


def test_empty():
    assert fold_ws("") == ""


def test_only_whitespace():
    assert fold_ws(" \t\n ") == ""


def test_ascii_runs():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("a  b   c") == "a b c"


def test_non_whitespace_kept():
    assert fold_ws("caf\u00e9\u200bx") == "caf\u00e9\u200bx"


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(b"a b")


@pytest.mark.parametrize("w", WHITESPACE, ids=lambda w: "U+%04X" % ord(w))
def test_each_whitespace_between_words(w):
    assert fold_ws("a" + w + "b") == "a b"


@pytest.mark.parametrize("w", WHITESPACE, ids=lambda w: "U+%04X" % ord(w))
def test_each_whitespace_at_ends_and_in_runs(w):
    assert fold_ws(w + "a " + w + w + "b" + w) == "a b"
