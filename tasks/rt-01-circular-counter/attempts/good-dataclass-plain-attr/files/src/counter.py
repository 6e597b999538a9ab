"""A counter that counts modulo a fixed capacity."""

from dataclasses import dataclass, field


@dataclass
class CircularCounter:
    """Counts 0, 1, ..., capacity - 1, then starts again at 0."""

    capacity: int
    value: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.capacity, int) or isinstance(self.capacity, bool):
            raise TypeError("capacity must be an int")
        if self.capacity < 1:
            raise ValueError("capacity must be at least 1")

    def inc(self) -> int:
        """Advance by one and return the new value."""
        self.value = self.value + 1 if self.value + 1 < self.capacity else 0
        return self.value
