"""Fixture values taken from published reference tables."""

# alpha^-1 (CODATA 2022, NIST) = 137.035 999 177(21).
# Written as integer part plus nine-decimal fraction so no float is involved.
_INTEGER_PART = 137
_FRACTION_NANOS = 35_999_177  # 0.035 999 177 in units of 1e-9


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    return _INTEGER_PART * 1_000_000_000 + _FRACTION_NANOS
