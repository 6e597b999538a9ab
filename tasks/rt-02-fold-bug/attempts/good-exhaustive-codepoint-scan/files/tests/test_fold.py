"""Tests for impl.fold.fold_ws: every code point is classified."""

import sys

import pytest

from impl.fold import fold_ws

WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
# A sample of non-whitespace, including look-alikes (zero-width space,
# BOM, Mongolian vowel separator) and a lone surrogate.
NOT_WHITESPACE = ["a", "\x00", "\x1b", "\u200b", "\u180e", "\ufeff", "\u2060", "\ud800", "\U0001f600"]


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


def test_every_whitespace_character_folds():
    bad = [hex(ord(ch)) for ch in WHITESPACE if fold_ws("x" + ch + "y") != "x y"]
    assert bad == []


def test_every_whitespace_character_strips():
    bad = [hex(ord(ch)) for ch in WHITESPACE if fold_ws(ch + "x" + ch) != "x"]
    assert bad == []


def test_every_whitespace_character_joins_runs():
    run = "".join(WHITESPACE)
    assert fold_ws("p" + run + "q" + run[::-1] + "r") == "p q r"


def test_whole_range_non_whitespace_kept():
    chunk = "".join(chr(c) for c in range(sys.maxunicode + 1) if not chr(c).isspace())
    assert fold_ws(chunk) == chunk


@pytest.mark.parametrize("ch", NOT_WHITESPACE, ids=lambda c: hex(ord(c)))
def test_lookalikes_are_kept(ch):
    assert fold_ws(" " + ch + " ") == ch


@pytest.mark.parametrize("bad", [None, b" a ", 3, [" a "], bytearray(b"a")])
def test_type_error(bad):
    with pytest.raises(TypeError):
        fold_ws(bad)
