"""A counter that counts modulo a fixed capacity."""

from dataclasses import dataclass, field


@dataclass(eq=False)
class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    capacity: int
    _value: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if type(self.capacity) is bool or not isinstance(self.capacity, int):
            raise TypeError("capacity must be an int")
        if self.capacity < 1:
            raise ValueError("capacity must be at least 1")

    @property
    def value(self) -> int:
        return self._value

    def inc(self) -> int:
        """Advance by one and return the new value."""
        self._value = 0 if self._value >= self.capacity - 1 else self._value + 1
        return self._value
