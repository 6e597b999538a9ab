"""A counter that counts modulo a fixed capacity."""


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0.

    ``value`` is a plain attribute holding the current value.
    """

    __slots__ = ("value", "_limit")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._limit = capacity - 1
        self.value = 0

    def inc(self) -> int:
        """Advance by one and return the new value."""
        self.value = self.value + 1 if self.value < self._limit else 0
        return self.value
