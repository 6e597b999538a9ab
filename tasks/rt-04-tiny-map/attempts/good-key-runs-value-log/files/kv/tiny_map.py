"""TinyMap: a small durable map from bytes keys to bytes values.

Key/value separation (the WiscKey layout), all under ``root``:

* ``values.log``: every value ever put, appended once and never rewritten;
* a memtable of recent writes, key -> 12-byte pointer (u64 offset, u32
  length) into ``values.log``, or a tombstone;
* sorted run files ``run-<gen>.dat`` of key -> pointer/tombstone, written
  when the memtable fills, merged pairwise so there are O(log n) of them.

A run file holds records, then a slot table (offset, lengths and a 16-byte
key prefix per record, in key order), then a trailer.  Nothing else is held
in RAM: a read binary-searches the slot tables with positioned reads, then
reads the single value it needs from ``values.log``.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

_SLOT = struct.Struct("<QIq16s")
_PREFIX = 16
_TRAILER = struct.Struct("<QI4s")
_MAGIC = b"TMR1"
_TOMBSTONE = -1


class _Run:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        end = os.fstat(self.fd).st_size
        self.slots_off, self.n, magic = _TRAILER.unpack(
            os.pread(self.fd, _TRAILER.size, end - _TRAILER.size))
        if magic != _MAGIC:
            raise ValueError(f"not a TinyMap run: {path}")
        self.size = self.slots_off

    def _slot(self, i: int):
        return _SLOT.unpack(os.pread(self.fd, _SLOT.size, self.slots_off + i * _SLOT.size))

    def find(self, key: bytes):
        """(found, value or None) by binary search over the slot table."""
        lo, hi = 0, self.n
        fd = self.fd
        want = key[:_PREFIX].ljust(_PREFIX, b"\0")
        while lo < hi:
            mid = (lo + hi) // 2
            koff, klen, vlen, prefix = self._slot(mid)
            if prefix != want:
                k = prefix          # prefixes differ: they decide the order
                key_cmp = want
            else:
                k = key if klen == len(key) <= _PREFIX else os.pread(fd, klen, koff)
                key_cmp = key
            if k == key_cmp:
                if vlen == _TOMBSTONE:
                    return True, None
                return True, os.pread(fd, vlen, koff + klen) if vlen else b""
            if k < key_cmp:
                lo = mid + 1
            else:
                hi = mid
        return False, None

    def items(self):
        with open(self.path, "rb") as f:
            for i in range(self.n):
                koff, klen, vlen, _ = self._slot(i)
                f.seek(koff)
                key = f.read(klen)
                yield key, (None if vlen == _TOMBSTONE else f.read(vlen))

    def close(self) -> None:
        os.close(self.fd)


def _write_run(path: Path, items) -> int:
    """Stream sorted (key, value|None) into a new run file; return its count."""
    tmp = path.with_name(path.name + ".part")
    slots = tmp.with_name(tmp.name + ".slots")
    n = 0
    pos = 0
    with open(tmp, "wb") as out, open(slots, "w+b") as sl:
        for key, val in items:
            out.write(key)
            if val:
                out.write(val)
            sl.write(_SLOT.pack(pos, len(key), _TOMBSTONE if val is None else len(val), key[:_PREFIX]))
            pos += len(key) + (len(val) if val else 0)
            n += 1
        sl.seek(0)
        while True:
            chunk = sl.read(16384)
            if not chunk:
                break
            out.write(chunk)
        out.write(_TRAILER.pack(pos, n, _MAGIC))
    slots.unlink()
    os.replace(tmp, path)
    return n


def _merge(newer, older, drop_tombstones: bool):
    a, b = iter(newer), iter(older)
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        if y is None or (x is not None and x[0] <= y[0]):
            if y is not None and x[0] == y[0]:
                y = next(b, None)
            out, x = x, next(a, None)
        else:
            out, y = y, next(b, None)
        if out[1] is None and drop_tombstones:
            continue
        yield out


class _KeyRuns:
    """Sorted key runs mapping key -> 12-byte value pointer (or tombstone)."""

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        for junk in list(self.root.glob("*.part")) + list(self.root.glob("*.slots")):
            junk.unlink()
        self._table: dict[bytes, bytes | None] = {}
        self._table_bytes = 0
        self._runs: list[_Run] | None = None   # oldest first

    def _open_runs(self) -> list[_Run]:
        if self._runs is None:
            paths = sorted(self.root.glob("run-*.dat"), key=lambda p: int(p.stem[4:]))
            self._runs = [_Run(p) for p in paths]
        return self._runs

    def _next_gen(self) -> int:
        runs = self._open_runs()
        return int(runs[-1].path.stem[4:]) + 1 if runs else 1

    def put(self, key: bytes, value: bytes) -> None:
        self._set(bytes(key), bytes(value))

    def delete(self, key: bytes) -> None:
        self._set(bytes(key), None)

    def _set(self, key: bytes, value) -> None:
        old = self._table.get(key, b"")
        self._table_bytes -= len(old or b"")
        self._table[key] = value
        self._table_bytes += len(key) + len(value or b"") + 80
        if self._table_bytes >= self.mem_budget_bytes // 2:
            self.flush()

    def get(self, key: bytes) -> bytes | None:
        key = bytes(key)
        if key in self._table:
            return self._table[key]
        for run in reversed(self._open_runs()):
            found, val = run.find(key)
            if found:
                return val
        return None

    def flush(self) -> None:
        if not self._table:
            return
        runs = self._open_runs()
        path = self.root / f"run-{self._next_gen():012d}.dat"
        _write_run(path, sorted(self._table.items()))
        self._table = {}
        self._table_bytes = 0
        runs.append(_Run(path))
        # binary-counter merging keeps O(log n) runs
        while len(runs) >= 2 and runs[-2].size <= 3 * runs[-1].size:
            newer, older = runs.pop(), runs.pop()
            path = self.root / f"run-{int(newer.path.stem[4:]) + 1:012d}.dat"
            _write_run(path, _merge(newer.items(), older.items(), drop_tombstones=not runs))
            for r in (newer, older):
                r.close()
                r.path.unlink()
            runs.append(_Run(path))

    def drop_cache(self) -> None:
        self.flush()
        self._table = {}
        self._table_bytes = 0
        for run in self._runs or []:
            run.close()
        self._runs = None

    def close(self) -> None:
        self.drop_cache()


_PTR = struct.Struct("<QI")


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``.

    ``mem_budget_bytes`` is how much memory the map may use for its own
    state (buffered writes, indexes, caches).
    """

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._keys = _KeyRuns(self.root, mem_budget_bytes=mem_budget_bytes)
        self._log_fd = -1
        self._log_end = 0

    def _log(self) -> int:
        if self._log_fd < 0:
            self._log_fd = os.open(self.root / "values.log",
                                   os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            self._log_end = os.fstat(self._log_fd).st_size
        return self._log_fd

    def put(self, key: bytes, value: bytes) -> None:
        value = bytes(value)
        fd = self._log()
        off = self._log_end
        view = memoryview(value)
        while view:
            view = view[os.write(fd, view):]
        self._log_end += len(value)
        self._keys.put(key, _PTR.pack(off, len(value)))

    def delete(self, key: bytes) -> None:
        self._keys.delete(key)

    def get(self, key: bytes) -> bytes | None:
        ptr = self._keys.get(key)
        if ptr is None:
            return None
        off, n = _PTR.unpack(ptr)
        return os.pread(self._log(), n, off) if n else b""

    def flush(self) -> None:
        if self._log_fd >= 0:
            os.fsync(self._log_fd)
        self._keys.flush()

    def drop_cache(self) -> None:
        self.flush()
        self._keys.drop_cache()
        if self._log_fd >= 0:
            os.close(self._log_fd)
            self._log_fd = -1
            self._log_end = 0

    def close(self) -> None:
        self.drop_cache()
