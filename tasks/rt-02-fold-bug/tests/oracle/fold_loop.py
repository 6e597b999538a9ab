"""Whitespace folding, one character at a time."""


def fold_ws(s):
    if not isinstance(s, str):
        raise TypeError("expected str, not " + type(s).__name__)
    pieces = []
    word = []
    for ch in s:
        if ch.isspace():
            if word:
                pieces.append("".join(word))
                word = []
        else:
            word.append(ch)
    if word:
        pieces.append("".join(word))
    return " ".join(pieces)
