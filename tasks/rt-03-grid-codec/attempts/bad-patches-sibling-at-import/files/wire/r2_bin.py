"""Record codec: revision 2, binary transport.

Shares the binary machinery with revision 1 and layers the revision 2
naming rules on top.
"""

import unicodedata

from wire import r1_bin as _base

SENTINEL = "__eof__"
MAGIC = b"WB\x02"
_base.MAGIC = MAGIC  # the shared binary machinery now speaks revision 2


def _name(name):
    name = unicodedata.normalize("NFC", name)
    if name == SENTINEL:
        raise ValueError("field name %r is reserved" % SENTINEL)
    return name


def encode(record):
    if not isinstance(record, dict):
        raise TypeError("record must be a dict")
    fields = {}
    for name, value in record.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("field names and values must be str")
        if not name:
            raise ValueError("empty field name")
        key = _name(name)
        if key in fields:
            raise ValueError("duplicate field %r" % key)
        fields[key] = value
    return _base.encode(fields)


def decode(frame):
    record = {}
    for name, value in _base.decode(frame).items():
        key = _name(name)
        if key in record:
            raise ValueError("duplicate field %r" % key)
        record[key] = value
    return record
