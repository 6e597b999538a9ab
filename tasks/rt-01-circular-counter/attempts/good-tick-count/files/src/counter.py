"""A counter that counts modulo a fixed capacity.

Implementation note: instead of storing the wrapped value we store how
many times ``inc`` has been called and derive the value on demand.
Python ints are unbounded, so this never overflows.
"""


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._ticks = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def value(self) -> int:
        return self._ticks % self._capacity

    def inc(self) -> int:
        """Advance by one and return the new value."""
        # Keep the tick count bounded: reduce once it reaches capacity.
        self._ticks = (self._ticks + 1) % self._capacity
        return self.value
