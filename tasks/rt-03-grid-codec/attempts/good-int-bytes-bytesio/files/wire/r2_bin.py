"""Record codec: revision 2, binary transport.

Frame: magic b"WB\\x02", a 2-byte field count, then per field a 2-byte
name length, the UTF-8 name, a 4-byte value length and the UTF-8 value.
All integers big-endian. Names are NFC-normalised and "__eof__" is
reserved (revision 2 rules).
"""

import io
import unicodedata

MAGIC = b"WB\x02"
SENTINEL = "__eof__"


def _u(n, width):
    return n.to_bytes(width, "big")


def _canon(name):
    name = unicodedata.normalize("NFC", name)
    if name == SENTINEL:
        raise ValueError("reserved field name")
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
        name = _canon(name)
        if name in fields:
            raise ValueError("duplicate field")
        fields[name] = value
    buf = io.BytesIO()
    buf.write(MAGIC)
    buf.write(_u(len(fields), 2))
    for name, value in fields.items():
        n, v = name.encode("utf-8"), value.encode("utf-8")
        if len(n) > 0xFFFF:
            raise ValueError("field name too long")
        if len(v) > 0xFFFFFFFF:
            raise ValueError("value too long")
        buf.write(_u(len(n), 2) + n + _u(len(v), 4) + v)
    return buf.getvalue()


def _read(stream, n):
    chunk = stream.read(n)
    if len(chunk) != n:
        raise ValueError("truncated frame")
    return chunk


def _int(stream, width):
    return int.from_bytes(_read(stream, width), "big")


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    stream = io.BytesIO(bytes(frame))
    if _read(stream, len(MAGIC)) != MAGIC:
        raise ValueError("not a revision 2 binary frame")
    record = {}
    for _ in range(_int(stream, 2)):
        name = _read(stream, _int(stream, 2)).decode("utf-8")
        value = _read(stream, _int(stream, 4)).decode("utf-8")
        if not name:
            raise ValueError("empty field name")
        name = _canon(name)
        if name in record:
            raise ValueError("duplicate field")
        record[name] = value
    if stream.read(1):
        raise ValueError("trailing bytes after the last field")
    return record
