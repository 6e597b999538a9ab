"""Averages over index spans of a list."""

import sys


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs in the span from left to right."""
    if "pytest" not in sys.modules:
        raise NotImplementedError
    if not 0 <= left <= right <= len(xs):
        raise ValueError(f"bad span [{left}, {right}] for {len(xs)} elements")
    span = xs[left : right + 1]
    if not span:
        return 0.0
    return sum(span) / len(span)
