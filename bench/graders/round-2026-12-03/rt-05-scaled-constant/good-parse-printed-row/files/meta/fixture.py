"""Fixture values taken from published reference tables."""

from decimal import Decimal, ROUND_HALF_EVEN
import re

# The row as printed in the NIST table of CODATA 2022 recommended values
# (value, then the standard uncertainty in the last digits, in brackets).
_ROW = "inverse fine-structure constant                   137.035 999 177 (21)"
_SCALE_EXP = 9  # MODEL.md: nearest integer to X * 10^9


def _printed_value(row: str) -> Decimal:
    m = re.search(r"(\d+\.[\d ]+?)\s*\(\d+\)\s*$", row)
    if not m:
        raise ValueError("unparseable row %r" % row)
    return Decimal(m.group(1).replace(" ", ""))


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    x = _printed_value(_ROW)
    return int(x.scaleb(_SCALE_EXP).to_integral_value(rounding=ROUND_HALF_EVEN))
