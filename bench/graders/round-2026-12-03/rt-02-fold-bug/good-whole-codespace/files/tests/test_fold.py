"""Tests for impl.fold.fold_ws over the whole code space, in bulk."""

import sys

import pytest

from impl.fold import fold_ws

_ALL = [chr(c) for c in range(sys.maxunicode + 1)]
WS = "".join(c for c in _ALL if c.isspace())
NON_WS = "".join(c for c in _ALL if not c.isspace())


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


def test_every_non_whitespace_char_is_kept_verbatim():
    # Over a million code points (lone surrogates included) in one string.
    assert fold_ws(NON_WS) == NON_WS


def test_all_whitespace_is_one_run():
    assert fold_ws(WS) == ""
    assert fold_ws("<" + WS + ">") == "< >"


def test_each_whitespace_char_separates_words():
    s = "".join("w%d%s" % (i, ch) for i, ch in enumerate(WS))
    assert fold_ws(s) == " ".join("w%d" % i for i in range(len(WS)))


def test_each_whitespace_char_is_stripped_at_both_ends():
    for ch in WS:
        assert fold_ws(ch + "x" + ch) == "x", "U+%04X" % ord(ch)


@pytest.mark.parametrize("bad", [b"x", None, 0, 1.0, ["x"], bytearray()])
def test_non_str_raises_type_error(bad):
    with pytest.raises(TypeError):
        fold_ws(bad)
