"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left..right]; equal bounds are empty (rule 3 over rule 2)."""
    if not 0 <= left <= right <= len(xs):
        raise ValueError("bad span")
    if left == right:
        return 0.0
    span = xs[left : right + 1]
    return sum(span) / len(span)
