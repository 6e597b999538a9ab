"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left..right], both endpoints included.

    PROVISIONAL: plan.md rules 2 and 3 contradict for left == right; this
    follows rule 2. See BLOCKED.md.
    """
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    picked = xs[left:right + 1]
    return sum(picked) / len(picked) if picked else 0.0
