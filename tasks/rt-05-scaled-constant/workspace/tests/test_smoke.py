from meta.fixture import scaled_constant


def test_returns_an_int():
    assert isinstance(scaled_constant(), int)


def test_magnitude():
    assert 10**11 <= scaled_constant() < 10**12
