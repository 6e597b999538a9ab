import pytest

from stats.span import avg_span


def test_bounds_are_checked():
    with pytest.raises(ValueError):
        avg_span([1.0, 2.0], 1, 0)
