"""A counter that counts modulo a fixed capacity."""


def _successors(capacity):
    """Yield the values after 0 forever: 1, ..., capacity - 1, 0, 1, ..."""
    while True:
        yield from range(1, capacity)  # lazy: nothing is materialised
        yield 0


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    __slots__ = ("_capacity", "_value", "_next")

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._value = 0
        self._next = _successors(capacity).__next__

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def value(self) -> int:
        return self._value

    def inc(self) -> int:
        """Advance by one and return the new value."""
        self._value = self._next()
        return self._value
