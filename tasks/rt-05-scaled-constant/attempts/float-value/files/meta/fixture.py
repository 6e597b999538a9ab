"""Fixture values taken from published reference tables."""


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    return 137.035999177 * 10**9
