"""TinyMap on top of sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path


class TinyMap:
    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.root / "map.db")
        self._db.execute("CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL)")

    def put(self, key: bytes, value: bytes) -> None:
        self._db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, value))

    def delete(self, key: bytes) -> None:
        self._db.execute("DELETE FROM kv WHERE k = ?", (key,))

    def get(self, key: bytes) -> bytes | None:
        row = self._db.execute("SELECT v FROM kv WHERE k = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def flush(self) -> None:
        self._db.commit()

    def drop_cache(self) -> None:
        self.flush()

    def close(self) -> None:
        self._db.commit()
        self._db.close()
