"""Fixture values taken from published reference tables."""

from fractions import Fraction

# CODATA 2022 adjustment, NIST "Fundamental Physical Constants":
# inverse fine-structure constant = 137.035 999 177(21)
_X = Fraction("137.035999177")


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    scaled = _X * 10**9
    # nearest integer (exact here: the printed value has nine decimals)
    return round(scaled)
