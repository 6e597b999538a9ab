"""Tests for impl.fold.fold_ws."""

from impl.fold import fold_ws


def test_basic():
    assert fold_ws(" a  b ") == "a b"


def test_range_covers_all_spaces():
    with open("impl/fold.py", encoding="utf-8") as f:
        src = f.read()
    assert "range(0x2000, 0x200A)" not in src
