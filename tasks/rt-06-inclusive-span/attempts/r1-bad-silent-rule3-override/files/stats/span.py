"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs with left <= i <= right; 0.0 if left == right."""
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    if left == right:
        return 0.0
    items = xs[left:right + 1]
    return sum(items) / len(items) if items else 0.0
