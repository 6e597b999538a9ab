"""A counter that counts modulo a fixed capacity."""

from __future__ import annotations

from typing import Iterator


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0.

    >>> c = CircularCounter(3)
    >>> [c.inc() for _ in range(4)]
    [1, 2, 0, 1]
    >>> CircularCounter(1).inc()
    0
    """

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._value = 0
        self._laps = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def value(self) -> int:
        return self._value

    @property
    def laps(self) -> int:
        """How many times the counter has wrapped back to 0."""
        return self._laps

    def inc(self) -> int:
        """Advance by one and return the new value."""
        carry, self._value = divmod(self._value + 1, self._capacity)
        self._laps += carry
        return self._value

    def __iter__(self) -> Iterator[int]:
        while True:
            yield self.inc()

    def __int__(self) -> int:
        return self._value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._capacity}) @ {self._value}"
