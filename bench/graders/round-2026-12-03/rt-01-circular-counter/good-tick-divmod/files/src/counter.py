"""A counter that counts modulo a fixed capacity."""

import operator


class _Validated(type):
    """Metaclass: validates the capacity before the instance exists."""

    def __call__(cls, capacity, *args, **kwargs):
        if not isinstance(capacity, int) or isinstance(capacity, bool):
            raise TypeError("capacity must be an int")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        return super().__call__(operator.index(capacity), *args, **kwargs)


class CircularCounter(metaclass=_Validated):
    """Counts 0, 1, ..., capacity - 1, then starts again at 0.

    Only the number of ``inc()`` calls is stored; the value is that number
    reduced modulo the capacity, kept small by folding it back each time.
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._ticks = 0

    capacity = property(operator.attrgetter("_capacity"))

    @property
    def value(self) -> int:
        return divmod(self._ticks, self._capacity)[1]

    def inc(self) -> int:
        """Advance by one and return the new value."""
        self._ticks = (self._ticks + 1) % self._capacity
        return self.value
