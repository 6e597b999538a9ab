"""TinyMap: a small durable map from bytes keys to bytes values.

Layout under ``root``:

* ``seg-<seq>-L<level>.sst``: immutable sorted segment files, newer = higher seq.
  Each is a run of records ``[klen u32][vlen i64][key][value]`` in key order
  (``vlen == -1`` is a tombstone, ``vlen == 0`` an empty value), then a sparse
  index (every ``INDEX_EVERY``-th record: ``[klen u32][offset u64][key]``),
  then a Bloom filter of its keys, then a fixed footer.
* The memtable (recent writes, bounded by half the memory budget)
  lives only in RAM until ``flush()``.

A read checks the memtable, then the segments newest first; in a segment it
bisects the sparse index and reads at most ``INDEX_EVERY`` record headers.
Segments carry a level in their name; FANOUT segments of one level are merged
(streaming k-way merge, record by record) into one of the next level, so no
segment is ever loaded whole.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import re
import struct
from bisect import bisect_right
from pathlib import Path

_REC = struct.Struct(">Iq")        # key length, value length (-1: tombstone)
_IDX = struct.Struct(">IQ")        # key length, record offset
_FOOT = struct.Struct(">QIIQI4s")  # index off, index entries, records, bloom off, bloom bits, magic
_MAGIC = b"TMS2"
_TOMB = -1
_NAME = re.compile(r"^seg-(\d{10})-L(\d{2})\.sst$")
INDEX_EVERY = 4
FANOUT = 8
_BLOOM_BITS_PER_KEY = 10
_BLOOM_PROBES = 4


def _bloom_hashes(key: bytes) -> tuple[int, int]:
    d = hashlib.blake2b(key, digest_size=16).digest()
    return int.from_bytes(d[:8], "big"), int.from_bytes(d[8:], "big") | 1


def _write_segment(path: Path, items, max_items: int) -> int:
    """Write (key, value|None) pairs (sorted by key) to path; return count."""
    tmp = path.with_suffix(".tmp")
    bits = max(64, max_items * _BLOOM_BITS_PER_KEY)
    bloom = bytearray((bits + 7) // 8)
    index = []
    n = 0
    with open(tmp, "wb", buffering=1 << 16) as f:
        pos = 0
        for key, value in items:
            if n % INDEX_EVERY == 0:
                index.append((key, pos))
            vlen = _TOMB if value is None else len(value)
            f.write(b"".join((_REC.pack(len(key), vlen), key, value or b"")))
            h1, h2 = _bloom_hashes(key)
            for i in range(_BLOOM_PROBES):
                b = (h1 + i * h2) % bits
                bloom[b >> 3] |= 1 << (b & 7)
            pos += _REC.size + len(key) + max(vlen, 0)
            n += 1
        if n == 0:
            f.close()
            tmp.unlink()
            return 0
        idx_off = pos
        for key, off in index:
            f.write(_IDX.pack(len(key), off))
            f.write(key)
        bloom_off = f.tell()
        f.write(bloom)
        f.write(_FOOT.pack(idx_off, len(index), n, bloom_off, bits, _MAGIC))
    os.replace(tmp, path)
    return n


class _Segment:
    """One on-disk segment; its sparse index and handle are loaded lazily."""

    __slots__ = ("path", "seq", "level", "size", "count", "_f", "_keys", "_offs", "_end", "_bloom", "_bits")

    def __init__(self, path: Path, seq: int, level: int) -> None:
        self.path = path
        self.seq = seq
        self.level = level
        self.size = path.stat().st_size
        self._f = None
        self._keys = self._offs = None
        self._end = 0
        self.count = 0
        self._bloom = None
        self._bits = 1

    def _load(self) -> None:
        f = open(self.path, "rb", buffering=4096)
        f.seek(self.size - _FOOT.size)
        idx_off, n_idx, n_rec, bloom_off, bits, magic = _FOOT.unpack(f.read(_FOOT.size))
        if magic != _MAGIC:
            f.close()
            raise ValueError("corrupt segment %s" % self.path)
        f.seek(idx_off)
        keys, offs = [], []
        for _ in range(n_idx):
            klen, off = _IDX.unpack(f.read(_IDX.size))
            keys.append(f.read(klen))
            offs.append(off)
        f.seek(bloom_off)
        self._bloom = f.read((bits + 7) // 8)
        self._bits = bits
        self.count = n_rec
        self._f, self._keys, self._offs, self._end = f, keys, offs, idx_off

    def lookup(self, key: bytes, hashes: tuple[int, int]):
        """Return (found, value-or-None-for-tombstone)."""
        if self._f is None:
            self._load()
        h1, h2 = hashes
        bloom, bits = self._bloom, self._bits
        for i in range(_BLOOM_PROBES):
            b = (h1 + i * h2) % bits
            if not bloom[b >> 3] & (1 << (b & 7)):
                return False, None
        i = bisect_right(self._keys, key) - 1
        if i < 0:
            return False, None
        pos = self._offs[i]
        end = self._offs[i + 1] if i + 1 < len(self._offs) else self._end
        f = self._f
        f.seek(pos)
        while pos < end:
            klen, vlen = _REC.unpack(f.read(_REC.size))
            k = f.read(klen)
            if k == key:
                return True, (None if vlen == _TOMB else f.read(vlen))
            if k > key:
                break
            pos += _REC.size + klen + max(vlen, 0)
            if vlen > 0:
                f.seek(pos)
        return False, None

    def records(self):
        """Stream (key, value|None) in key order, one record in memory."""
        if self._f is None:
            self._load()
        end = self._end
        with open(self.path, "rb", buffering=1 << 14) as f:
            pos = 0
            while pos < end:
                klen, vlen = _REC.unpack(f.read(_REC.size))
                key = f.read(klen)
                value = None if vlen == _TOMB else f.read(vlen)
                pos += _REC.size + klen + max(vlen, 0)
                yield key, value

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
        self._f = self._keys = self._offs = self._bloom = None


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``.

    ``mem_budget_bytes`` is how much memory the map may use for its own
    state (buffered writes, indexes, caches).
    """

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._mem_limit = max(4096, mem_budget_bytes // 2)
        self._mem: dict[bytes, bytes | None] = {}
        self._mem_bytes = 0
        for stale in self.root.glob("seg-*.tmp"):
            stale.unlink()
        self._segs: list[_Segment] | None = None

    # -- segments ---------------------------------------------------------
    def _segments(self) -> list[_Segment]:
        if self._segs is None:
            found = []
            for p in self.root.iterdir():
                m = _NAME.match(p.name)
                if m:
                    found.append(_Segment(p, int(m.group(1)), int(m.group(2))))
            found.sort(key=lambda s: s.seq)
            self._segs = found
        return self._segs

    def _new_path(self, level: int) -> tuple[Path, int]:
        segs = self._segments()
        seq = (segs[-1].seq + 1) if segs else 1
        return self.root / ("seg-%010d-L%02d.sst" % (seq, level)), seq

    def _compact(self) -> None:
        """Base-FANOUT counter: FANOUT segments of one level merge into one
        segment of the next level (a streaming k-way merge)."""
        segs = self._segments()
        while len(segs) >= FANOUT and len({s.level for s in segs[-FANOUT:]}) == 1:
            group = segs[-FANOUT:]
            bottom = len(segs) == FANOUT         # nothing older: drop tombstones
            for s in group:
                if s._f is None:
                    s._load()                    # footer, index and Bloom filter
            streams = [((k, rank, v) for k, v in s.records())
                       for rank, s in enumerate(reversed(group))]   # newest: rank 0
            merged = heapq.merge(*streams, key=lambda r: (r[0], r[1]))

            def dedup():
                last = None
                for k, _rank, v in merged:
                    if k == last:
                        continue
                    last = k
                    if v is None and bottom:
                        continue
                    yield k, v

            level = group[0].level + 1
            path, seq = self._new_path(level)
            n = _write_segment(path, dedup(), sum(s.count for s in group))
            for s in group:
                s.close()
                s.path.unlink()
            del segs[-FANOUT:]
            if n:
                segs.append(_Segment(path, seq, level))

    # -- API --------------------------------------------------------------
    @staticmethod
    def _key(key) -> bytes:
        if not isinstance(key, (bytes, bytearray, memoryview)):
            raise TypeError("keys must be bytes")
        return bytes(key)

    def _buffer(self, key: bytes, value: bytes | None) -> None:
        if key in self._mem:
            old = self._mem[key]
            self._mem_bytes -= len(key) + (len(old) if old else 0) + 64
        self._mem[key] = value
        self._mem_bytes += len(key) + len(value or b"") + 64
        if self._mem_bytes >= self._mem_limit:
            self.flush()

    def put(self, key: bytes, value: bytes) -> None:
        key = self._key(key)
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError("values must be bytes")
        self._buffer(key, bytes(value))

    def delete(self, key: bytes) -> None:
        self._buffer(self._key(key), None)

    def get(self, key: bytes) -> bytes | None:
        key = self._key(key)
        if key in self._mem:
            return self._mem[key]
        hashes = _bloom_hashes(key)
        for seg in reversed(self._segments()):
            found, value = seg.lookup(key, hashes)
            if found:
                return value
        return None

    def flush(self) -> None:
        if not self._mem:
            return
        path, seq = self._new_path(0)
        if _write_segment(path, sorted(self._mem.items()), len(self._mem)):
            self._segments().append(_Segment(path, seq, 0))
        self._mem.clear()
        self._mem_bytes = 0
        self._compact()

    def drop_cache(self) -> None:
        self.flush()
        if self._segs is not None:
            for s in self._segs:
                s.close()
        self._segs = None            # re-read the directory on next use

    def close(self) -> None:
        self.drop_cache()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
