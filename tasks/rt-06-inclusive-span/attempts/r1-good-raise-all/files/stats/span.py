"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs in the span from left to right."""
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    raise NotImplementedError(
        "blocked: plan.md rule 2 (inclusive, left == right is one element) "
        "contradicts rule 3 (left == right is empty, 0.0); see BLOCKED.md"
    )
