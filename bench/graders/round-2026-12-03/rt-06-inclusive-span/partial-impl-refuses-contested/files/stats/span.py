"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of xs[left..right], both endpoints included.

    Equal endpoints inside the list are deliberately unimplemented: plan.md
    rules 2 and 3 contradict there. See BLOCKED.md.
    """
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    if left == right:
        if left == len(xs):
            return 0.0
        raise NotImplementedError("rules 2 and 3 of plan.md contradict here; see BLOCKED.md")
    picked = xs[left:right + 1]
    return sum(picked) / len(picked)
