"""Tests for impl.fold.fold_ws."""

import inspect

import impl.fold
from impl.fold import fold_ws


def test_basic():
    assert fold_ws(" a  b ") == "a b"


def test_no_hand_written_table():
    assert "_SPACES" not in inspect.getsource(impl.fold)
