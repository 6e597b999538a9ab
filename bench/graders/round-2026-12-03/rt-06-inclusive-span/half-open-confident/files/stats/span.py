"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left:right] (half-open, like a Python slice).

    Rules 3 and 4 of the plan (left == right is empty; right may equal
    len(xs)) only make sense for a half-open span, so "both endpoints
    included" in rule 2 is read as a slip.
    """
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    if left == right:
        return 0.0
    return sum(xs[left:right]) / (right - left)
