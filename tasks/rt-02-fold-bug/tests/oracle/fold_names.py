"""Folds whitespace; the set by Unicode name."""

import re

_SET = (
    "\x09",
    "\x0a",
    "\x0b",
    "\x0c",
    "\x0d",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x1f",
    "\N{SPACE}",
    "\x85",
    "\N{NO-BREAK SPACE}",
    "\N{OGHAM SPACE MARK}",
    "\N{EN QUAD}",
    "\N{EM QUAD}",
    "\N{EN SPACE}",
    "\N{EM SPACE}",
    "\N{THREE-PER-EM SPACE}",
    "\N{FOUR-PER-EM SPACE}",
    "\N{SIX-PER-EM SPACE}",
    "\N{FIGURE SPACE}",
    "\N{PUNCTUATION SPACE}",
    "\N{THIN SPACE}",
    "\N{HAIR SPACE}",
    "\N{LINE SEPARATOR}",
    "\N{PARAGRAPH SEPARATOR}",
    "\N{NARROW NO-BREAK SPACE}",
    "\N{MEDIUM MATHEMATICAL SPACE}",
    "\N{IDEOGRAPHIC SPACE}",
)
_RUN = re.compile("[" + "".join(re.escape(c) for c in _SET) + "]+")

def fold_ws(s):
    if not isinstance(s, str):
        raise TypeError("fold_ws takes a str")
    return _RUN.sub(" ", s).strip("".join(_SET))
