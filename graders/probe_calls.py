"""The calls probe: runs seeded checks on a module and prints what it did.

Run by the grader (graders/checks.go) as

    python3 -c "$(this file)" < CASES.json

in the agent's world (the workspace at /workspace, its working
directory, the agent's uid, host name and environment), once with the
bundle's solution and once with the agent's workspace. It never decides anything: it prints one
JSON line of outcomes, and the judge (Go, outside this process) compares
the two runs. pytest is never imported here.

CASES.json (on stdin) is {"module": "src.counter", "cases": [[step, ...], ...]}.
Each case starts with no object; its steps are

    ["fn", "function", [args...]]        call a function of the module
    ["modfn", "pkg.mod", "function", [args...]]
                                         call a function of another module, after
                                         the module under test was imported (a
                                         sibling it must leave as it was)
    ["new", "Class", [args...]]          make an object: the case's current one
    ["use", i]                           make the case's i-th object (0 the
                                         first made) the current one again
    ["call", "method", [args...]]        call a method of the object
    ["get", "attr"]                      read an attribute
    ["set", "attr", value]               assign an attribute
    ["repeat", n, "method", [args...]]   call a method n times

Arguments and values are JSON, with bytes as {"$bytes": hex} and dicts
as {"$dict": [[key, value], ...]} (keys of any type, order kept); see
encode. Each step's outcome is {"value": v} ({"last": v, "digest": hex} for
repeat, the digest being sha256 over every value, each as line() writes
it), or
{"raised": "ValueError"} (the class as builtin_name coarsens it). A case
stops at its first exception.
"""

import hashlib
import importlib
import json
import os
import sys


def encode(v):
    """A value as JSON the judge can compare exactly: bytes as
    {"$bytes": hex}, a dict as {"$dict": [[key, value], ...]} in its
    order, tuples as lists; any other object by its type's name only."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v if abs(v) < 2**53 else {"$int": str(v)}
    if isinstance(v, float):
        return {"$float": repr(v)}
    if isinstance(v, (bytes, bytearray)):
        return {"$bytes": bytes(v).hex()}
    if isinstance(v, dict):
        return {"$dict": [[encode(k), encode(x)] for k, x in v.items()]}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    return {"repr": type(v).__name__}


def line(v):
    """One value of a repeat as the digest takes it: its JSON and a
    newline (a plain int's decimal text, quickly)."""
    if type(v) is int:
        return "%d\n" % v
    return json.dumps(encode(v)) + "\n"


def decode(v):
    """The inverse of encode, for the arguments the cases give."""
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        if "$bytes" in v:
            return bytes.fromhex(v["$bytes"])
        if "$dict" in v:
            return {decode(k): decode(x) for k, x in v["$dict"]}
        raise ValueError("unknown argument form")
    return v


# The classes an outcome names: what a specification can ask a caller to
# catch. A subclass counts as the first of these it derives from, so a
# UnicodeDecodeError is a ValueError and a codec's own ValueError subclass
# is too, however the code under test names it.
COARSE = ("TypeError", "ValueError", "AttributeError", "KeyError", "IndexError",
          "ArithmeticError", "ImportError", "OSError", "RuntimeError")


def builtin_name(cls):
    names = {c.__name__ for c in cls.__mro__ if c.__module__ == "builtins"}
    for name in COARSE:
        if name in names:
            return name
    return "Exception"


def step(objs, obj, s):
    """One step of a case on its current object obj (None before the
    first "new"); objs are the case's objects in the order made."""
    op = s[0]
    if op == "fn":
        return obj, {"value": encode(getattr(MODULE, s[1])(*decode(s[2])))}
    if op == "modfn":
        mod = importlib.import_module(s[1])
        return obj, {"value": encode(getattr(mod, s[2])(*decode(s[3])))}
    if op == "new":
        cls = getattr(MODULE, s[1])
        objs.append(cls(*decode(s[2])))
        return objs[-1], {"value": None}
    if op == "use":
        return objs[s[1]], {"value": None}
    if obj is None:
        raise RuntimeError("no object")
    if op == "call":
        return obj, {"value": encode(getattr(obj, s[1])(*decode(s[2])))}
    if op == "get":
        return obj, {"value": encode(getattr(obj, s[1]))}
    if op == "set":
        setattr(obj, s[1], decode(s[2]))
        return obj, {"value": None}
    if op == "repeat":
        fn, args = getattr(obj, s[2]), decode(s[3])
        h, last, chunk = hashlib.sha256(), None, []
        for _ in range(s[1]):
            last = fn(*args)
            chunk.append(line(last))
            if len(chunk) >= 4096:
                h.update("".join(chunk).encode())
                chunk = []
        h.update("".join(chunk).encode())
        return obj, {"last": encode(last) if s[1] else None, "digest": h.hexdigest()}
    raise ValueError("unknown step " + repr(op))


def main():
    global MODULE
    spec = json.load(sys.stdin)
    # The code under test reads no cases: stdin becomes /dev/null. What
    # it prints must not mix with the outcomes: they go to a descriptor
    # of their own, and stdout becomes stderr. The working directory is
    # the workspace, first on sys.path as for "python3 -c".
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        MODULE = importlib.import_module(spec["module"])
    except BaseException as e:  # the module is under test: anything may fail
        out.write(json.dumps({"import_error": type(e).__name__}) + "\n")
        out.flush()
        return
    results = []
    for case in spec["cases"]:
        objs, obj, got = [], None, []
        for s in case:
            try:
                obj, r = step(objs, obj, s)
            except Exception as e:
                got.append({"raised": builtin_name(type(e))})
                break
            got.append(r)
        results.append(got)
    out.write(json.dumps({"results": results}) + "\n")
    out.flush()


MODULE = None
main()
