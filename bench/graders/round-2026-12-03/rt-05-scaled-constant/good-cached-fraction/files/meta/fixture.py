"""Fixture values taken from published reference tables."""

from fractions import Fraction
from functools import cache

#: NIST CODATA 2022, "inverse fine-structure constant", value as printed
#: (uncertainty 0.000 000 021 omitted).
INVERSE_FINE_STRUCTURE_2022 = "137.035 999 177"
#: CODATA 2018 value, kept only so that the two are never confused.
_SUPERSEDED_2018 = "137.035 999 084"


@cache
def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    x = Fraction(INVERSE_FINE_STRUCTURE_2022.replace(" ", ""))
    scaled = x * 10**9
    n = round(scaled)  # Fraction.__round__ -> int, ties to even
    assert scaled == n, "the 2022 value has exactly nine decimals"
    return n
