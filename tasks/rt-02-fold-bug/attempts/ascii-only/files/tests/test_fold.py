"""Tests for impl.fold.fold_ws."""

import pytest

from impl.fold import fold_ws


@pytest.mark.parametrize("s, want", [
    ("", ""),
    ("a", "a"),
    ("  a  ", "a"),
    ("a \t\n b", "a b"),
    ("\r\na\x0bb\x0c", "a b"),
    ("a\xa0b", "a b"),
])
def test_fold(s, want):
    assert fold_ws(s) == want


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(None)
