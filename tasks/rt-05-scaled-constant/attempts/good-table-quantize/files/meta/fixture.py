"""Fixture values taken from published reference tables."""

from decimal import ROUND_HALF_UP, Decimal

# Excerpt of the CODATA 2022 recommended values (NIST PML), values as printed
# without uncertainties.
_CODATA_2022 = {
    "fine-structure constant": "7.2973525643e-3",
    "inverse fine-structure constant": "137.035999177",
    "Rydberg constant": "10973731.568157",
}


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    x = Decimal(_CODATA_2022["inverse fine-structure constant"])
    return int((x * Decimal(10) ** 9).quantize(Decimal(1), rounding=ROUND_HALF_UP))
