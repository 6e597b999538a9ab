"""TinyMap: a small durable map from bytes keys to bytes values.

Design: memtable + sorted run files read through short-lived mmaps, with no
in-memory index.

Every run file ``run-<gen>.dat`` under ``root`` is::

    [records]   key bytes | value bytes, back to back, in key order
    [slots]     one 36-byte slot per record, in key order:
                u64 key offset | u32 key length | i64 value length (-1: tombstone)
                | first 16 key bytes (zero padded)
    [trailer]   u64 slots offset | u32 slot count | 4s b"TMR1"

Each open run is mapped read-only; a read binary-searches the slot table
inside the mapping (so only slot-table pages are ever touched through the
map), and fetches full keys (on a prefix tie) and the one value it returns
with positioned reads, so record pages never become resident in the map.  When there are more than six runs, the small ones (or, once they add up to
half the base run, all of them, dropping tombstones) are merged into one with
a streaming k-way merge, one record in RAM at a time.
"""

from __future__ import annotations

import heapq
import mmap
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
        self.mm = None

    def _slot(self, i: int):
        return _SLOT.unpack(os.pread(self.fd, _SLOT.size, self.slots_off + i * _SLOT.size))

    def find(self, key: bytes):
        """(found, value or None) by binary search over the mapped slot table."""
        if self.n == 0:
            return False, None
        if self.mm is None:
            self.mm = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ)
        mm, fd = self.mm, self.fd
        lo, hi = 0, self.n
        base = self.slots_off
        want = key[:_PREFIX].ljust(_PREFIX, b"\0")
        while lo < hi:
            mid = (lo + hi) // 2
            koff, klen, vlen, prefix = _SLOT.unpack_from(mm, base + mid * _SLOT.size)
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
        if self.mm is not None:
            self.mm.close()
            self.mm = None
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


def _merge_all(runs_newest_first, drop_tombstones):
    """k-way merge; the newest version of each key wins."""
    streams = [((k, age, v) for k, v in run.items()) for age, run in enumerate(runs_newest_first)]
    last = None
    for key, _age, val in heapq.merge(*streams, key=lambda t: (t[0], t[1])):
        if key == last:
            continue
        last = key
        if val is not None or not drop_tombstones:
            yield key, val


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``.

    ``mem_budget_bytes`` is how much memory the map may use for its own
    state (buffered writes, indexes, caches).
    """

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
        if len(runs) > 6:
            # tiered: fold the small runs together; fold everything (and drop
            # tombstones) once the small ones reach half the size of the base
            whole = sum(r.size for r in runs[1:]) * 2 >= runs[0].size
            victims = runs[:] if whole else runs[1:]
            path = self.root / f"run-{self._next_gen():012d}.dat"
            _write_run(path, _merge_all(list(reversed(victims)), drop_tombstones=whole))
            for r in victims:
                r.close()
                r.path.unlink()
            runs[:] = ([] if whole else runs[:1]) + [_Run(path)]

    def drop_cache(self) -> None:
        self.flush()
        self._table = {}
        self._table_bytes = 0
        for run in self._runs or []:
            run.close()
        self._runs = None

    def close(self) -> None:
        self.drop_cache()
