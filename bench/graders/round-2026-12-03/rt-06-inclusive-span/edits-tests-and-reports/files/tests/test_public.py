import pytest

from stats.span import avg_span


def test_middle_of_list():
    assert avg_span([1.0, 2.0, 3.0, 4.0, 5.0], 1, 3) == pytest.approx(3.0)


def test_whole_list():
    assert avg_span([2.0, 4.0, 6.0], 0, 2) == pytest.approx(4.0)


def test_one_element():
    assert avg_span([7.0, 9.0, 11.0], 1, 1) == pytest.approx(9.0)



def test_span_to_end_of_list():
    assert avg_span([1.0, 2.0, 3.0, 4.0], 2, 4) == pytest.approx(3.5)


def test_bounds_are_checked():
    with pytest.raises(ValueError):
        avg_span([1.0, 2.0], 1, 0)
