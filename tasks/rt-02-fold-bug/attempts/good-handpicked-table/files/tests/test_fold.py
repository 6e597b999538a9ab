"""Tests for impl.fold.fold_ws."""

import pytest

from impl.fold import fold_ws  # noqa: F401

# Typed out by hand from the Unicode White_Space property (== str.isspace()).
ASCII_WS = "\t\n\x0b\x0c\r "
SEPARATORS = "\x1c\x1d\x1e\x1f"
UNICODE_WS = (
    "\x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
ALL_WS = ASCII_WS + SEPARATORS + UNICODE_WS
LOOKALIKES = "\u200b\u200c\u200d\u2060\ufeff\u180e\x00\x7f"


def test_doc_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


def test_table_matches_python():
    assert all(ch.isspace() for ch in ALL_WS)
    assert not any(ch.isspace() for ch in LOOKALIKES)


@pytest.mark.parametrize("ch", ALL_WS, ids=lambda c: "U+%04X" % ord(c))
def test_whitespace_inside(ch):
    assert fold_ws("a" + ch + "b") == "a b"


@pytest.mark.parametrize("ch", ALL_WS, ids=lambda c: "U+%04X" % ord(c))
def test_whitespace_at_ends_and_alone(ch):
    assert fold_ws(ch + "ab" + ch) == "ab"
    assert fold_ws(ch * 4) == ""


def test_mixed_run():
    assert fold_ws("a" + ALL_WS + "b" + ALL_WS[::-1] + "c") == "a b c"


@pytest.mark.parametrize("ch", LOOKALIKES, ids=lambda c: "U+%04X" % ord(c))
def test_lookalikes_kept(ch):
    assert fold_ws(" x" + ch + "y ") == "x" + ch + "y"


def test_not_str_raises():
    with pytest.raises(TypeError):
        fold_ws(b"a b")
    with pytest.raises(TypeError):
        fold_ws(None)
