"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs with left <= i <= right."""
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    items = xs[left:right + 1]
    if not items:
        return 0.0
    return sum(items) / len(items)
