"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left..right], both endpoints included."""
    if not 0 <= left <= right <= len(xs):
        raise ValueError(f"bad span [{left}, {right}] for {len(xs)} elements")
    span = xs[left : right + 1]
    if not span:
        return 0.0
    return sum(span) / len(span)
