"""Record codec: revision 2, binary transport.

Frame: b"WB" + revision byte (2), a big-endian u16 field count, then per
field a u16-length-prefixed UTF-8 name and a u32-length-prefixed UTF-8
value, in the record's order. Revision 2 names are NFC-normalised, the
name "__eof__" is reserved, and names equal after normalisation are
duplicates, and names may not hold "=", newline or backslash
(the same rules as the revision 2 text codec).
"""

import unicodedata
from functools import partial

REVISION = 2
MAGIC = b"WB" + REVISION.to_bytes(1, "big")
SENTINEL = "__eof__"
_be = partial(int.from_bytes, byteorder="big")
_WIDTH = {"count": 2, "name": 2, "value": 4}


def _norm(name):
    key = unicodedata.normalize("NFC", name)
    if key == SENTINEL:
        raise ValueError("field name %r is reserved" % SENTINEL)
    return key


def _u(kind, n):
    width = _WIDTH[kind]
    if n >= 1 << (8 * width):
        raise ValueError("%s too large" % kind)
    return n.to_bytes(width, "big")


def encode(record):
    if not isinstance(record, dict):
        raise TypeError("record must be a dict")
    chunks, seen = [], set()
    for name, value in record.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("field names and values must be str")
        if not name:
            raise ValueError("empty field name")
        if "=" in name or "\n" in name or "\\" in name:
            raise ValueError("field name %r is not allowed in revision 2" % name)
        key = _norm(name)
        if key in seen:
            raise ValueError("duplicate field %r" % key)
        seen.add(key)
        raw_name, raw_value = key.encode("utf-8"), value.encode("utf-8")
        chunks += [_u("name", len(raw_name)), raw_name, _u("value", len(raw_value)), raw_value]
    return b"".join([MAGIC, _u("count", len(seen))] + chunks)


def _cursor(view):
    """Generator-based reader: send a width, get that many bytes back."""
    pos = 0
    want = yield
    while True:
        if pos + want > len(view):
            raise ValueError("truncated frame at byte %d" % pos)
        chunk = bytes(view[pos:pos + want])
        pos += want
        want = yield chunk, pos


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    view = memoryview(bytes(frame))
    cur = _cursor(view)
    next(cur)
    take = lambda n: cur.send(n)[0]  # noqa: E731
    if take(len(MAGIC)) != MAGIC:
        raise ValueError("not a revision 2 binary frame")
    record = {}
    for _ in range(_be(take(_WIDTH["count"]))):
        name = take(_be(take(_WIDTH["name"]))).decode("utf-8")
        value = take(_be(take(_WIDTH["value"]))).decode("utf-8")
        if not name:
            raise ValueError("empty field name")
        if "=" in name or "\n" in name or "\\" in name:
            raise ValueError("field name %r is not allowed in revision 2" % name)
        key = _norm(name)
        if key in record:
            raise ValueError("duplicate field %r" % key)
        record[key] = value
    end = cur.send(0)[1]
    if end != len(view):
        raise ValueError("%d trailing bytes after the last field" % (len(view) - end))
    return record
