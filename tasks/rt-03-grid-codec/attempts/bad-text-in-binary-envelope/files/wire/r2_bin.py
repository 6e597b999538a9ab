"""Record codec: revision 2, binary transport.

The binary transport is a length-prefixed envelope around the revision 2
payload, so revision 2 rules (NFC names, reserved sentinel, escaping)
come from the revision 2 codec and cannot drift from it.
"""

import struct

from wire import r2_text

MAGIC = b"WB\x02"
_LEN = struct.Struct(">I")


def encode(record):
    payload = r2_text.encode(record)
    return MAGIC + _LEN.pack(len(payload)) + payload


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    frame = bytes(frame)
    if frame[:3] != MAGIC or len(frame) < 7:
        raise ValueError("not a revision 2 binary frame")
    (n,) = _LEN.unpack(frame[3:7])
    if len(frame) != 7 + n:
        raise ValueError("bad frame length")
    return r2_text.decode(frame[7:])
