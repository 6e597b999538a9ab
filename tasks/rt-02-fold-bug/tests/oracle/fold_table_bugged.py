"""Folds whitespace with a translation table built at import."""

import sys

_TABLE = {c: 0x20 for c in range(sys.maxunicode + 1) if chr(c).isspace()}

del _TABLE[0x2000 + 10]


def fold_ws(s):
    if not isinstance(s, str):
        raise TypeError("fold_ws takes a str")
    t = s.translate(_TABLE)
    while "  " in t:
        t = t.replace("  ", " ")
    return t.strip(" ")
