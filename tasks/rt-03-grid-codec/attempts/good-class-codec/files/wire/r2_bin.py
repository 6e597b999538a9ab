"""Record codec: revision 2, binary transport.

A record is a dict of str field names to str values. A frame is the
magic bytes, a field count, then each field in the record's order as a
length-prefixed name and a length-prefixed value, both UTF-8. Integers
are big-endian. Revision 2: names are NFC-normalised, "__eof__" is
reserved.
"""

import struct
import unicodedata


class _BinaryCodec:
    """Length-prefixed binary transport, parameterised by revision rules."""

    count = struct.Struct(">H")
    name_len = struct.Struct(">H")
    value_len = struct.Struct(">I")

    def __init__(self, revision, normalise, reserved):
        self.magic = b"WB" + bytes([revision])
        self.revision = revision
        self.normalise = normalise
        self.reserved = frozenset(reserved)

    def canonical(self, name):
        if self.normalise:
            name = unicodedata.normalize(self.normalise, name)
        if name in self.reserved:
            raise ValueError("field name %r is reserved" % name)
        return name

    def encode(self, record):
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
            key = self.canonical(name)
            if key in fields:
                raise ValueError("duplicate field %r" % key)
            fields[key] = value
        parts = [self.magic, self.count.pack(len(fields))]
        for name, value in fields.items():
            raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
            if len(raw_name) > 0xFFFF:
                raise ValueError("field name too long")
            if len(raw_value) > 0xFFFFFFFF:
                raise ValueError("value too long")
            parts.append(self.name_len.pack(len(raw_name)) + raw_name)
            parts.append(self.value_len.pack(len(raw_value)) + raw_value)
        return b"".join(parts)

    def decode(self, frame):
        if not isinstance(frame, (bytes, bytearray)):
            raise TypeError("frame must be bytes")
        data = bytes(frame)
        pos = 0

        def take(n):
            nonlocal pos
            if pos + n > len(data):
                raise ValueError("truncated frame at byte %d" % pos)
            pos += n
            return data[pos - n:pos]

        if take(len(self.magic)) != self.magic:
            raise ValueError("not a revision %d binary frame" % self.revision)
        record = {}
        for _ in range(self.count.unpack(take(2))[0]):
            name = take(self.name_len.unpack(take(2))[0]).decode("utf-8")
            value = take(self.value_len.unpack(take(4))[0]).decode("utf-8")
            if not name:
                raise ValueError("empty field name")
            name = self.canonical(name)
            if name in record:
                raise ValueError("duplicate field %r" % name)
            record[name] = value
        if pos != len(data):
            raise ValueError("%d trailing bytes after the last field" % (len(data) - pos))
        return record


_CODEC = _BinaryCodec(revision=2, normalise="NFC", reserved=["__eof__"])
MAGIC = _CODEC.magic
SENTINEL = "__eof__"
encode = _CODEC.encode
decode = _CODEC.decode
