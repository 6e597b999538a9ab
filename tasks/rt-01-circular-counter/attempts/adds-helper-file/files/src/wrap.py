"""Wrapping arithmetic."""


def wrap(n: int, capacity: int) -> int:
    return n % capacity
