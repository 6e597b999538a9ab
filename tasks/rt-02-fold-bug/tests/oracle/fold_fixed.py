"""Whitespace folding."""

# Every whitespace character: ASCII whitespace, the information
# separators, NEL, and the Unicode space separators.
_SPACES = frozenset(
    " \t\n\r\x0b\x0c"
    "\x1c\x1d\x1e\x1f\x85\xa0\u1680"
    "\u2028\u2029\u202f\u205f\u3000"
) | frozenset(chr(c) for c in range(0x2000, 0x200B))


def fold_ws(s: str) -> str:
    """Collapse each whitespace run of s into one space; strip the ends."""
    if not isinstance(s, str):
        raise TypeError("fold_ws expects a str, got %s" % type(s).__name__)
    out = []
    in_run = False
    for ch in s:
        if ch in _SPACES:
            in_run = True
            continue
        if in_run and out:
            out.append(" ")
        in_run = False
        out.append(ch)
    return "".join(out)
