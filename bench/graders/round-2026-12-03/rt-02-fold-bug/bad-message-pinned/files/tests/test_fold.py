"""Tests for impl.fold.fold_ws."""

import sys

import pytest

from impl.fold import fold_ws

WS = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


@pytest.mark.parametrize("ws", WS, ids=lambda c: "U+%04X" % ord(c))
def test_every_whitespace(ws):
    assert fold_ws(ws + "a" + ws + ws + "b" + ws) == "a b"


@pytest.mark.parametrize("bad", [b"a", None, 7])
def test_type_error(bad):
    with pytest.raises(TypeError, match=r"^fold_ws expects a str, got \w+$"):
        fold_ws(bad)
