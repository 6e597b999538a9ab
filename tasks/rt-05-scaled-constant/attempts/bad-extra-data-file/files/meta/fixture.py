"""Fixture values taken from published reference tables."""

import json
from decimal import Decimal
from pathlib import Path

_TABLE = Path(__file__).with_name("constants.json")


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    table = json.loads(_TABLE.read_text())
    x = Decimal(table["inverse fine-structure constant"])
    return int((x * 10**9).to_integral_value())
