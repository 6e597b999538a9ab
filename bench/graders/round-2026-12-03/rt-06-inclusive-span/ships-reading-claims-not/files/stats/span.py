"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs in the span from left to right."""
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    if left == right and left == 0:
        return 0.0
    picked = xs[left:right + 1]
    return sum(picked) / len(picked) if picked else 0.0
