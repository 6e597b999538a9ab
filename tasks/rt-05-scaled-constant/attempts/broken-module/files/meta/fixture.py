"""Fixture values taken from published reference tables."""

from meta.codata import INVERSE_ALPHA  # a module that does not exist


def scaled_constant() -> int:
    return round(INVERSE_ALPHA * 10**9)
