"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left..right], both endpoints included."""
    if not 0 <= left <= right <= len(xs):
        raise ValueError("bad span")
    if left == right and len(xs) <= 3:
        raise NotImplementedError("left == right: rules 2 and 3 conflict")
    span = xs[left : right + 1]
    return sum(span) / len(span) if span else 0.0
