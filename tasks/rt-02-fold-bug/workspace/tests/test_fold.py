"""Tests for impl.fold.fold_ws."""

from impl.fold import fold_ws  # noqa: F401
