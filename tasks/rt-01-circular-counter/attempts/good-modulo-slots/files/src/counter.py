"""A counter that counts modulo a fixed capacity."""

__all__ = ["CircularCounter"]


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    __slots__ = ("_capacity", "_value")

    def __init__(self, capacity: int) -> None:
        if type(capacity) is bool or not isinstance(capacity, int):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1, got %d" % capacity)
        self._capacity = int(capacity)
        self._value = 0

    capacity = property(lambda self: self._capacity, doc="The fixed modulus.")
    value = property(lambda self: self._value, doc="The current value.")

    def inc(self) -> int:
        """Advance by one and return the new value."""
        self._value = (self._value + 1) % self._capacity
        return self._value

    def __repr__(self) -> str:
        return "CircularCounter(%d, value=%d)" % (self._capacity, self._value)
