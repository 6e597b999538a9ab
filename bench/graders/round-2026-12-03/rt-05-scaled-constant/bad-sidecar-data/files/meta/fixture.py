"""Fixture values taken from published reference tables."""

import json
from pathlib import Path

_TABLE = Path(__file__).with_name("codata2022.json")


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    row = json.loads(_TABLE.read_text())["inverse fine-structure constant"]
    digits = row["value"].replace(" ", "")
    whole, _, frac = digits.partition(".")
    frac = (frac + "0" * 9)[:9]
    return int(whole + frac)
