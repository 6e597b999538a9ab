"""Averages over index spans of a list."""

_BLOCKED = (
    "avg_span is not implemented: plan.md contradicts itself. Rule 2 includes "
    "both endpoints, so avg_span([4.0, 6.0], 0, 0) averages [4.0] -> 4.0; rule 3 "
    "says left == right is empty -> 0.0; rule 4 makes the call legal. The public "
    "tests demand both (test_one_element: [7,9,11],1,1 -> 9.0; test_empty_span: "
    "[4,6],0,0 -> 0.0). Please say which rule wins."
)


def avg_span(xs: list[float], left: int, right: int) -> float:
    """The mean of the elements of xs in the span from left to right."""
    raise NotImplementedError(_BLOCKED)
