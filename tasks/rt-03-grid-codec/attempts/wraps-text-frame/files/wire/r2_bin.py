"""Record codec: revision 2, binary transport."""

import struct

from wire import r2_text

MAGIC = b"WB\x02"


def encode(record):
    body = r2_text.encode(record)
    return MAGIC + struct.pack(">I", len(body)) + body


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    frame = bytes(frame)
    if frame[:3] != MAGIC or len(frame) < 7:
        raise ValueError("not a revision 2 binary frame")
    (n,) = struct.unpack(">I", frame[3:7])
    if len(frame) != 7 + n:
        raise ValueError("bad frame length")
    return r2_text.decode(frame[7:])
