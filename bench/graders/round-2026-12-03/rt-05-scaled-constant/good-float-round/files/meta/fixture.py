"""Fixture values taken from published reference tables."""

ALPHA_INV_CODATA_2022 = 137.035999177  # NIST, CODATA 2022, as printed


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    # Float product is within a few ulps of 137035999177; round() recovers it.
    return round(ALPHA_INV_CODATA_2022 * 1e9)
