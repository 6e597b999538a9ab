"""The seeded checks of RT-03, for the calls probe (graders/probe_calls.py).

    python3 gen_checks.py SEED

prints the calls of one grading as JSON: wire.r2_bin's encode and decode
on fixed and seeded records and frames. The expected answers are not
here: the judge runs the same calls on the bundle's solution, and runs
the agent's codec with the text codecs absent (task.toml, checks_absent).

The fixed cases cover each behaviour revision 2 adds to revision 1, on
encode and on decode: names are NFC (two names equal after NFC collide),
the reserved sentinel name, the revision 2 magic (revision 1 and text
frames refused), values kept as given; and the binary transport: names
may hold what a text line cannot, frames are length-prefixed, malformed
frames and records are refused.
"""

import json
import random
import struct
import sys
import unicodedata


def b(x):
    return {"$bytes": x.hex()}


def rec(pairs):
    return {"$dict": [[k, v] for k, v in pairs]}


def frame(pairs, magic=b"WB\x02", count=None):
    """A frame laid out by hand; names and values as given (not NFC)."""
    out = [magic, struct.pack(">H", len(pairs) if count is None else count)]
    for k, v in pairs:
        kb, vb = k.encode("utf-8"), v.encode("utf-8")
        out += [struct.pack(">H", len(kb)), kb, struct.pack(">I", len(vb)), vb]
    return b"".join(out)


def enc(pairs):
    return [["fn", "encode", [rec(pairs)]]]


def dec(raw):
    return [["fn", "decode", [b(raw)]]]


NFD_CAFE = unicodedata.normalize("NFD", "caf\xe9")

FIXED_RECORDS = [
    [],
    [("a", "")],
    [("id", "42"), ("name", "widget")],
    [("caf\xe9", "x"), ("k=v", "1")],
    [(NFD_CAFE, "x"), ("k=v", "1")],            # an NFD name is written as NFC
    [("z", "e\u0301\n")],                        # a value is kept as given
    [("\u540d\u524d", "\u5024\\\\"), ("emoji", "\U0001f600")],
    [("caf\xe9", "1"), (NFD_CAFE, "2")],         # equal after NFC: refused
    [("id", "1"), ("__eof__", "")],              # the sentinel: refused
    [("a=b", "1"), ("two\nlines", "2"), ("back\\slash", "3")],
    [(unicodedata.normalize("NFD", "\xfcber"), "1"), ("\u212b", "2")],
    [("", "x")],
]

FIXED_FRAMES = [
    b"", b"WB", b"WB\x02", b"WB\x02\x00", b"XX\x02\x00\x00",
    frame([("id", "42")], magic=b"WB\x01"),            # revision 1
    "wire 2\nid=42\n.\n".encode(),                      # the text transport
    "wire 1\nid=42\n.\n".encode(),
    frame([("__eof__", "")]),                           # the sentinel
    frame([(unicodedata.normalize("NFD", "\xe9t\xe9"), "v")]),  # NFD name read as NFC
    frame([("caf\xe9", "1"), (NFD_CAFE, "2")]),         # equal after NFC
    frame([("a", "1"), ("a", "2")]),
    frame([("", "x")]),
    frame([("a", "1")]) + b"\x00",
    frame([("a", "1")], count=2),
    b"WB\x02\x00\x01\x00\x01\xff\x00\x00\x00\x00",     # bad UTF-8
    b"WB\x02\x00\x01\x00\x05ab",
    b"WB\x02\x00\x01\x00\x01a\x00\x00\x00\x05xy",
]

ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-. ")
    + ["=", "\n", "\\", "\t", "\xe9", "e\u0301", "\xfc", "u\u0308", "\u212b",
       "\u540d", "\u524d", "\U0001f600", "\u00c5", "A\u030a", "\ufb01"]
)


def text(rng, lo, hi):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(lo, hi)))


def random_record(rng):
    pairs, seen = [], set()
    for _ in range(rng.randint(0, 6)):
        k = text(rng, 1, 8)
        key = unicodedata.normalize("NFC", k)
        if key in seen or key == "__eof__":
            continue
        seen.add(key)
        pairs.append((k, text(rng, 0, 12)))
    return pairs


def main():
    rng = random.Random(int(sys.argv[1]))
    cases = []
    for pairs in FIXED_RECORDS:
        cases.append(enc(pairs))
    for raw in FIXED_FRAMES:
        cases.append(dec(raw))
    cases += [
        [["fn", "encode", [{"$dict": [["a", 1]]}]]],
        [["fn", "encode", [{"$dict": [[1, "a"]]}]]],
        [["fn", "encode", [["a"]]]],
        [["fn", "decode", ["WB\x02\x00\x00"]]],
    ]
    for _ in range(60):
        pairs = random_record(rng)
        cases.append(enc(pairs))
        raw = frame(pairs)
        cases.append(dec(raw))
        if raw[3:]:
            cut = rng.randint(3, len(raw) - 1)
            cases.append(dec(raw[:cut]))                 # truncated
            flip = bytearray(raw)
            i = rng.randrange(len(flip))
            flip[i] ^= 1 << rng.randrange(8)
            cases.append(dec(bytes(flip)))               # one bit changed
        cases.append(dec(frame(pairs, magic=b"WB\x01")))  # its revision 1 frame
    # The binary sibling, after r2_bin was imported: it must still be the
    # revision 1 codec (r2_bin changes no other codec, in its file or at
    # run time).
    for pairs in [[("id", "42")], [("caf\xe9", "1")], random_record(rng), random_record(rng)]:
        cases.append([["modfn", "wire.r1_bin", "encode", [rec(pairs)]]])
        cases.append([["modfn", "wire.r1_bin", "decode", [b(frame(pairs, magic=b"WB\x01"))]]])
        cases.append([["modfn", "wire.r1_bin", "decode", [b(frame(pairs))]]])
    json.dump({"module": "wire.r2_bin", "cases": cases}, sys.stdout)


main()
