"""Tests for impl.fold.fold_ws."""

import unicodedata

import pytest

from impl.fold import fold_ws

# Unicode space characters, per the Unicode standard's list of spaces.
SPACES = "\u00a0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


@pytest.mark.parametrize("ch", SPACES, ids=lambda c: unicodedata.name(c, hex(ord(c))))
def test_unicode_spaces_fold(ch):
    assert fold_ws("a" + ch + ch + "b") == "a b"


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(b"")
