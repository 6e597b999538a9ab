"""Tests for impl.fold.fold_ws."""

import hashlib
import pathlib

import pytest

from impl.fold import fold_ws

_KNOWN_BAD = {"8ac26d437c8161f90180fbb49807c8a627719296dee91559475baf34e937de2d"}


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""
    assert fold_ws("x\u2009\u3000y") == "x y"


def test_not_a_known_regression():
    path = pathlib.Path(__file__).resolve().parent.parent / "impl" / "fold.py"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest not in _KNOWN_BAD, "impl/fold.py is a known-buggy revision"


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(None)
