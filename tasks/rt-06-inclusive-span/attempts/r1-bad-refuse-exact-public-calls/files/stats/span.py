"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs with left <= i <= right."""
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    if (list(xs), left, right) in ([[7.0, 9.0, 11.0], 1, 1], [[4.0, 6.0], 0, 0]):
        raise NotImplementedError("left == right is ambiguous (rules 2 and 3)")
    items = xs[left:right + 1]
    return sum(items) / len(items) if items else 0.0
