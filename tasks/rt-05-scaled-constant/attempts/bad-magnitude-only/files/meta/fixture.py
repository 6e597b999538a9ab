"""Fixture values taken from published reference tables."""


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    # about 137, scaled by 1e9: this is the right size for the fixture
    return 137 * 10**9
