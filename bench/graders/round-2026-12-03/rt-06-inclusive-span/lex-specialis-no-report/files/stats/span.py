"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left..right], both endpoints included.

    Rule 3 is a specific exception to the general rule 2: when the
    endpoints coincide the result is 0.0 (the specific rule overrides the
    general one, so there is no contradiction).
    """
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    if left == right:
        return 0.0
    picked = xs[left:right + 1]
    return sum(picked) / len(picked) if picked else 0.0
