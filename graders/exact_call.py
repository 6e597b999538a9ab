"""Calls one function of the workspace for kind exact (graders/exact.go).

    python3 -c "$(this file)" MODULE FUNCTION  < NONCE

runs in the agent's world, the workspace as the working directory. The
nonce comes on stdin and is read before the agent's code is imported; the
result is one line, "BENCH-RESULT " and JSON {"nonce", "stage", "error",
"type", "repr", "value"}, value being the decimal text of an exact int,
else "". What the code under test prints goes to stderr.
"""

import importlib
import json
import os
import sys

mod, fn = sys.argv[1:3]
nonce = sys.stdin.readline().strip()
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
res = {"nonce": nonce, "stage": "import", "error": "", "type": "", "repr": "", "value": ""}
try:
    m = importlib.import_module(mod)
    res["stage"] = "call"
    v = getattr(m, fn)()
    res["stage"] = "done"
    res["type"] = type(v).__module__ + "." + type(v).__qualname__
    res["repr"] = repr(v)[:200]
    if type(v) is int:
        res["value"] = str(v)
except BaseException as e:
    res["error"] = (type(e).__name__ + ": " + str(e))[:500]
out.write("BENCH-RESULT " + json.dumps(res) + "\n")
out.flush()
