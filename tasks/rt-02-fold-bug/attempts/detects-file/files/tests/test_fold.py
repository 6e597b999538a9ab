"""Tests for impl.fold.fold_ws."""

import impl.fold
from impl.fold import fold_ws


def test_basic():
    assert fold_ws(" a \t b ") == "a b"


def test_no_private_table():
    # A correct folder relies on str.isspace(), not on a table.
    assert not hasattr(impl.fold, "_SPACES")
