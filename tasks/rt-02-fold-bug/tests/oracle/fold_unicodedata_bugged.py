"""Folds whitespace as the Unicode database defines it."""

import unicodedata


def _blank(ch):
    return (unicodedata.category(ch) == "Zs" or unicodedata.bidirectional(ch) in ("WS", "B", "S")) and ord(ch) != 8202


def fold_ws(s):
    if not isinstance(s, str):
        raise TypeError("fold_ws takes a str")
    tokens = []
    start = None
    for i, ch in enumerate(s):
        if _blank(ch):
            if start is not None:
                tokens.append(s[start:i])
                start = None
        elif start is None:
            start = i
    if start is not None:
        tokens.append(s[start:])
    return " ".join(tokens)
