"""The map probe of RT-04: serves kv.tiny_map.TinyMap to the judge.

Run by the workload grader (graders/workload.go) from a scratch copy of
the workspace, with the workspace as the working directory:

    /usr/bin/python3 -c "$(this file)"

with "ROOT BUDGET [--baseline] [--forbid=a,b]" as the first line of its
input, in the agent's world, once per segment of the workload: every open after
the first is in a fresh process on the same ROOT.

It reads requests from standard input (a pipe the judge feeds) and
writes one response per request to standard output. It decides nothing:
the judge (Go, outside this process) chose the operations and holds the
model they are checked against. Integers are big-endian.

    request                                  response
    O                      open TinyMap(ROOT, mem_budget_bytes=BUDGET)
    P u16 n, key, u32 m, value   put          k
    D u16 n, key                 delete       k
    G u16 n, key, 16 challenge   get          v + sha256(challenge + value),
                                              n (None), t (not bytes)
    F / X / C                    flush / drop_cache / close     k
    Q                            quit         q

Any call may answer e, u8 n, and the name of the built-in exception
class it raised. A get answers with a digest, not the value: the
challenge is new for each get, so only code that has the value at hand
can answer, while the pipe carries little back.

With --baseline the agent's code is not imported: the same stream runs
against a map that keeps nothing, so the judge learns what the
interpreter and this server cost in the same grading.
"""

import hashlib
import importlib.abc
import os
import struct
import sys

COARSE = ("TypeError", "ValueError", "KeyError", "OSError", "RuntimeError")


def coarse(e):
    names = {c.__name__ for c in type(e).__mro__}
    for n in COARSE:
        if n in names:
            return n
    return "Exception"


def error(e):
    name = coarse(e).encode()
    return b"e" + bytes([len(name)]) + name


class NullMap:
    """The baseline's map: keeps nothing."""

    def __init__(self, root, mem_budget_bytes):
        pass

    def put(self, key, value):
        pass

    def delete(self, key):
        pass

    def get(self, key):
        return None

    def flush(self):
        pass

    def drop_cache(self):
        pass

    def close(self):
        pass


class Refuse(importlib.abc.MetaPathFinder):
    """Refuses the modules the task forbids. The judge hides their files
    from the probe as well; this hook is what remains where it cannot."""

    def __init__(self, names):
        self.names = set(names)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ImportError("module %r is not allowed in this task" % fullname)
        return None


def main():
    # The requests and responses get descriptors of their own; the code
    # under test sees /dev/null as stdin and stderr as stdout. The first
    # line of the input is the arguments, so that none is in sys.argv.
    inp = os.fdopen(os.dup(0), "rb")
    args = inp.readline().decode().split()
    root, budget = args[0], int(args[1])
    baseline = "--baseline" in args[2:]
    for a in args[2:]:
        if a.startswith("--forbid="):
            sys.meta_path.insert(0, Refuse(n for n in a[len("--forbid="):].split(",") if n))
    out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if baseline:
        TinyMap = NullMap
    else:
        sys.path.insert(0, os.getcwd())
        try:
            from kv.tiny_map import TinyMap
        except Exception as e:
            out.write(error(e))
            out.flush()
            return

    def take(n):
        b = inp.read(n)
        if len(b) != n:
            raise EOFError
        return b

    def key():
        (n,) = struct.unpack(">H", take(2))
        return take(n)

    m = None
    served = 0
    while True:
        try:
            op = take(1)
            if op == b"Q":
                out.write(b"q")
                break
            # A request is read whole before the map is called, so an
            # exception of the map never leaves the stream out of step.
            if op == b"P":
                k = key()
                (n,) = struct.unpack(">I", take(4))
                args = (k, take(n))
            elif op in (b"D",):
                args = (key(),)
            elif op == b"G":
                args = (key(), take(16))
            elif op in (b"O", b"F", b"X", b"C"):
                args = ()
            else:
                raise SystemExit("map_server: unknown request %r" % op)
        except EOFError:
            break
        try:
            if op == b"O":
                m = TinyMap(root, mem_budget_bytes=budget)
                r = b"k"
            elif op == b"P":
                m.put(*args)
                r = b"k"
            elif op == b"D":
                m.delete(*args)
                r = b"k"
            elif op == b"G":
                got = m.get(args[0])
                if got is None:
                    r = b"n"
                elif isinstance(got, (bytes, bytearray, memoryview)):
                    r = b"v" + hashlib.sha256(args[1] + bytes(got)).digest()
                else:
                    r = b"t"
            elif op == b"F":
                m.flush()
                r = b"k"
            elif op == b"X":
                m.drop_cache()
                r = b"k"
            else:
                m.close()
                r = b"k"
        except Exception as e:
            r = error(e)
        out.write(r)
        served += 1
        if served % 256 == 0:
            out.flush()
    out.flush()


main()
