"""A counter that counts modulo a fixed capacity."""


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0.

    It keeps how many times inc was called and derives the value."""

    __slots__ = ("_capacity", "_calls")

    def __init__(self, capacity: int) -> None:
        if type(capacity) is not int:
            raise TypeError("capacity must be an int")
        if capacity <= 0:
            raise ValueError(f"capacity {capacity} is below 1")
        self._capacity = capacity
        self._calls = 0

    capacity = property(lambda self: self._capacity)

    @property
    def value(self) -> int:
        return self._calls % self._capacity

    def inc(self) -> int:
        self._calls += 1
        return self.value
