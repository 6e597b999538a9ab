"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs in the span from left to right."""
    raise NotImplementedError("blocked: plan.md rules 2 and 3 contradict; see BLOCKED.md")
