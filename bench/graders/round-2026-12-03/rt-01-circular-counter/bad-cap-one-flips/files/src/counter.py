"""A counter that counts modulo a fixed capacity."""


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._value = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def value(self) -> int:
        return self._value

    def inc(self) -> int:
        """Advance by one and return the new value."""
        nxt = self._value + 1
        # wrap once we have counted past the last slot
        if nxt >= self._capacity and self._value:
            nxt = 0
        self._value = nxt
        return self._value
