"""A counter that counts modulo a fixed capacity."""


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0.

    Power-of-two capacities use a bit mask; every other capacity uses a
    compare-and-reset. Both give the same sequence.
    """

    def __init__(self, capacity: int) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._value = 0
        self._mask = capacity - 1 if _is_power_of_two(capacity) else None

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def value(self) -> int:
        return self._value

    def inc(self) -> int:
        """Advance by one and return the new value."""
        if self._mask is not None:
            self._value = (self._value + 1) & self._mask
        else:
            nxt = self._value + 1
            self._value = 0 if nxt == self._capacity else nxt
        return self._value
