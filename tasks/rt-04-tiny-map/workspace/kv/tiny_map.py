"""TinyMap: a small durable map from bytes keys to bytes values."""

from __future__ import annotations

from pathlib import Path


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``.

    ``mem_budget_bytes`` is how much memory the map may use for its own
    state (buffered writes, indexes, caches).
    """

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
        # TODO: write buffered changes to disk.
        pass

    def drop_cache(self) -> None:
        # TODO: flush, then forget all state held in memory.
        pass

    def close(self) -> None:
        self.flush()
