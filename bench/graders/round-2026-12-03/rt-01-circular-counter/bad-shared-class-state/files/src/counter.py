"""A counter that counts modulo a fixed capacity."""


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    _value = 0          # the running value (reset by each new counter)

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        type(self)._value = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def value(self) -> int:
        return type(self)._value

    def inc(self) -> int:
        """Advance by one and return the new value."""
        cls = type(self)
        cls._value = (cls._value + 1) % self._capacity
        return cls._value
