"""Correctness workload for kv.tiny_map.TinyMap.

Run by the `workload` grader from a scratch copy of the workspace, with the
workspace as the working directory:

    /usr/bin/python3 -I workload.py --nonce-file F --root DIR --forbid sqlite3,dbm,shelve [--baseline]

F holds a nonce; the driver reads it and removes the file before it
loads the workspace's code. DIR (an empty directory; a new temporary one
when absent) is the map's root. The result is one line on stdout,
"BENCH-RESULT " followed by JSON with the nonce, ok, code, message,
forbidden (the forbidden modules the code tried to import) and stats.
With --baseline the script imports what it imports in a real run, installs
its import guard, reports and exits, without loading the workspace's code:
the grader uses that run's peak RSS as the interpreter's baseline.

The workload is deterministic. About 2,000 keys are live at any time; values
are 2-10 KiB of random (incompressible) bytes, so the live data is about
12 MiB and a map that keeps its values in memory breaks the grader's memory
cap. The driver never holds the values either: its model maps each key to
a version, and a value is regenerated from (key, version) when checked.
Phases: load, mixed puts/deletes/gets, drop_cache, checked reads from disk,
more mixed operations, close, reopen on the same root, a full check of
every key, more operations on the reopened map, close. In all: 3,560 puts,
470 deletes, 4,280 checked reads, 1,903 live keys (11.9 MB) at the end.

Measured on a 2-core development host: the baseline peaks at ~16.5 MiB
RSS; the reference solution at +1.5-1.9 MiB, in 0.9-2.0 s of wall (about
0.55 s of CPU); a map that keeps its values in a dict at +14.6 MiB; one
that scans every segment on each read needs ~24 s of CPU.
"""

import hashlib
import json
import os
import random
import resource
import sys
import tempfile
import time
from importlib.abc import MetaPathFinder

BUDGET = 256 * 1024
SEED = 20260404
UNIVERSE = 2600  # distinct keys the workload ever uses
ABSENT = 200  # keys that are never written
INITIAL = 2300  # keys loaded in the first phase
ALWAYS = ("_sqlite3", "_dbm", "_gdbm")  # C halves of the forbidden modules


class Guard(MetaPathFinder):
    """Refuses the forbidden modules and records every attempt."""

    def __init__(self, names):
        self.names = set(names)
        self.tried = []

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".")[0]
        if top in self.names:
            if top not in self.tried:
                self.tried.append(top)
            raise ImportError(f"module {top!r} is not allowed in this task")
        return None


class Pool:
    """A set of keys with O(1) add, remove and random choice."""

    def __init__(self):
        self.items = []
        self.pos = {}

    def add(self, k):
        if k not in self.pos:
            self.pos[k] = len(self.items)
            self.items.append(k)

    def discard(self, k):
        i = self.pos.pop(k, None)
        if i is not None:
            last = self.items.pop()
            if i < len(self.items):
                self.items[i] = last
                self.pos[last] = i

    def __len__(self):
        return len(self.items)


class Failure(Exception):
    """The map did something wrong; the message says what."""


def value_of(key, version):
    """The value of key at version: 2-10 KiB of bytes that do not compress."""
    if version == -1:
        return b""  # the empty value is a value, not a delete
    seed = key + b"/%d" % version
    n = 2048 + int.from_bytes(hashlib.sha256(seed).digest()[:4], "big") % 8192
    return hashlib.shake_256(seed).digest(n)


def describe(v):
    if v is None:
        return "None"
    if not isinstance(v, (bytes, bytearray, memoryview)):
        return f"a {type(v).__name__}"
    return f"{len(v)} bytes"


class Workload:
    def __init__(self, TinyMap, root):
        self.TinyMap = TinyMap
        self.root = root
        self.rng = random.Random(SEED)
        keys = set()
        while len(keys) < UNIVERSE + ABSENT:
            n = self.rng.randrange(6, 24)
            keys.add(b"k" + self.rng.randbytes(n).hex().encode()[:n])
        keys = sorted(keys)
        self.rng.shuffle(keys)
        self.keys = keys[:UNIVERSE]
        self.absent = keys[UNIVERSE:]
        self.model = {}  # key -> version; a deleted key maps to None
        self.live = Pool()
        self.dead = Pool()
        self.version = 0
        self.ops = {"put": 0, "delete": 0, "get": 0}
        self.phase = "open"
        self.m = self.call("TinyMap()", lambda: TinyMap(root, mem_budget_bytes=BUDGET))

    def call(self, what, fn):
        try:
            return fn()
        except Failure:
            raise
        except Exception as e:  # the map's own error
            raise Failure(f"{self.phase}: {what} raised {type(e).__name__}: {e}") from None

    def put(self, key, version=None):
        if version is None:
            self.version += 1
            version = self.version
        v = value_of(key, version)
        self.call("put", lambda: self.m.put(key, v))
        self.model[key] = version
        self.live.add(key)
        self.dead.discard(key)
        self.ops["put"] += 1

    def delete(self, key):
        self.call("delete", lambda: self.m.delete(key))
        self.model[key] = None
        self.live.discard(key)
        self.dead.add(key)
        self.ops["delete"] += 1

    def check(self, key):
        got = self.call("get", lambda: self.m.get(key))
        self.ops["get"] += 1
        version = self.model.get(key)
        want = None if version is None else value_of(key, version)
        if want is None:
            if got is not None:
                state = "deleted" if key in self.model else "never written"
                raise Failure(f"{self.phase}: get({key!r}) of a key that was {state} returned {describe(got)}, want None")
            return
        if got is None or not isinstance(got, (bytes, bytearray, memoryview)) or bytes(got) != want:
            detail = describe(got)
            if isinstance(got, (bytes, bytearray, memoryview)) and len(got) == len(want):
                detail += " with the wrong content"
            raise Failure(f"{self.phase}: get({key!r}) returned {detail}, want its last value ({len(want)} bytes)")

    def sample(self):
        """A key to read: mostly live, some deleted, some never written."""
        x = self.rng.random()
        pool = self.live.items if x < 0.7 else self.dead.items if x < 0.85 else self.absent
        return self.rng.choice(pool or self.absent)

    def mixed(self, n):
        for _ in range(n):
            x = self.rng.random()
            if x < 0.40 and self.live:
                self.put(self.rng.choice(self.live.items))
            elif x < 0.60 and self.live:
                self.delete(self.rng.choice(self.live.items))
            elif x < 0.75:
                self.put(self.rng.choice(self.keys))
            else:
                self.check(self.sample())

    def run(self):
        t0 = time.monotonic()
        timings = {}

        self.phase = "load"
        for k in self.keys[:INITIAL]:
            self.put(k)
        self.put(self.keys[INITIAL], version=-1)  # an empty value
        self.delete(self.keys[INITIAL + 1])  # deleting a key that never existed
        timings["load"] = time.monotonic() - t0

        self.phase = "mixed operations"
        self.mixed(1200)
        # A key deleted while its older value sits on disk, and a key put
        # again after a delete.
        k1, k2 = self.keys[0], self.keys[1]
        self.delete(k1)
        self.delete(k2)
        self.put(k2)
        self.check(k1)
        self.check(k2)

        self.phase = "reads after drop_cache"
        self.call("drop_cache", self.m.drop_cache)
        for _ in range(600):
            self.check(self.sample())
        self.check(k1)
        self.check(k2)
        self.check(self.keys[INITIAL])
        timings["until drop_cache checks"] = time.monotonic() - t0

        self.phase = "mixed operations after drop_cache"
        self.mixed(600)
        self.call("flush", self.m.flush)
        self.mixed(200)

        self.phase = "close"
        self.call("close", self.m.close)

        self.phase = "reads after reopen"
        self.m = self.call("TinyMap() on the same root", lambda: self.TinyMap(self.root, mem_budget_bytes=BUDGET))
        for k in self.keys + self.absent:
            self.check(k)
        timings["until reopen checks"] = time.monotonic() - t0

        self.phase = "operations after reopen"
        self.mixed(300)
        self.call("drop_cache", self.m.drop_cache)
        for _ in range(300):
            self.check(self.sample())
        self.call("close", self.m.close)
        timings["total"] = time.monotonic() - t0
        return {
            "ops": self.ops,
            "live_keys": len(self.live),
            "live_bytes": sum(len(value_of(k, v)) for k, v in self.model.items() if v is not None),
            "seconds": {k: round(v, 3) for k, v in timings.items()},
        }


def main():
    argv = sys.argv[1:]
    baseline = "--baseline" in argv
    forbid = []
    if "--forbid" in argv:
        forbid = [n for n in argv[argv.index("--forbid") + 1].split(",") if n]
    nonce = ""
    if "--nonce-file" in argv:
        path = argv[argv.index("--nonce-file") + 1]
        with open(path, encoding="utf-8") as f:
            nonce = f.read().strip()
        os.unlink(path)
    out = os.fdopen(os.dup(1), "w")  # results go here; the map's prints go to stderr
    os.dup2(2, 1)
    guard = Guard(list(forbid) + list(ALWAYS) if forbid else [])
    sys.meta_path.insert(0, guard)

    result = {"nonce": nonce, "ok": True, "code": "", "message": "", "forbidden": [], "stats": {}}
    if not baseline:
        sys.path.insert(0, os.getcwd())
        if "--root" in argv:
            root = argv[argv.index("--root") + 1]
        else:
            root = tempfile.mkdtemp(prefix="tinymap-")
        try:
            try:
                from kv.tiny_map import TinyMap
            except Exception as e:
                raise Failure(f"importing kv.tiny_map raised {type(e).__name__}: {e}") from None
            result["stats"] = Workload(TinyMap, root).run()
        except Failure as e:
            result.update(ok=False, code="workload_wrong", message=str(e))
        seen = [n for n in guard.names if n in sys.modules]
        result["forbidden"] = sorted(set(guard.tried) | set(seen))
    result["stats"]["self_maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out.write("BENCH-RESULT " + json.dumps(result) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
