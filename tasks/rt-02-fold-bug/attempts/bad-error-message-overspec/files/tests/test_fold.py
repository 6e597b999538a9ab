"""Tests for impl.fold.fold_ws."""

import sys

import pytest

from impl.fold import fold_ws

WS = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


def test_every_whitespace_char():
    assert fold_ws("a" + WS + "b") == "a b"
    for ch in WS:
        assert fold_ws(ch + "x" + ch) == "x"


@pytest.mark.parametrize("bad,name", [(b"x", "bytes"), (None, "NoneType"), (3, "int")])
def test_type_error_message(bad, name):
    with pytest.raises(TypeError, match=r"^fold_ws expects a str, got %s$" % name):
        fold_ws(bad)
