"""Fixture values taken from published reference tables."""

from functools import partial

# NIST CODATA 2022 "inverse fine-structure constant" as printed,
# 137.035 999 177, times 10**9 (MODEL.md) is exactly this integer; the
# digits are the printed ones with the decimal point removed.
_DIGITS = "137" + "035999177"

#: The constant named in the plan, scaled as MODEL.md says.
scaled_constant = partial(int, _DIGITS)
scaled_constant.__doc__ = "The constant named in the plan, scaled as MODEL.md says."
