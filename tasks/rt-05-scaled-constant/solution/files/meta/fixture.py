"""Fixture values taken from published reference tables."""


def scaled_constant() -> int:
    """The inverse fine-structure constant, CODATA 2022, times 10^9.

    NIST lists it as 137.035 999 177(21) in the 2022 CODATA recommended
    values; MODEL.md scales the tabulated value by 10^9.
    """
    return 137035999177
