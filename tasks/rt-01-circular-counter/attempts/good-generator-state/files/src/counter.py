"""A counter that counts modulo a fixed capacity."""

from itertools import count


def _ring(capacity):
    """Yield 1, 2, ..., capacity - 1, 0, 1, ... forever, lazily."""
    while True:
        for v in count(1):
            if v == capacity:
                yield 0
                break
            yield v


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._steps = _ring(capacity)
        self._value = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def value(self) -> int:
        return self._value

    def inc(self) -> int:
        """Advance by one and return the new value."""
        self._value = next(self._steps)
        return self._value
