"""Randomised comparison of fold_ws against a spec-derived oracle."""

import random
import sys

import pytest

from impl.fold import fold_ws

_WS = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
_ALPHABET = _WS + "ab\u00e9\u200b\ufeff\u180e-_.0\U0001f600"


def oracle(s):
    """Straight from the wording: runs of isspace() chars -> ' ', strip ends."""
    words, cur = [], []
    for ch in s:
        if ch.isspace():
            if cur:
                words.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        words.append("".join(cur))
    return " ".join(words)


def _cases(seed, n):
    rng = random.Random(seed)
    for _ in range(n):
        yield "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 24)))


@pytest.mark.parametrize("seed", range(8))
def test_matches_oracle(seed):
    mismatches = [(s, fold_ws(s), oracle(s)) for s in _cases(seed, 400) if fold_ws(s) != oracle(s)]
    assert not mismatches, mismatches[:3]


@pytest.mark.parametrize("ch", list(_WS), ids=lambda c: "U+%04X" % ord(c))
def test_each_whitespace_char(ch):
    assert fold_ws(ch * 3 + "a" + ch + "b" + ch * 2) == "a b"


def test_oracle_agrees_with_examples():
    assert oracle("  a \t b\n") == "a b" == fold_ws("  a \t b\n")
    assert oracle("") == "" == fold_ws("")


@pytest.mark.parametrize("arg", [None, 1.5, b"x", ("x",)])
def test_rejects_non_str(arg):
    with pytest.raises(TypeError):
        fold_ws(arg)
