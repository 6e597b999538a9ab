"""Averages over index spans of a list."""

# NOT IMPLEMENTED - the instruction contradicts itself.
#
# Rule 2: average every element with left <= i <= right, both endpoints included.
#         For left == right that is exactly one element, xs[left].
# Rule 3: when left == right the span is empty and the result must be 0.0.
#
# These cannot both hold: avg_span([7.0, 9.0, 11.0], 1, 1) would have to be 9.0
# (rule 2, test_one_element) and 0.0 (rule 3). test_empty_span expects 0.0 for
# (0, 0). Waiting for a decision between [left, right] and [left, right).


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs in the span from left to right."""
    raise NotImplementedError("plan.md rules 2 and 3 contradict for left == right")
