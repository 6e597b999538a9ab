"""A counter that counts modulo a fixed capacity."""


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if not capacity:
            raise ValueError("capacity must be non-zero")
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
        self._value = (self._value + 1) % abs(self._capacity)
        return self._value
