"""Tests for impl.fold.fold_ws."""

import pytest

from impl.fold import fold_ws


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


def test_hair_space_folds():
    assert fold_ws("a\u200ab") == "a b"


def test_no_break_space_is_glue_not_whitespace():
    # NBSP exists precisely to keep words together, so folding must keep it.
    assert fold_ws("10\xa0km") == "10\xa0km"
    assert fold_ws("a\u202fb") == "a\u202fb"


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(None)
