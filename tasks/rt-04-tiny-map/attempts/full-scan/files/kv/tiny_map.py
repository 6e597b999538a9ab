"""TinyMap with a memtable and append-only log segments, no index.

A read scans every segment from newest to oldest, record by record.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

HDR = struct.Struct(">HI")
TOMBSTONE = 0xFFFFFFFF


class TinyMap:
    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._mem: dict[bytes, bytes | None] = {}
        self._mem_bytes = 0

    def _segments(self) -> list[Path]:
        return sorted(self.root.glob("seg-*.log"))

    def put(self, key: bytes, value: bytes) -> None:
        self._mem[bytes(key)] = bytes(value)
        self._mem_bytes += len(key) + len(value) + 64
        if self._mem_bytes >= self.mem_budget_bytes // 2:
            self.flush()

    def delete(self, key: bytes) -> None:
        self._mem[bytes(key)] = None
        self._mem_bytes += len(key) + 64

    def get(self, key: bytes) -> bytes | None:
        key = bytes(key)
        if key in self._mem:
            return self._mem[key]
        for seg in reversed(self._segments()):
            found, value = False, None
            with open(seg, "rb") as f:
                while True:
                    hdr = f.read(HDR.size)
                    if not hdr:
                        break
                    klen, vlen = HDR.unpack(hdr)
                    k = f.read(klen)
                    if k == key:
                        found = True
                        value = None if vlen == TOMBSTONE else f.read(vlen)
                    elif vlen != TOMBSTONE:
                        f.seek(vlen, os.SEEK_CUR)
            if found:
                return value
        return None

    def flush(self) -> None:
        if not self._mem:
            return
        n = len(self._segments())
        path = self.root / f"seg-{n:06d}.log"
        with open(path, "wb") as f:
            for k, v in self._mem.items():
                if v is None:
                    f.write(HDR.pack(len(k), TOMBSTONE) + k)
                else:
                    f.write(HDR.pack(len(k), len(v)) + k + v)
        self._mem = {}
        self._mem_bytes = 0

    def drop_cache(self) -> None:
        self.flush()

    def close(self) -> None:
        self.flush()
