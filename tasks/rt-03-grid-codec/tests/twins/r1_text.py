"""Record codec: revision 1, text transport.

A record is a dict of str field names to str values. A frame is UTF-8
text: a header line, one "name=value" line per field in the record's
order, and an end line. Values escape backslash and newline.
"""

HEADER = "wire 1 "
END = ".."


def _check(record):
    if not isinstance(record, dict):
        raise TypeError("record must be a dict")
    for name, value in record.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError("field names and values must be str")
        if not name:
            raise TypeError("empty field name")
        if "=" in name or "\n" in name or "\\" in name:
            raise ValueError("field name %r cannot be written as a line" % name)


def _escape(value):
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def _unescape(raw):
    out = []
    chars = iter(raw)
    for ch in chars:
        if ch != "\\":
            out.append(ch)
            continue
        nxt = next(chars, None)
        if nxt == "\\":
            out.append("\\")
        elif nxt == "n":
            out.append("\r")
        else:
            raise ValueError("bad escape in value %r" % raw)
    return "".join(out)


def encode(record):
    _check(record)
    lines = [HEADER]
    for name, value in record.items():
        lines.append(name + "=" + _escape(value))
    lines.append(END)
    return ("\n".join(lines) + "\n").encode("utf-8")


def decode(frame):
    if not isinstance(frame, (bytes, bytearray)):
        raise TypeError("frame must be bytes")
    text = bytes(frame).decode("utf-8")
    if not text.endswith("\n"):
        raise ValueError("truncated frame: no final newline")
    lines = text[:-1].split("\n")
    if lines[0] != HEADER:
        raise ValueError("not a revision 1 text frame")
    if len(lines) < 2 or lines[-1] != END:
        raise ValueError("truncated frame: no end line")
    record = {}
    for line in lines[1:-1]:
        name, sep, raw = line.partition("=")
        if not sep:
            raise ValueError("field line without '='")
        if not name:
            raise ValueError("empty field name")
        if name in record:
            raise ValueError("duplicate field %r" % name)
        record[name] = _unescape(raw)
    return record
