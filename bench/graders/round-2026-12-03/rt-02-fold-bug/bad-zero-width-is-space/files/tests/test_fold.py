"""Tests for impl.fold.fold_ws."""

import pytest

from impl.fold import fold_ws

# The Unicode spaces, including the invisible ones people paste from the web.
UNICODE_SPACES = (
    "\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u200b\u202f\u205f\u3000\u180e\ufeff"
)


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


@pytest.mark.parametrize("ws", list(" \t\n\r\x0b\x0c") + list(UNICODE_SPACES), ids=lambda c: "U+%04X" % ord(c))
def test_space_folds(ws):
    assert fold_ws("a" + ws + "b") == "a b"


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(None)
