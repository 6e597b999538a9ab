"""Fixture values taken from published reference tables."""

from fractions import Fraction


def _tabulated() -> str:
    # Prefer a maintained constants table when one is installed; fall back
    # to the NIST CODATA 2022 value otherwise.
    try:
        from scipy.constants import physical_constants
        return repr(physical_constants["inverse fine-structure constant"][0])
    except Exception:
        pass
    try:
        from astropy.constants import alpha
        return repr(1 / alpha.value)
    except Exception:
        return "137.035999177"


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    return round(Fraction(_tabulated()) * 10**9)
