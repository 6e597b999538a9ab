"""TinyMap that keeps the whole map in memory and dumps it on flush."""

from __future__ import annotations

import os
import struct
from pathlib import Path

HDR = struct.Struct(">HI")


class TinyMap:
    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._path = self.root / "data.bin"
        self._data: dict[bytes, bytes] | None = None

    def _load(self) -> dict[bytes, bytes]:
        if self._data is None:
            self._data = {}
            if self._path.exists():
                blob = self._path.read_bytes()
                pos = 0
                while pos < len(blob):
                    klen, vlen = HDR.unpack_from(blob, pos)
                    pos += HDR.size
                    k = blob[pos : pos + klen]
                    pos += klen
                    self._data[k] = blob[pos : pos + vlen]
                    pos += vlen
        return self._data

    def put(self, key: bytes, value: bytes) -> None:
        self._load()[bytes(key)] = bytes(value)

    def delete(self, key: bytes) -> None:
        self._load().pop(bytes(key), None)

    def get(self, key: bytes) -> bytes | None:
        return self._load().get(bytes(key))

    def flush(self) -> None:
        data = self._load()
        out = bytearray()
        for k, v in data.items():
            out += HDR.pack(len(k), len(v)) + k + v
        tmp = self._path.with_suffix(".tmp")
        tmp.write_bytes(out)
        os.replace(tmp, self._path)

    def drop_cache(self) -> None:
        self.flush()
        self._data = None

    def close(self) -> None:
        self.flush()
        self._data = None
