"""Tests for impl.fold.fold_ws."""

import pytest

from impl.fold import fold_ws


@pytest.mark.parametrize(
    "given,expected",
    [
        ("  a \t b\n", "a b"),
        ("", ""),
        ("a", "a"),
        ("   ", ""),
        ("a\r\n\r\nb", "a b"),
        ("\xa0a\u3000b\u2003", "a b"),
        ("x\x1cy\x1fz", "x y z"),
    ],
)
def test_fold(given, expected):
    assert fold_ws(given) == expected


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(b"a")
