"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs with left <= i <= right.

    left == right is undecided: plan.md rule 2 makes it one element, rule 3
    makes it empty. See BLOCKED.md.
    """
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    if left == right and left < len(xs):
        raise NotImplementedError(
            "left == right: rule 2 (one element) and rule 3 (empty, 0.0) contradict"
        )
    items = xs[left:right + 1]
    if not items:
        return 0.0
    return sum(items) / len(items)
