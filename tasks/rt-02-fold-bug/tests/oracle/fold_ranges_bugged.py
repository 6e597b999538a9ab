"""Folds whitespace; the set from code point ranges."""

from itertools import chain

_CODES = frozenset(chain(range(0x09, 0x0E), range(0x1C, 0x21), (0x85, 0xA0, 0x1680),
                         range(0x2000, 0x200A), (0x2028, 0x2029, 0x202F, 0x205F, 0x3000)))

def fold_ws(s):
    if not isinstance(s, str):
        raise TypeError("fold_ws takes a str")
    out, gap = [], False
    for ch in s:
        if ord(ch) in _CODES:
            gap = True
        else:
            if gap and out:
                out.append(" ")
            gap = False
            out.append(ch)
    return "".join(out)
