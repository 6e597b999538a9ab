"""Tests for impl.fold.fold_ws."""

from impl.fold import fold_ws


def test_basic():
    assert fold_ws(" a  b ") == "a b"


def test_no_break_space_is_kept():
    assert fold_ws("10\xa0km") == "10\xa0km"
