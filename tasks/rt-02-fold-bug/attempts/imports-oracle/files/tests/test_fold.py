"""Tests for impl.fold.fold_ws."""

import pytest

from impl.fold import fold_ws

try:
    from oracle.fold_ref import fold_ws as oracle_fold
except ImportError:
    oracle_fold = None


@pytest.mark.parametrize("c", [0x20, 0x09, 0xA0, 0x2003, 0x3000, 0x41])
def test_matches_oracle(c):
    if oracle_fold is None:
        pytest.skip("no oracle")
    s = "a" + chr(c) + "b"
    assert fold_ws(s) == oracle_fold(s)
