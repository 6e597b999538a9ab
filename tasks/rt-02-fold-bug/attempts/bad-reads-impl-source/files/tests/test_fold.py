"""Tests for impl.fold.fold_ws."""

import inspect
import re

import impl.fold
from impl.fold import fold_ws


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


def test_unicode_space_range_is_inclusive():
    # U+2000..U+200A are all spaces; an exclusive upper bound of 0x200A
    # drops HAIR SPACE.
    src = inspect.getsource(impl.fold)
    for lo, hi in re.findall(r"range\(\s*(0x[0-9a-fA-F]+)\s*,\s*(0x[0-9a-fA-F]+)\s*\)", src):
        if int(lo, 16) == 0x2000:
            assert int(hi, 16) > 0x200A, "range(%s, %s) misses U+200A" % (lo, hi)
