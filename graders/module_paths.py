"""module_paths.py prints, as JSON, the files and directories that hold
the modules named in argv[1:] (and their bytecode), as this Python
finds them: what a probe must not see. Modules built into the
interpreter have no file and are left out.
"""

import importlib.util, json, os, sys
out = []
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        continue
    if spec.submodule_search_locations:
        out += [p for p in spec.submodule_search_locations if os.path.isdir(p)]
    elif spec.origin and os.path.isfile(spec.origin):
        out.append(spec.origin)
        if spec.origin.endswith(".py"):
            pyc = importlib.util.cache_from_source(spec.origin)
            for p in [pyc] + [pyc.replace(".pyc", ".opt-%d.pyc" % i) for i in (1, 2)]:
                if os.path.isfile(p):
                    out.append(p)
print(json.dumps(sorted(set(out))))
