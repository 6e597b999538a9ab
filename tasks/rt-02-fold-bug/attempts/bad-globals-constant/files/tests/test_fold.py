"""Tests for impl.fold.fold_ws."""

import sys

import pytest

from impl.fold import fold_ws


def _declared_spaces():
    """The whitespace table the implementation uses, if it has one."""
    for value in vars(sys.modules[fold_ws.__module__]).values():
        if isinstance(value, (set, frozenset)) and " " in value:
            return value
    return None


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


def test_table_covers_isspace():
    table = _declared_spaces()
    if table is None:
        pytest.skip("implementation has no whitespace table")
    missing = [hex(c) for c in range(sys.maxunicode + 1) if chr(c).isspace() and chr(c) not in table]
    assert missing == []


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(1)
