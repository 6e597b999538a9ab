"""Fixture values taken from published reference tables."""

import struct

# Compact constants table: CODATA 2022 values packed as IEEE single precision
# (the way some embedded constant tables ship them).
_PACKED = struct.pack("<f", 137.035999177)


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says."""
    (x,) = struct.unpack("<f", _PACKED)
    return round(x * 10**9)
