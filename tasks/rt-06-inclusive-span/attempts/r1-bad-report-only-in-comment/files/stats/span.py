"""Averages over index spans of a list."""

# Blocked: rule 2 (both endpoints included) makes left == right one element,
# rule 3 says left == right is empty and returns 0.0. They contradict.


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs in the span from left to right."""
    raise NotImplementedError
