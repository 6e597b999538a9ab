"""Tests for impl.fold.fold_ws."""

import unicodedata

import pytest

from impl.fold import fold_ws

NAMED = ["NO-BREAK SPACE", "OGHAM SPACE MARK", "EN QUAD", "EM QUAD", "EN SPACE",
         "EM SPACE", "THREE-PER-EM SPACE", "FOUR-PER-EM SPACE", "SIX-PER-EM SPACE",
         "FIGURE SPACE", "PUNCTUATION SPACE", "THIN SPACE", "HAIR SPACE",
         "LINE SEPARATOR", "PARAGRAPH SEPARATOR", "NARROW NO-BREAK SPACE",
         "MEDIUM MATHEMATICAL SPACE", "IDEOGRAPHIC SPACE"]


@pytest.mark.parametrize("name", NAMED)
def test_named_space(name):
    w = unicodedata.lookup(name)
    assert fold_ws(w + "x" + w + " " + w + "y" + w) == "x y"


def test_plain():
    assert fold_ws(" a\tb ") == "a b"
