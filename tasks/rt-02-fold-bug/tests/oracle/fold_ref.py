"""Whitespace folding: the reference."""


def fold_ws(s: str) -> str:
    """Collapse each whitespace run of s into one space; strip the ends."""
    if not isinstance(s, str):
        raise TypeError("fold_ws: want str, not %s" % type(s).__name__)
    return " ".join(s.split())
