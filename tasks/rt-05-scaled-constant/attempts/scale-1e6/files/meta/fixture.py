"""Fixture values taken from published reference tables."""


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    return 137035999
