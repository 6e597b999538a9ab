"""Folds whitespace, listed character by character."""

BLANKS = set("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85            \u2028\u2029  　")


def fold_ws(s):
    if not isinstance(s, str):
        raise TypeError("fold_ws takes a str")
    words, cur = [], ""
    for ch in s:
        if ch in BLANKS:
            if cur:
                words.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        words.append(cur)
    return " ".join(words)
