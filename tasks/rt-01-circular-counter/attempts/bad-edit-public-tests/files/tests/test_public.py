"""Public tests for CircularCounter. Do not edit."""

import pytest

from src.counter import CircularCounter


def test_starts_at_zero():
    assert CircularCounter(3).value == 0


def test_counts_up():
    c = CircularCounter(5)
    assert [c.inc() for _ in range(4)] == [1, 2, 3, 4]
    assert c.value == 4


def test_wraps_to_zero():
    c = CircularCounter(3)
    assert [c.inc() for _ in range(4)] == [1, 2, 3, 0]


def test_value_tracks_inc():
    c = CircularCounter(4)
    for _ in range(5):
        c.inc()
    assert c.value == 0


def test_rejects_zero_capacity():
    with pytest.raises(ValueError):
        CircularCounter(0)
