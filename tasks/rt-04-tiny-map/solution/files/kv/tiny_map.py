"""TinyMap: a small durable map from bytes keys to bytes values.

Layout under ``root``:

* ``values.log``: every value ever flushed, appended; never rewritten.
* ``seg-NNNNNN.sst``: immutable sorted segments mapping keys to where
  their value is in the log, or to a tombstone. A segment is a run of
  records sorted by key, then a sparse index, then a fixed trailer::

      record:  klen u16 | vlen u32 (TOMBSTONE for a delete) | voff u64 | key
      index:   klen u16 | offset u64 | key      (every INDEX_EVERY-th record)
      trailer: index_offset u64 | index_count u32 | MAGIC

* ``MANIFEST``: the live segment names, oldest first, one a line. It is
  replaced atomically, so it always names a complete set of segments.

Writes go to an in-memory table (the memtable). When it grows past the
budget its values are appended to the log and its keys are written out
as a new segment. Segments hold no values, so they are small and cheap to
merge: two are merged while the older one is at most twice the size of
the newer, which keeps O(log n) of them. A read looks at the memtable,
then at each segment from newest to oldest (a bisect of its sparse index,
then one read of at most INDEX_EVERY records), then reads the value from
the log with one seek.

Space left in the log by overwritten and deleted values is not
reclaimed: the map is sized for small data sets. Nothing is fsynced: a
closed map is durable across processes, not across power loss.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

REC = struct.Struct(">HIQ")
IDX = struct.Struct(">HQ")
TRAILER = struct.Struct(">QI4s")
MAGIC = b"TMS2"
TOMBSTONE = 0xFFFFFFFF
INDEX_EVERY = 16
ENTRY_OVERHEAD = 96  # rough per-entry cost of a dict slot and two objects
LOG = "values.log"


def _parse(block: bytes):
    """Yields (key, vlen, voff) for each record of a block."""
    pos = 0
    while pos < len(block):
        klen, vlen, voff = REC.unpack_from(block, pos)
        pos += REC.size
        yield block[pos : pos + klen], vlen, voff
        pos += klen


class _Segment:
    """One open segment: its file handle and its sparse index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = path.stat().st_size
        self.f = open(path, "rb")
        self.f.seek(self.size - TRAILER.size)
        index_offset, count, magic = TRAILER.unpack(self.f.read(TRAILER.size))
        if magic != MAGIC:
            raise ValueError(f"{path}: not a segment")
        self.data_end = index_offset
        self.keys: list[bytes] = []
        self.offsets: list[int] = []
        block = self._read(index_offset, self.size - TRAILER.size)
        pos = 0
        for _ in range(count):
            klen, off = IDX.unpack_from(block, pos)
            pos += IDX.size
            self.keys.append(block[pos : pos + klen])
            self.offsets.append(off)
            pos += klen

    def _read(self, start: int, end: int) -> bytes:
        self.f.seek(start)
        return self.f.read(end - start)

    def lookup(self, key: bytes):
        """Returns (vlen, voff) of key's record, or None if it has none."""
        i = bisect.bisect_right(self.keys, key) - 1
        if i < 0:
            return None
        end = self.offsets[i + 1] if i + 1 < len(self.offsets) else self.data_end
        for k, vlen, voff in _parse(self._read(self.offsets[i], end)):
            if k == key:
                return vlen, voff
            if k > key:
                break
        return None

    def records(self):
        """Yields (key, vlen, voff) in key order."""
        return _parse(self._read(0, self.data_end))

    def close(self) -> None:
        self.f.close()


def _write_segment(path: Path, records) -> None:
    """Writes sorted (key, vlen, voff) records to path atomically."""
    tmp = path.with_suffix(".tmp")
    keys: list[bytes] = []
    offsets: list[int] = []
    with open(tmp, "wb") as f:
        for n, (k, vlen, voff) in enumerate(records):
            if n % INDEX_EVERY == 0:
                keys.append(k)
                offsets.append(f.tell())
            f.write(REC.pack(len(k), vlen, voff) + k)
        index_offset = f.tell()
        for k, off in zip(keys, offsets):
            f.write(IDX.pack(len(k), off) + k)
        f.write(TRAILER.pack(index_offset, len(keys), MAGIC))
    os.replace(tmp, path)


def _merge(newer, older, drop_tombstones: bool):
    """Merges two sorted record streams; newer wins on equal keys."""
    a, b = next(newer, None), next(older, None)
    while a is not None or b is not None:
        if b is None or (a is not None and a[0] < b[0]):
            rec, a = a, next(newer, None)
        elif a is None or b[0] < a[0]:
            rec, b = b, next(older, None)
        else:
            rec, a, b = a, next(newer, None), next(older, None)
        if drop_tombstones and rec[1] == TOMBSTONE:
            continue
        yield rec


class TinyMap:
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
        self._log = None  # read handle of the value log, opened lazily
        self._append = None  # append handle of the value log
        self._seq: int | None = None  # the last segment number used
        self._closed = False

    # -- the files ---------------------------------------------------------

    def _load(self) -> list[_Segment]:
        if self._segments is None:
            names = []
            manifest = self.root / "MANIFEST"
            if manifest.exists():
                names = manifest.read_text().split()
            self._segments = [_Segment(self.root / n) for n in names]
        return self._segments

    def _save_manifest(self) -> None:
        tmp = self.root / "MANIFEST.tmp"
        tmp.write_text("".join(s.path.name + "\n" for s in self._load()))
        os.replace(tmp, self.root / "MANIFEST")

    def _next_path(self) -> Path:
        if self._seq is None:
            self._seq = max((int(p.stem[4:]) for p in self.root.glob("seg-*.sst")), default=0)
        self._seq += 1
        return self.root / f"seg-{self._seq:06d}.sst"

    def _read_value(self, vlen: int, voff: int) -> bytes:
        if self._log is None:
            self._log = open(self.root / LOG, "rb")
        self._log.seek(voff)
        return self._log.read(vlen)

    # -- the API -----------------------------------------------------------

    def put(self, key: bytes, value: bytes) -> None:
        self._set(bytes(key), bytes(value))

    def delete(self, key: bytes) -> None:
        self._set(bytes(key), None)

    def _set(self, key: bytes, value: bytes | None) -> None:
        if key in self._mem:
            old = self._mem[key]
            self._mem_bytes -= len(key) + len(old or b"") + ENTRY_OVERHEAD
        self._mem[key] = value
        self._mem_bytes += len(key) + len(value or b"") + ENTRY_OVERHEAD
        if self._mem_bytes >= self.mem_budget_bytes * 3 // 4:
            self.flush()

    def get(self, key: bytes) -> bytes | None:
        key = bytes(key)
        if key in self._mem:
            return self._mem[key]
        for seg in reversed(self._load()):
            rec = seg.lookup(key)
            if rec is not None:
                vlen, voff = rec
                return None if vlen == TOMBSTONE else self._read_value(vlen, voff)
        return None

    def flush(self) -> None:
        if not self._mem:
            return
        segs = self._load()
        if self._append is None:
            self._append = open(self.root / LOG, "ab")
        log = self._append
        records = []
        for k in sorted(self._mem):
            v = self._mem[k]
            if v is None:
                records.append((k, TOMBSTONE, 0))
            else:
                records.append((k, len(v), log.tell()))
                log.write(v)
        log.flush()
        path = self._next_path()
        _write_segment(path, records)
        self._mem = {}
        self._mem_bytes = 0
        segs.append(_Segment(path))
        merged = self._compact()
        self._save_manifest()
        for s in merged:
            s.close()
            s.path.unlink()

    def _compact(self) -> list[_Segment]:
        """Merges segments; returns the ones merged away (still on disk)."""
        segs = self._load()
        gone = []
        while len(segs) > 1 and segs[-2].size <= 2 * segs[-1].size:
            newer, older = segs.pop(), segs.pop()
            path = self._next_path()
            _write_segment(path, _merge(newer.records(), older.records(), drop_tombstones=not segs))
            segs.append(_Segment(path))
            gone += [newer, older]
        return gone

    def drop_cache(self) -> None:
        self.flush()
        for s in self._segments or []:
            s.close()
        for f in (self._log, self._append):
            if f is not None:
                f.close()
        self._segments = None
        self._log = None
        self._append = None
        self._seq = None
        self._mem = {}
        self._mem_bytes = 0

    def close(self) -> None:
        if self._closed:
            return
        self.drop_cache()
        self._closed = True
