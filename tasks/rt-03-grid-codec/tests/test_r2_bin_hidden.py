"""Hidden vectors for RT-03: the revision 2 binary codec."""

import ast
import importlib
import pathlib
import struct
import sys
import types
import unicodedata

import pytest

from wire import r1_bin, r2_bin, r2_text

# Golden frames of the revision 2 binary codec: (id, record, frame hex).
VECTORS = [
    ("empty_record", {}, "5742020000"),
    ("empty_value", {"a": ""}, "574202000100016100000000"),
    ("plain", {"id": "42", "name": "widget"}, "57420200020002696400000002343200046e616d6500000006776964676574"),
    ("nfc_name", {"caf\xe9": "x", "k=v": "1"}, "57420200020005636166c3a9000000017800036b3d760000000131"),
    ("nfd_value_kept", {"z": "e\u0301\n"}, "574202000100017a0000000465cc810a"),
    ("multibyte", {"\u540d\u524d": "\u5024\\\\", "emoji": "\U0001f600"},
     "57420200020006e5908de5898d00000005e580a45c5c0005656d6f6a6900000004f09f9880"),
]
IDS = [v[0] for v in VECTORS]


@pytest.mark.parametrize("name, record, frame", VECTORS, ids=IDS)
def test_encode_golden(name, record, frame):
    assert r2_bin.encode(record).hex() == frame


@pytest.mark.parametrize("name, record, frame", VECTORS, ids=IDS)
def test_decode_golden(name, record, frame):
    assert r2_bin.decode(bytes.fromhex(frame)) == record


def test_nfd_name_is_encoded_as_nfc():
    nfd = unicodedata.normalize("NFD", "caf\xe9")
    assert nfd != "caf\xe9"
    got = r2_bin.encode({nfd: "x", "k=v": "1"})
    assert got.hex() == VECTORS[3][2]


def test_nfd_name_in_frame_decodes_as_nfc():
    nfd = unicodedata.normalize("NFD", "\xe9t\xe9").encode("utf-8")
    frame = b"WB\x02" + struct.pack(">H", 1) + struct.pack(">H", len(nfd)) + nfd + struct.pack(">I", 1) + b"v"
    assert r2_bin.decode(frame) == {"\xe9t\xe9": "v"}


def test_names_equal_after_nfc_collide():
    with pytest.raises(ValueError):
        r2_bin.encode({"caf\xe9": "1", unicodedata.normalize("NFD", "caf\xe9"): "2"})


def test_nfc_agrees_with_text_codec():
    rec = {unicodedata.normalize("NFD", "\xfcber"): "1", "\u212b": "2"}
    assert r2_bin.decode(r2_bin.encode(rec)) == r2_text.decode(r2_text.encode(rec))


def test_sentinel_rejected_on_encode():
    with pytest.raises(ValueError):
        r2_bin.encode({"id": "1", "__eof__": ""})


def test_sentinel_rejected_on_decode():
    name = b"__eof__"
    frame = b"WB\x02" + struct.pack(">H", 1) + struct.pack(">H", len(name)) + name + struct.pack(">I", 0)
    with pytest.raises(ValueError):
        r2_bin.decode(frame)


def test_r1_frame_rejected():
    with pytest.raises(ValueError):
        r2_bin.decode(r1_bin.encode({"id": "42"}))


def test_r2_frame_not_r1():
    frame = r2_bin.encode({"id": "42"})
    assert frame[:3] == b"WB\x02"
    with pytest.raises(ValueError):
        r1_bin.decode(frame)


def test_not_the_text_transport():
    frame = r2_bin.encode({"id": "42"})
    assert frame != r2_text.encode({"id": "42"})
    with pytest.raises(ValueError):
        r2_bin.decode(r2_text.encode({"id": "42"}))


def test_bin_names_may_hold_line_syntax():
    rec = {"a=b": "1", "two\nlines": "2", "back\\slash": "3"}
    assert r2_bin.decode(r2_bin.encode(rec)) == rec


def test_value_not_normalized():
    rec = {"k": unicodedata.normalize("NFD", "\xe9")}
    assert r2_bin.decode(r2_bin.encode(rec)) == rec


PLAIN = bytes.fromhex(VECTORS[2][2])


@pytest.mark.parametrize("frame", [
    b"",
    b"WB",
    b"WB\x02",
    b"WB\x02\x00",
    PLAIN[:-1],
    PLAIN[:8],
    PLAIN + b"\x00",
    b"WB\x02\x00\x01\x00\x05ab",
    b"WB\x02\x00\x01\x00\x01a\x00\x00\x00\x05xy",
    b"WB\x02\x00\x01\x00\x00\x00\x00\x00\x00",
    b"WB\x02\x00\x02\x00\x01a\x00\x00\x00\x00\x00\x01a\x00\x00\x00\x00",
    b"WB\x02\x00\x01\x00\x01\xff\x00\x00\x00\x00",
    b"XX\x02\x00\x00",
], ids=["empty", "short_magic", "no_count", "half_count", "truncated_value", "truncated_name_len",
        "trailing_byte", "truncated_name", "truncated_value_len", "empty_name", "duplicate", "bad_utf8",
        "bad_magic"])
def test_malformed_frames(frame):
    with pytest.raises(ValueError):
        r2_bin.decode(frame)


@pytest.mark.parametrize("record, exc", [
    ({"": "x"}, ValueError),
    ({"a": 1}, TypeError),
    ({1: "a"}, TypeError),
    (["a"], TypeError),
])
def test_bad_records(record, exc):
    with pytest.raises(exc):
        r2_bin.encode(record)


def test_decode_wants_bytes():
    with pytest.raises(TypeError):
        r2_bin.decode("WB\x02\x00\x00")


# The transport rule: the binary codec never reaches the text codecs.

TEXT_MODULES = {"wire.r1_text", "wire.r2_text", "r1_text", "r2_text"}


def test_r2_bin_never_uses_text_statically():
    path = pathlib.Path(r2_bin.__file__)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ("." * node.level) + (node.module or "")
            names = [base] + [base.rstrip(".") + "." + a.name if base.strip(".") else a.name for a in node.names]
        else:
            continue
        for n in names:
            bare = n.lstrip(".")
            assert bare not in TEXT_MODULES and not bare.endswith("_text"), "r2_bin imports %s" % n


class _TextReached(BaseException):
    """Raised by a poisoned text module; not an Exception, so a codec's
    own error handling cannot swallow it."""


class _Poison(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise _TextReached("the binary codec reached %s.%s" % (self.__name__, attr))


def test_r2_bin_never_uses_text_at_runtime(monkeypatch):
    """Only the transport rule: wrong frames are the vector tests' business."""
    import wire
    monkeypatch.setattr(wire, "r2_bin", r2_bin)
    monkeypatch.setitem(sys.modules, "wire.r2_bin", r2_bin)
    for mod in ("wire.r1_text", "wire.r2_text"):
        poison = _Poison(mod)
        monkeypatch.setitem(sys.modules, mod, poison)
        monkeypatch.setattr(wire, mod.split(".")[1], poison)
    del sys.modules["wire.r2_bin"]
    try:
        fresh = importlib.import_module("wire.r2_bin")
        calls = [(fresh.encode, record) for _, record, _ in VECTORS]
        calls += [(fresh.decode, bytes.fromhex(frame)) for _, _, frame in VECTORS]
        calls += [(fresh.encode, {"__eof__": "x"}), (fresh.decode, b"WB\x02\x00\x01")]
        for fn, arg in calls:
            try:
                fn(arg)
            except Exception:
                pass
    except _TextReached as e:
        pytest.fail(str(e))
