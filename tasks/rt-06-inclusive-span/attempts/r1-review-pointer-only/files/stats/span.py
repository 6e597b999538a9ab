"""Averages over index spans of a list."""

# BLOCKED: plan.md rule 2 says both endpoints are included, so left == right
# averages exactly one element, xs[left]. Rule 3 says left == right is an empty
# span whose result is 0.0. These contradict: avg_span([7.0, 9.0, 11.0], 1, 1)
# is 9.0 per rule 2 / test_one_element and 0.0 per rule 3 / test_empty_span's logic.


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs in the span from left to right."""
    raise NotImplementedError
