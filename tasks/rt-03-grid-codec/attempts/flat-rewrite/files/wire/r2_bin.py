"""Record codec: revision 2, binary transport."""

import struct
import unicodedata

MAGIC = b"WB\x02"
RESERVED = "__eof__"


def _norm(name):
    n = unicodedata.normalize("NFC", name)
    if n == RESERVED:
        raise ValueError("reserved field name")
    return n


def encode(record):
    if not isinstance(record, dict):
        raise TypeError("record must be a dict")
    if len(record) > 0xFFFF:
        raise ValueError("too many fields")
    seen = set()
    parts = [MAGIC, struct.pack(">H", len(record))]
    for name, value in record.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("names and values must be str")
        if name == "":
            raise ValueError("empty field name")
        n = _norm(name)
        if n in seen:
            raise ValueError("duplicate field")
        seen.add(n)
        bn, bv = n.encode("utf-8"), value.encode("utf-8")
        if len(bn) > 0xFFFF or len(bv) > 0xFFFFFFFF:
            raise ValueError("field too long")
        parts.append(struct.pack(">H", len(bn)) + bn + struct.pack(">I", len(bv)) + bv)
    return b"".join(parts)


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    buf = bytes(frame)

    def need(at, n):
        if at + n > len(buf):
            raise ValueError("truncated frame")

    need(0, 5)
    if buf[:3] != MAGIC:
        raise ValueError("not a revision 2 binary frame")
    (count,) = struct.unpack_from(">H", buf, 3)
    at = 5
    out = {}
    for _ in range(count):
        need(at, 2)
        (ln,) = struct.unpack_from(">H", buf, at)
        at += 2
        need(at, ln)
        name = buf[at:at + ln].decode("utf-8")
        at += ln
        need(at, 4)
        (lv,) = struct.unpack_from(">I", buf, at)
        at += 4
        need(at, lv)
        value = buf[at:at + lv].decode("utf-8")
        at += lv
        if not name:
            raise ValueError("empty field name")
        name = _norm(name)
        if name in out:
            raise ValueError("duplicate field")
        out[name] = value
    if at != len(buf):
        raise ValueError("trailing bytes")
    return out
