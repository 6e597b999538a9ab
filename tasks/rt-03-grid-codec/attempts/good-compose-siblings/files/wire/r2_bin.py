"""Record codec: revision 2, binary transport.

Built from its grid neighbours: the binary transport of revision 1
(wire.r1_bin: length prefixes, reader) and the revision 2 naming rules
(wire.r2_text: NFC normalisation, reserved sentinel). Only the revision
byte of the magic is new.
"""

from wire.r1_bin import _COUNT, _NAME_LEN, _VALUE_LEN, _Reader
from wire.r1_bin import _check as _transport_check
from wire.r2_text import SENTINEL
from wire.r2_text import _name as _revision_name

MAGIC = b"WB\x02"


def _fields(record):
    _transport_check(record)
    fields = {}
    for name, value in record.items():
        key = _revision_name(name)
        if key in fields:
            raise ValueError("duplicate field %r" % key)
        fields[key] = value
    return fields


def encode(record):
    fields = _fields(record)
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


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    r = _Reader(bytes(frame))
    if r.take(len(MAGIC)) != MAGIC:
        raise ValueError("not a revision 2 binary frame")
    record = {}
    for _ in range(r.unpack(_COUNT)):
        name = r.take(r.unpack(_NAME_LEN)).decode("utf-8")
        value = r.take(r.unpack(_VALUE_LEN)).decode("utf-8")
        if not name:
            raise ValueError("empty field name")
        name = _revision_name(name)
        if name in record:
            raise ValueError("duplicate field %r" % name)
        record[name] = value
    if r.pos != len(r.buf):
        raise ValueError("%d trailing bytes after the last field" % (len(r.buf) - r.pos))
    return record
