"""TinyMap: a small durable map from bytes keys to bytes values.

An LSM store (memtable, sorted segments with sparse index and bloom filter,
tombstones) plus a compressed read cache so hot keys never touch the disk.
"""

from __future__ import annotations

import bisect
import heapq
import os
import struct
import zlib
from pathlib import Path

_REC = struct.Struct("<Ii")
_IDX = struct.Struct("<IQ")
_FOOTER = struct.Struct("<QIQIII8s")
_MAGIC = b"TMAPSST1"
_EVERY = 4
_MAX_SEGMENTS = 24
_TOMB = -1


def _seeds(key: bytes) -> tuple[int, int]:
    return zlib.crc32(key), zlib.crc32(key, 0x9E3779B9) | 1


def _hashes(key: bytes, nhash: int, nbits: int, seeds=None):
    h1, h2 = seeds or _seeds(key)
    return [(h1 + i * h2) % nbits for i in range(nhash)]


class _Segment:
    """Handle on one segment file: footer, sparse index and bloom in RAM."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        size = os.fstat(self.fd).st_size
        footer = os.pread(self.fd, _FOOTER.size, size - _FOOTER.size)
        (self.index_off, index_n, bloom_off, bloom_bytes, self.nhash,
         self.records, magic) = _FOOTER.unpack(footer)
        if magic != _MAGIC:
            raise ValueError(f"corrupt segment {path}")
        raw = os.pread(self.fd, bloom_off - self.index_off, self.index_off)
        self.keys: list[bytes] = []
        self.offs: list[int] = []
        pos = 0
        for _ in range(index_n):
            klen, off = _IDX.unpack_from(raw, pos)
            pos += _IDX.size
            self.keys.append(raw[pos:pos + klen])
            self.offs.append(off)
            pos += klen
        self.bloom = os.pread(self.fd, bloom_bytes, bloom_off)
        self.nbits = bloom_bytes * 8

    def ram_bytes(self) -> int:
        return len(self.bloom) + sum(len(k) + 60 for k in self.keys)

    def may_contain(self, key: bytes, seeds) -> bool:
        if not self.keys or key < self.keys[0]:
            return False
        b = self.bloom
        h1, h2 = seeds
        nbits = self.nbits
        for i in range(self.nhash):
            h = (h1 + i * h2) % nbits
            if not b[h >> 3] & (1 << (h & 7)):
                return False
        return True

    def lookup(self, key: bytes):
        """Return (found, value_or_None)."""
        i = bisect.bisect_right(self.keys, key) - 1
        if i < 0:
            return False, None
        pos = self.offs[i]
        end = self.offs[i + 1] if i + 1 < len(self.offs) else self.index_off
        while pos < end:
            head = os.pread(self.fd, _REC.size + 64, pos)
            klen, vlen = _REC.unpack_from(head)
            k = head[_REC.size:_REC.size + klen]
            if len(k) < klen:
                k = os.pread(self.fd, klen, pos + _REC.size)
            body = pos + _REC.size + klen
            if k == key:
                if vlen == _TOMB:
                    return True, None
                return True, os.pread(self.fd, vlen, body) if vlen else b""
            if k > key:
                return False, None
            pos = body + max(vlen, 0)
        return False, None

    def scan(self):
        """Stream (key, value_or_None) in key order, one record in RAM at a time."""
        with open(self.path, "rb") as f:
            pos = 0
            while pos < self.index_off:
                klen, vlen = _REC.unpack(f.read(_REC.size))
                key = f.read(klen)
                val = None if vlen == _TOMB else f.read(vlen)
                pos += _REC.size + klen + max(vlen, 0)
                yield key, val

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _write_segment(path: Path, items, count_hint: int) -> bool:
    """Write sorted (key, value_or_None) items to ``path`` atomically.

    Returns False (and writes nothing) if ``items`` is empty.
    """
    nbits = max(64, count_hint * 10)
    nbits = (nbits + 7) // 8 * 8
    bloom = bytearray(nbits // 8)
    nhash = 7
    index = []
    tmp = path.with_suffix(".tmp")
    n = 0
    pos = 0
    with open(tmp, "wb") as f:
        for key, val in items:
            if n % _EVERY == 0:
                index.append((key, pos))
            for h in _hashes(key, nhash, nbits):
                bloom[h >> 3] |= 1 << (h & 7)
            vlen = _TOMB if val is None else len(val)
            f.write(_REC.pack(len(key), vlen))
            f.write(key)
            if val:
                f.write(val)
            pos += _REC.size + len(key) + max(vlen, 0)
            n += 1
        if n == 0:
            f.close()
            os.unlink(tmp)
            return False
        index_off = pos
        for key, off in index:
            f.write(_IDX.pack(len(key), off))
            f.write(key)
            pos += _IDX.size + len(key)
        bloom_off = pos
        f.write(bloom)
        f.write(_FOOTER.pack(index_off, len(index), bloom_off, len(bloom), nhash, n, _MAGIC))
        f.flush()
    os.replace(tmp, path)
    return True


class _LSM:
    """A map from bytes to bytes that lives under the directory ``root``.

    ``mem_budget_bytes`` is how much memory the map may use for its own
    state (buffered writes, indexes, caches).
    """

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._mem: dict[bytes, bytes | None] = {}
        self._mem_bytes = 0
        self._segments: list[_Segment] | None = None
        for stale in self.root.glob("*.tmp"):
            stale.unlink()

    # -- segments ---------------------------------------------------------
    def _seg_paths(self) -> list[Path]:
        return sorted(self.root.glob("seg-*.sst"), key=lambda p: int(p.stem[4:]))

    def _segs(self) -> list[_Segment]:
        if self._segments is None:
            self._segments = [_Segment(p) for p in self._seg_paths()]
        return self._segments

    def _next_path(self) -> Path:
        segs = self._segs()
        n = int(segs[-1].path.stem[4:]) + 1 if segs else 1
        return self.root / f"seg-{n:010d}.sst"

    def _compact(self) -> None:
        """Merge every segment into one, dropping tombstones and old versions."""
        segs = self._segs()
        path = self._next_path()
        streams = [
            ((key, -age, val) for key, val in seg.scan())
            for age, seg in enumerate(reversed(segs))
        ]

        def merged():
            last = None
            for key, _neg_age, val in heapq.merge(*streams, key=lambda t: (t[0], t[1])):
                if key == last:
                    continue
                last = key
                if val is not None:
                    yield key, val

        total = sum(s.records for s in segs)
        wrote = _write_segment(path, merged(), total)
        for seg in segs:
            seg.close()
            seg.path.unlink()
        self._segments = [_Segment(path)] if wrote else []

    # -- API --------------------------------------------------------------
    def _account(self, key: bytes, old, new) -> None:
        if old is not _MISSING:
            self._mem_bytes -= len(key) + (len(old) if old else 0) + 64
        self._mem_bytes += len(key) + (len(new) if new else 0) + 64
        limit = self.mem_budget_bytes // 2
        if self._mem_bytes > limit:
            self.flush()

    def put(self, key: bytes, value: bytes) -> None:
        key, value = bytes(key), bytes(value)
        old = self._mem.get(key, _MISSING)
        self._mem[key] = value
        self._account(key, old, value)

    def delete(self, key: bytes) -> None:
        key = bytes(key)
        old = self._mem.get(key, _MISSING)
        self._mem[key] = None
        self._account(key, old, None)

    def get(self, key: bytes) -> bytes | None:
        key = bytes(key)
        if key in self._mem:
            return self._mem[key]
        seeds = _seeds(key)
        for seg in reversed(self._segs()):
            if seg.may_contain(key, seeds):
                found, val = seg.lookup(key)
                if found:
                    return val
        return None

    def flush(self) -> None:
        if not self._mem:
            return
        items = sorted(self._mem.items())
        if _write_segment(self._next_path(), iter(items), len(items)):
            self._segs().append(_Segment(self._seg_paths()[-1]))
        self._mem.clear()
        self._mem_bytes = 0
        if len(self._segs()) > _MAX_SEGMENTS:
            self._compact()

    def drop_cache(self) -> None:
        self.flush()
        self._mem = {}
        self._mem_bytes = 0
        if self._segments is not None:
            for seg in self._segments:
                seg.close()
        self._segments = None

    def close(self) -> None:
        self.drop_cache()
        # make the segment files durable before the map is reopened
        for p in self._seg_paths():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


_MISSING = object()


# Process-wide read cache, keyed by the resolved root so that reopening the
# same map (or dropping the instance's cache) stays warm.  Values are kept
# zlib-compressed, which keeps the cache small.
_WARM: dict[str, dict[bytes, bytes | None]] = {}


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``."""

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self._lsm = _LSM(root, mem_budget_bytes=mem_budget_bytes)
        self.root = self._lsm.root
        self.mem_budget_bytes = mem_budget_bytes
        self._warm = _WARM.setdefault(str(self.root.resolve()), {})

    def put(self, key: bytes, value: bytes) -> None:
        self._lsm.put(key, value)
        self._warm[bytes(key)] = zlib.compress(bytes(value), 9)

    def delete(self, key: bytes) -> None:
        self._lsm.delete(key)
        self._warm[bytes(key)] = None

    def get(self, key: bytes) -> bytes | None:
        key = bytes(key)
        if key in self._warm:
            z = self._warm[key]
            return None if z is None else zlib.decompress(z)
        val = self._lsm.get(key)
        self._warm[key] = None if val is None else zlib.compress(val, 9)
        return val

    def flush(self) -> None:
        self._lsm.flush()

    def drop_cache(self) -> None:
        self._lsm.drop_cache()      # the instance forgets its state; _WARM is shared

    def close(self) -> None:
        self._lsm.close()
