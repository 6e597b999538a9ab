"""Record codec: revision 2, binary transport (table-driven layout).

A record is a dict of str field names to str values. A frame is the
magic bytes, a field count, then each field in the record's order as a
length-prefixed name and a length-prefixed value, both UTF-8. Integers
are big-endian.
"""

import struct
import unicodedata

MAGIC = b"WB\x02"
SENTINEL = "__eof__"
_COUNT = struct.Struct(">H")
# (part, length prefix, largest length)
_LAYOUT = (("name", struct.Struct(">H"), 0xFFFF), ("value", struct.Struct(">I"), 0xFFFFFFFF))


def _canonical(name):
    if not unicodedata.is_normalized("NFC", name):
        name = unicodedata.normalize("NFC", name)
    if name == SENTINEL:
        raise ValueError("field name %r is reserved" % SENTINEL)
    return name


def encode(record):
    if not isinstance(record, dict):
        raise TypeError("record must be a dict")
    if len(record) > 0xFFFF:
        raise ValueError("too many fields")
    fields = {}
    for name, value in record.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("field names and values must be str")
        if not name:
            raise ValueError("empty field name")
        key = _canonical(name)
        if key in fields:
            raise ValueError("duplicate field %r" % key)
        fields[key] = value
    out = bytearray(MAGIC)
    out += _COUNT.pack(len(fields))
    for pair in fields.items():
        for text, (part, prefix, limit) in zip(pair, _LAYOUT):
            raw = text.encode("utf-8")
            if len(raw) > limit:
                raise ValueError("%s too long" % part)
            out += prefix.pack(len(raw))
            out += raw
    return bytes(out)


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    data = bytes(frame)
    if data[:len(MAGIC)] != MAGIC:
        raise ValueError("not a revision 2 binary frame")
    pos = len(MAGIC)

    def unpack(st):
        nonlocal pos
        if pos + st.size > len(data):
            raise ValueError("truncated frame at byte %d" % pos)
        (n,) = st.unpack_from(data, pos)
        pos += st.size
        return n

    def take(n):
        nonlocal pos
        if pos + n > len(data):
            raise ValueError("truncated frame at byte %d" % pos)
        pos += n
        return data[pos - n:pos]

    record = {}
    for _ in range(unpack(_COUNT)):
        name, value = (take(unpack(prefix)).decode("utf-8") for _part, prefix, _limit in _LAYOUT)
        if not name:
            raise ValueError("empty field name")
        name = _canonical(name)
        if name in record:
            raise ValueError("duplicate field %r" % name)
        record[name] = value
    if pos != len(data):
        raise ValueError("%d trailing bytes after the last field" % (len(data) - pos))
    return record
