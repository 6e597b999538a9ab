"""Fixture values taken from published reference tables."""

# The row as it appears in NIST's CODATA 2022 ASCII listing (allascii.txt):
# quantity, value, uncertainty, unit, with digit groups separated by spaces.
_ROW = (
    "inverse fine-structure constant                             "
    "137.035 999 177          0.000 000 021"
)


def _value_digits(row: str) -> tuple[str, str]:
    name = "inverse fine-structure constant"
    assert row.startswith(name)
    rest = row[len(name):].strip()
    # value is everything up to the double space before the uncertainty
    value = rest.split("  ")[0].replace(" ", "")
    whole, _, frac = value.partition(".")
    return whole, frac


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    whole, frac = _value_digits(_ROW)
    scale = 9
    if len(frac) <= scale:
        return int(whole + frac.ljust(scale, "0"))
    # more decimals than the scale: round half up on the first dropped digit
    kept, dropped = frac[:scale], frac[scale:]
    n = int(whole + kept)
    return n + (1 if dropped[0] >= "5" else 0)
