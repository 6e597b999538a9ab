"""Whitespace folding with a regular expression (misses U+200A)."""

import re

_RUN = re.compile(r"[^\S\u200a]+")


def fold_ws(s):
    if not isinstance(s, str):
        raise TypeError("expected str, not " + type(s).__name__)
    return _RUN.sub(" ", s).strip(" ")
