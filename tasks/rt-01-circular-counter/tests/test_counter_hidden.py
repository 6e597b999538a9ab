"""Hidden tests for RT-01: full cycles, capacity 1, large capacity."""

import pytest

from src.counter import CircularCounter


@pytest.mark.parametrize("capacity", [2, 3, 7, 10])
def test_wraps_after_full_cycles(capacity):
    c = CircularCounter(capacity)
    got = [c.inc() for _ in range(capacity * 5)]
    want = [(i + 1) % capacity for i in range(capacity * 5)]
    assert got == want
    assert c.value == 0


def test_capacity_one_stays_at_zero():
    c = CircularCounter(1)
    assert [c.inc() for _ in range(5)] == [0, 0, 0, 0, 0]
    assert c.value == 0


@pytest.mark.parametrize("capacity", [1000, 65536, 250_007])
def test_large_capacity(capacity):
    c = CircularCounter(capacity)
    last = None
    for _ in range(capacity - 1):
        last = c.inc()
    assert last == capacity - 1
    assert c.inc() == 0
    assert c.inc() == 1
    assert c.value == 1


@pytest.mark.parametrize("capacity", [0, -1])
def test_rejects_small_capacity(capacity):
    with pytest.raises(ValueError):
        CircularCounter(capacity)


def test_value_is_read_only():
    c = CircularCounter(3)
    with pytest.raises(AttributeError):
        c.value = 2
