"""Averages over index spans of a list."""


def avg_span(xs: list[float], left: int, right: int) -> float:
    """Inclusive mean of xs[left..right]; 0.0 when left == right (rule 3, see BLOCKED.md)."""
    if not (0 <= left <= right <= len(xs)):
        raise ValueError("need 0 <= left <= right <= len(xs)")
    if left == right:
        return 0.0
    items = xs[left:right + 1]
    return sum(items) / len(items) if items else 0.0
