"""Tests for impl.fold.fold_ws: an independent oracle plus seeded fuzzing."""

import random
import sys

import pytest

from impl.fold import fold_ws

# Every code point Python calls whitespace, computed, not hard-coded.
WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
# Near-misses: format characters and look-alikes that are NOT whitespace.
NOT_WHITESPACE = ["\u200b", "\u180e", "\u2060", "\ufeff", "\u00ad", "\u200c", "\u200d", "_", "\x00", "\x1b"]


def oracle(s):
    """Reference written from the spec, char by char (no str.split)."""
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


def test_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


@pytest.mark.parametrize("ws", WHITESPACE, ids=lambda c: "U+%04X" % ord(c))
def test_each_whitespace_char(ws):
    assert fold_ws("a" + ws + "b") == "a b"
    assert fold_ws(ws + "a" + ws) == "a"
    assert fold_ws(ws * 3) == ""
    assert fold_ws("x" + ws + " " + ws + "y") == "x y"


@pytest.mark.parametrize("ch", NOT_WHITESPACE, ids=lambda c: "U+%04X" % ord(c))
def test_non_whitespace_kept(ch):
    assert fold_ws("a" + ch + "b") == "a" + ch + "b"
    assert fold_ws(" " + ch + " ") == ch


@pytest.mark.parametrize("seed", range(40))
def test_fuzz_against_oracle(seed):
    rng = random.Random(seed)
    alphabet = WHITESPACE + NOT_WHITESPACE + list("abcXYZ09é中")
    for _ in range(50):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        assert fold_ws(s) == oracle(s), repr(s)


@pytest.mark.parametrize("bad", [b" a ", bytearray(b"a"), None, 3, ["a"], memoryview(b"a")])
def test_type_error(bad):
    with pytest.raises(TypeError):
        fold_ws(bad)
