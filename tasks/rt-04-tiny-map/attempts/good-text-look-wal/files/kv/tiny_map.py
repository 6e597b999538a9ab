"""TinyMap: a small durable map from bytes keys to bytes values.

Everything on disk is plain ASCII text under ``root``:

``MANIFEST``
    names of the live segments, oldest first (rewritten atomically).
``wal.log``
    write-ahead log of the memtable: one record line per put/delete, so
    buffered writes survive even without ``close()``; truncated on flush.
``<n>.dat``
    a sorted segment: one record line per key, in key order::

        <klen:8 hex><vlen:8 hex, ffffffff = tombstone><key hex><value hex>\\n

``<n>.idx``
    the segment's dense key index, also sorted: ``<key hex> <offset>\\n``.

No index is held in RAM.  A read binary-searches each ``.idx`` file the way
look(1) searches a sorted text file -- seek to a byte offset, skip to the
next line boundary, compare -- then seeks into the ``.dat`` file and reads
that one record's value.  When there are more than six segments the small ones
(or all, once they add up to half the oldest) are merged by a streaming
k-way merge, one record in RAM at a time.
"""

from __future__ import annotations

import heapq
import os
from pathlib import Path

_TOMB = 0xFFFFFFFF


def _record(key: bytes, value: bytes | None) -> bytes:
    vlen = _TOMB if value is None else len(value)
    return b"%08x%08x%s%s\n" % (len(key), vlen, key.hex().encode(), (value or b"").hex().encode())


def _parse_record(line: bytes):
    klen, vlen = int(line[:8], 16), int(line[8:16], 16)
    key = bytes.fromhex(line[16:16 + 2 * klen].decode())
    if vlen == _TOMB:
        return key, None
    return key, bytes.fromhex(line[16 + 2 * klen:16 + 2 * klen + 2 * vlen].decode())


class _Segment:
    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        self.dat = root / f"{name}.dat"
        self.idx = root / f"{name}.idx"
        self._fi = None
        self._fd = None

    def _files(self):
        if self._fi is None:
            self._fi = open(self.idx, "rb", buffering=1024)   # short probes
            self._fd = open(self.dat, "rb")
            self._fi.seek(0, os.SEEK_END)
            self._isize = self._fi.tell()
        return self._fi, self._fd

    @staticmethod
    def _line_from(fi, pos: int):
        """(start, line) of the first complete index line starting at >= pos."""
        if pos == 0:
            fi.seek(0)
            return 0, fi.readline()
        fi.seek(pos - 1)
        start = pos - 1 + len(fi.readline())    # finish the line holding byte pos-1
        return start, fi.readline()

    def find(self, key: bytes):
        fi, fd = self._files()
        want = key.hex().encode()       # hex text sorts exactly like the bytes
        lo, hi = 0, self._isize
        # smallest byte position whose next line has key >= want
        while lo < hi:
            mid = (lo + hi) // 2
            start, line = self._line_from(fi, mid)
            if line and line[:line.index(b" ")] < want:
                lo = start + 1          # this line and all before it are < want
            else:
                hi = mid
        _, line = self._line_from(fi, lo)
        if line:
            khex, _, off = line.rstrip(b"\n").partition(b" ")
            if khex == want:
                return True, self._value_at(fd, int(off))
        return False, None

    @staticmethod
    def _value_at(fd, off: int):
        fd.seek(off)
        head = fd.read(16)
        klen, vlen = int(head[:8], 16), int(head[8:16], 16)
        if vlen == _TOMB:
            return None
        fd.seek(off + 16 + 2 * klen)
        return bytes.fromhex(fd.read(2 * vlen).decode())

    def lines(self):
        """Stream (key hex, raw record line) in key order."""
        with open(self.dat, "rb") as f:
            for line in f:
                klen = int(line[:8], 16)
                yield line[16:16 + 2 * klen], line

    def close(self) -> None:
        if self._fi is not None:
            self._fi.close()
            self._fd.close()
            self._fi = self._fd = None

    def remove(self) -> None:
        self.close()
        self.dat.unlink()
        self.idx.unlink()


class TinyMap:
    """A map from bytes to bytes that lives under the directory ``root``.

    ``mem_budget_bytes`` is how much memory the map may use for its own
    state (buffered writes, indexes, caches).
    """

    def __init__(self, root: Path, *, mem_budget_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.mem_budget_bytes = mem_budget_bytes
        self._segments: list[_Segment] | None = None
        self._mem: dict[bytes, bytes | None] = {}
        self._mem_bytes = 0
        self._wal = None
        self._replay_wal()

    # -- memtable and WAL ------------------------------------------------
    def _replay_wal(self) -> None:
        wal = self.root / "wal.log"
        if wal.exists():
            with open(wal, "rb") as f:
                for line in f:
                    if not line.endswith(b"\n"):
                        break           # torn last write
                    key, val = _parse_record(line)
                    self._apply(key, val)

    def _apply(self, key: bytes, val) -> None:
        old = self._mem.get(key, b"")
        self._mem_bytes -= len(old or b"")
        self._mem[key] = val
        self._mem_bytes += len(key) + len(val or b"") + 80

    def _log(self, key: bytes, val) -> None:
        if self._wal is None:
            self._wal = open(self.root / "wal.log", "ab")
        self._wal.write(_record(key, val))
        self._wal.flush()

    def put(self, key: bytes, value: bytes) -> None:
        key, value = bytes(key), bytes(value)
        self._log(key, value)
        self._apply(key, value)
        if self._mem_bytes > self.mem_budget_bytes // 3:
            self.flush()

    def delete(self, key: bytes) -> None:
        key = bytes(key)
        self._log(key, None)
        self._apply(key, None)
        if self._mem_bytes > self.mem_budget_bytes // 3:
            self.flush()

    # -- segments ---------------------------------------------------------
    def _segs(self) -> list[_Segment]:
        if self._segments is None:
            manifest = self.root / "MANIFEST"
            names = manifest.read_text().split() if manifest.exists() else []
            self._segments = [_Segment(self.root, n) for n in names]
        return self._segments

    def _write_manifest(self) -> None:
        tmp = self.root / "MANIFEST.tmp"
        tmp.write_text("".join(s.name + "\n" for s in self._segs()))
        os.replace(tmp, self.root / "MANIFEST")

    def _new_name(self) -> str:
        segs = self._segs()
        return f"{int(segs[-1].name) + 1:08d}" if segs else "00000001"

    def _write_segment(self, items) -> _Segment | None:
        """Write sorted (key hex, record line) items as a new segment."""
        seg = _Segment(self.root, self._new_name())
        n = 0
        with open(seg.dat, "wb") as fd, open(seg.idx, "wb") as fi:
            off = 0
            for khex, rec in items:         # (key hex, record line), sorted
                fd.write(rec)
                fi.write(b"%s %d\n" % (khex, off))
                off += len(rec)
                n += 1
        if n == 0:
            seg.remove()
            return None
        return seg

    def flush(self) -> None:
        if self._mem:
            seg = self._write_segment(
                (k.hex().encode(), _record(k, v)) for k, v in sorted(self._mem.items()))
            if seg is not None:
                self._segs().append(seg)
                self._write_manifest()
            self._mem = {}
            self._mem_bytes = 0
            if len(self._segs()) > 6:
                self._compact()
        if self._wal is not None:
            self._wal.close()
            self._wal = None
        wal = self.root / "wal.log"
        if wal.exists():
            wal.unlink()

    def _compact(self) -> None:
        segs = self._segs()
        # tiered: merge the small segments together; merge everything (and
        # drop tombstones) once the small ones reach half the oldest's size
        size = lambda s: s.dat.stat().st_size
        whole = sum(size(s) for s in segs[1:]) * 2 >= size(segs[0])
        old = segs[:] if whole else segs[1:]
        # hex text sorts like the bytes, so merge on the key hex directly
        streams = [((k, age, line) for k, line in s.lines()) for age, s in enumerate(reversed(old))]

        def merged():
            last = None
            for khex, _age, line in heapq.merge(*streams, key=lambda t: (t[0], t[1])):
                if khex != last:
                    last = khex
                    if not whole or line[8:16] != b"ffffffff":
                        yield khex, line

        seg = self._write_segment(merged())
        self._segments = ([] if whole else segs[:1]) + ([seg] if seg is not None else [])
        self._write_manifest()
        for s in old:
            s.remove()

    def get(self, key: bytes) -> bytes | None:
        key = bytes(key)
        if key in self._mem:
            return self._mem[key]
        for seg in reversed(self._segs()):
            found, val = seg.find(key)
            if found:
                return val
        return None

    def drop_cache(self) -> None:
        self.flush()
        self._mem = {}
        self._mem_bytes = 0
        for seg in self._segments or []:
            seg.close()
        self._segments = None

    def close(self) -> None:
        self.drop_cache()
