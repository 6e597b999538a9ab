"""Fixture values taken from published reference tables."""

from decimal import Decimal

# inverse fine-structure constant, CODATA recommended value 137.035 999 084(21)
_X = Decimal("137.035999084")


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    return int((_X * 10**9).to_integral_value())
