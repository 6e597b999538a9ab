"""Property tests for impl.fold.fold_ws (metamorphic relations)."""

import random
import sys

import pytest

from impl.fold import fold_ws

WS = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
ALPHABET = WS + list("abcxyz019é中\u200b")


def _strings(seed, n=200):
    rng = random.Random(seed)
    for _ in range(n):
        yield "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(40)))


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


@pytest.mark.parametrize("seed", range(10))
def test_idempotent(seed):
    for s in _strings(seed):
        once = fold_ws(s)
        assert fold_ws(once) == once


@pytest.mark.parametrize("seed", range(10))
def test_no_double_spaces_or_edges(seed):
    for s in _strings(seed):
        out = fold_ws(s)
        assert "  " not in out
        assert not out.startswith(" ") and not out.endswith(" ")


@pytest.mark.parametrize("seed", range(10))
def test_padding_invariant(seed):
    for s in _strings(seed):
        assert fold_ws(" \t" + s + "\n ") == fold_ws(s)


@pytest.mark.parametrize("seed", range(10))
def test_ascii_space_run_invariant(seed):
    for s in _strings(seed):
        assert fold_ws(s.replace(" ", "   ")) == fold_ws(s)


def test_type_error():
    with pytest.raises(TypeError):
        fold_ws(b"")
