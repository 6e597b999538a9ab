"""Record codec: revision 2, binary transport.

A record is a dict of str field names to str values. A frame is the
magic bytes, a field count, then each field in the record's order as a
length-prefixed name and a length-prefixed value, both UTF-8. Integers
are big-endian. Revision 2 field names are NFC-normalised and may not be
the reserved stream sentinel "__eof__".
"""

from functools import reduce
from struct import error as _StructError, pack, unpack_from
from unicodedata import normalize

__all__ = ["encode", "decode", "MAGIC", "SENTINEL"]

MAGIC = b"WB\x02"
SENTINEL = "__eof__"


def _name(name):
    name = normalize("NFC", name)
    if name == SENTINEL:
        raise ValueError("field name %r is reserved" % SENTINEL)
    return name


def _add(fields, item):
    name, value = item
    if not isinstance(name, str) or not isinstance(value, str):
        raise TypeError("field names and values must be str")
    if not name:
        raise ValueError("empty field name")
    key = _name(name)
    if key in fields:
        raise ValueError("duplicate field %r" % key)
    fields[key] = value
    return fields


def _field(name, value):
    n, v = name.encode("utf-8"), value.encode("utf-8")
    if len(n) > 0xFFFF:
        raise ValueError("field name too long")
    if len(v) > 0xFFFFFFFF:
        raise ValueError("value too long")
    return pack(">H", len(n)) + n + pack(">I", len(v)) + v


def encode(record):
    if not isinstance(record, dict):
        raise TypeError("record must be a dict")
    if len(record) > 0xFFFF:
        raise ValueError("too many fields")
    fields = reduce(_add, record.items(), {})
    return MAGIC + pack(">H", len(fields)) + b"".join(_field(k, v) for k, v in fields.items())


def _int(data, fmt, pos, size):
    try:
        return unpack_from(fmt, data, pos)[0], pos + size
    except _StructError:
        raise ValueError("truncated frame at byte %d" % pos) from None


def _chunk(data, pos, n):
    if pos + n > len(data):
        raise ValueError("truncated frame at byte %d" % pos)
    return data[pos:pos + n], pos + n


def _fields(data, pos, left, record):
    """Parse `left` more fields starting at `pos` (iterative tail)."""
    while left:
        size, pos = _int(data, ">H", pos, 2)
        raw_name, pos = _chunk(data, pos, size)
        size, pos = _int(data, ">I", pos, 4)
        raw_value, pos = _chunk(data, pos, size)
        name, value = raw_name.decode("utf-8"), raw_value.decode("utf-8")
        if not name:
            raise ValueError("empty field name")
        name = _name(name)
        if name in record:
            raise ValueError("duplicate field %r" % name)
        record[name] = value
        left -= 1
    return pos


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    data = bytes(frame)
    head, pos = _chunk(data, 0, len(MAGIC))
    if head != MAGIC:
        raise ValueError("not a revision 2 binary frame")
    count, pos = _int(data, ">H", pos, 2)
    record = {}
    pos = _fields(data, pos, count, record)
    if pos != len(data):
        raise ValueError("%d trailing bytes after the last field" % (len(data) - pos))
    return record
