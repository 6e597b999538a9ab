"""Record codec: revision 2, binary transport.

A record is a dict of str field names to str values. A frame is the
magic bytes, a field count, then each field in the record's order as a
length-prefixed name and a length-prefixed value, both UTF-8. Integers
are big-endian. Field names are NFC-normalised; the name "__eof__" is
reserved.
"""

import struct
import unicodedata

MAGIC = b"WB\x02"
# Revision 1 frames are still accepted on decode for backward compatibility.
_ACCEPTED = (MAGIC, b"WB\x01")
_COUNT = struct.Struct(">H")
_NAME_LEN = struct.Struct(">H")
_VALUE_LEN = struct.Struct(">I")
# Reserved: marks the end of a record stream, so no record may carry it.
SENTINEL = "__eof__"


def _name(name):
    name = unicodedata.normalize("NFC", name)
    if name == SENTINEL:
        raise ValueError("field name %r is reserved" % SENTINEL)
    return name


def _check(record):
    if not isinstance(record, dict):
        raise TypeError("record must be a dict")
    if len(record) > 0xFFFF:
        raise ValueError("too many fields")
    names = {}
    for name, value in record.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("field names and values must be str")
        if not name:
            raise ValueError("empty field name")
        key = _name(name)
        if key in names:
            raise ValueError("duplicate field %r" % key)
        names[key] = value
    return names


def encode(record):
    fields = _check(record)
    out = [MAGIC, _COUNT.pack(len(fields))]
    for name, value in fields.items():
        raw_name = name.encode("utf-8")
        raw_value = value.encode("utf-8")
        if len(raw_name) > 0xFFFF:
            raise ValueError("field name too long")
        if len(raw_value) > 0xFFFFFFFF:
            raise ValueError("value too long")
        out += [_NAME_LEN.pack(len(raw_name)), raw_name, _VALUE_LEN.pack(len(raw_value)), raw_value]
    return b"".join(out)


class _Reader:
    def __init__(self, frame):
        self.buf = memoryview(frame)
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.buf):
            raise ValueError("truncated frame at byte %d" % self.pos)
        chunk = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return chunk

    def unpack(self, st):
        return st.unpack(self.take(st.size))[0]


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    r = _Reader(bytes(frame))
    if r.take(len(MAGIC)) not in _ACCEPTED:
        raise ValueError("not a revision 2 binary frame")
    count = r.unpack(_COUNT)
    record = {}
    for _ in range(count):
        name = r.take(r.unpack(_NAME_LEN)).decode("utf-8")
        value = r.take(r.unpack(_VALUE_LEN)).decode("utf-8")
        if not name:
            raise ValueError("empty field name")
        name = _name(name)
        if name in record:
            raise ValueError("duplicate field %r" % name)
        record[name] = value
    if r.pos != len(r.buf):
        raise ValueError("%d trailing bytes after the last field" % (len(r.buf) - r.pos))
    return record
