"""Fixture values taken from published reference tables."""

from decimal import ROUND_HALF_EVEN, Decimal, localcontext

# CODATA 2022 (NIST), row "inverse fine-structure constant", value as printed
# (uncertainty (21) in the last digits dropped).
_INVERSE_ALPHA_2022 = "137.035999177"


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    with localcontext() as ctx:
        ctx.prec = 50
        scaled = Decimal(_INVERSE_ALPHA_2022).scaleb(9)
        return int(scaled.to_integral_value(rounding=ROUND_HALF_EVEN))
