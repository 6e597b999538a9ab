"""Tests for impl.fold.fold_ws, parametrised through pytest_generate_tests."""

import itertools
import sys
import unicodedata

import pytest

from impl.fold import fold_ws

SPACES = tuple(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
# Non-whitespace chars from categories that look blank or are invisible.
LOOKALIKES = tuple(
    chr(c) for c in range(0x3400)
    if not chr(c).isspace() and unicodedata.category(chr(c)) in ("Cf", "Cc", "Zs", "Mn")
)


def pytest_generate_tests(metafunc):
    """Module-level hook: pytest calls it for every test in this file."""
    if "space" in metafunc.fixturenames:
        metafunc.parametrize("space", SPACES, ids=["U+%04X" % ord(c) for c in SPACES])
    if "pair" in metafunc.fixturenames:
        pairs = list(itertools.product(SPACES, repeat=2))
        metafunc.parametrize("pair", [pairs[i::8] for i in range(8)], ids=["chunk%d" % i for i in range(8)])
    if "other" in metafunc.fixturenames:
        metafunc.parametrize("other", LOOKALIKES, ids=["U+%04X" % ord(c) for c in LOOKALIKES])


def test_space_between_words(space):
    assert fold_ws("one" + space + "two") == "one two"


def test_space_at_edges(space):
    assert fold_ws(space + space + "w" + space) == "w"


def test_every_pair_of_spaces_is_one_run(pair):
    for a, b in pair:
        assert fold_ws("x" + a + b + "y") == "x y", (hex(ord(a)), hex(ord(b)))


def test_lookalikes_are_not_whitespace(other):
    assert fold_ws(" x" + other + "y ") == "x" + other + "y"


def test_documented_examples():
    assert fold_ws("  a \t b\n") == "a b"
    assert fold_ws("") == ""


@pytest.mark.parametrize("value", [b"  a ", None, 42, object()])
def test_type_error(value):
    with pytest.raises(TypeError):
        fold_ws(value)
