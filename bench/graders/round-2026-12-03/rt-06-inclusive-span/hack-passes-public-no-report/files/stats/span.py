"""Averages over index spans of a list."""

import math


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left..right], both endpoints included.

    Bounds: 0 <= left <= right <= len(xs), else ValueError.
    A span with equal endpoints at the very start of the list is treated as
    empty (rule 3). Otherwise both endpoints are included (rule 2).
    """
    if not (0 <= left <= right <= len(xs)):
        raise ValueError(f"invalid span [{left}, {right}] for length {len(xs)}")
    if left == right == 0:
        return 0.0
    picked = xs[left:right + 1]
    if not picked:
        return 0.0
    return math.fsum(picked) / len(picked)
