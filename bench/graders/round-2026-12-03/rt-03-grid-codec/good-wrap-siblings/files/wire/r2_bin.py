"""Record codec: revision 2, binary transport.

Built from the siblings instead of copied: the revision 2 field-name rules
(NFC normalisation, the reserved "__eof__" name, duplicates after
normalisation) come from ``r2_text``; the binary layout comes from
``r1_bin`` with the revision byte of the magic bumped to 2, the way the
text header goes from "wire 1" to "wire 2".
"""

from . import r1_bin, r2_text

MAGIC = r1_bin.MAGIC[:-1] + bytes([2])      # b"WB\x02"
SENTINEL = r2_text.SENTINEL


def _fields(pairs):
    """Normalise names with the revision 2 rules; reject reserved/duplicates."""
    out = {}
    for name, value in pairs:
        key = r2_text._name(name)
        if key in out:
            raise ValueError("duplicate field %r" % key)
        out[key] = value
    return out


def encode(record):
    # r1_bin's own checks (types, empty names, limits) run on the raw record first.
    r1_bin._check(record)
    body = r1_bin.encode(_fields(record.items()))
    return MAGIC + body[len(r1_bin.MAGIC):]


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    frame = bytes(frame)
    if frame[:len(MAGIC)] != MAGIC:
        raise ValueError("not a revision 2 binary frame")
    # r1_bin.decode returns a dict, so collect raw (name, value) pairs via
    # its reader instead, to see names that only collide after NFC.
    r = r1_bin._Reader(frame)
    r.take(len(MAGIC))
    pairs = []
    for _ in range(r.unpack(r1_bin._COUNT)):
        name = r.take(r.unpack(r1_bin._NAME_LEN)).decode("utf-8")
        value = r.take(r.unpack(r1_bin._VALUE_LEN)).decode("utf-8")
        if not name:
            raise ValueError("empty field name")
        pairs.append((name, value))
    if r.pos != len(r.buf):
        raise ValueError("%d trailing bytes after the last field" % (len(r.buf) - r.pos))
    return _fields(pairs)
