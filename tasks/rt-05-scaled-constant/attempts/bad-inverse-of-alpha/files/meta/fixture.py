"""Fixture values taken from published reference tables."""

from decimal import Decimal, getcontext

# CODATA 2022 (NIST): fine-structure constant alpha = 7.297 352 5643(11) e-3.
# The inverse constant is 1/alpha, computed exactly here.
_ALPHA_2022 = Decimal("7.2973525643e-3")


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    getcontext().prec = 40
    inverse = Decimal(1) / _ALPHA_2022
    return int((inverse * 10**9).to_integral_value())
